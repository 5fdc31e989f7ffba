"""The `retrieve` node: top-k passages for the standalone query."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from askbetter.nodes.awaiting import acall
from askbetter.retrieval.types import Retriever


def retrieve(state: Mapping[str, Any], *, retriever: Retriever, top_k: int) -> dict[str, Any]:
    """The retriever's passages, its first `top_k` when it returns more; anything else (None,
    LangChain `Document`s, dicts without a str `text`) raises TypeError naming what came back,
    rather than reach the checks and the answer as empty passages."""
    return _documents(retriever.search(state["query"], k=top_k), retriever, top_k)


async def aretrieve(state: Mapping[str, Any], *, retriever: Retriever, top_k: int) -> dict[str, Any]:
    """`retrieve` for async runs: the retriever's `asearch(query, k)` where it has one (a LangChain
    retriever's `ainvoke`: an async-only vector store client works, and a cancelled run cancels
    the search), else its `search` in an executor thread, as LangGraph runs a sync node."""
    return _documents(await acall(retriever, "search", state["query"], k=top_k), retriever, top_k)


def _documents(found: object, retriever: Retriever, top_k: int) -> dict[str, Any]:
    where = f"{type(retriever).__name__}.search"
    if isinstance(found, str | Mapping) or not isinstance(found, Iterable):
        raise TypeError(f"{where} returned {type(found).__name__}, not a list of passages")
    passages = list(found)[:top_k]  # a retriever that ignores k would override the run setting
    for p in passages:
        if not isinstance(p, Mapping) or not isinstance(p.get("text"), str):
            raise TypeError(
                f"{where} returned {type(p).__name__} {str(p)[:80]!r}, not a passage: a dict with a "
                "str 'text' (and 'id', 'title', 'source', 'score' where it has them)"
            )
    return {"documents": [dict(p) for p in passages]}
