"""A LangChain retriever (`vectorstore.as_retriever()`, any `BaseRetriever`, or a runnable returning
`Document`s) as askbetter's `Retriever`: what `create_clarifying_rag` wraps one in.

It is called with `invoke(query)` (`ainvoke` in async runs) inside the graph's `retrieve` node, so
it runs with the node's config: a LangSmith trace shows the retrieval as the node's child run, and
the run's callbacks, tags and `configurable` reach it. The retriever returns as many documents as
its own settings say (`search_kwargs={"k": ...}`, 4 by default for a vector store's); the run's
`top_k` keeps the first `top_k` of them, so its own k should be at least `top_k`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any, TypeGuard

import numpy as np
from langchain_core.documents import Document
from langchain_core.runnables import Runnable

from askbetter.retrieval.types import Passage

# metadata keys where retrievers put a relevance score (LangChain's rerankers: "relevance_score"),
# read as the passage's score when it is a number in [0, 1]; none of LangChain's vector-store
# retrievers puts one there
SCORE_KEYS = ("score", "relevance_score")


class LangChainRetriever:
    """A LangChain retriever as a `Retriever`: its documents as passages (`to_passage`)."""

    def __init__(self, retriever: Runnable[str, list[Document]]) -> None:
        if not isinstance(retriever, Runnable):  # else an AttributeError on `invoke` at the first turn
            raise TypeError(f"LangChainRetriever wraps a LangChain retriever or runnable, not {type(retriever).__name__} "
                            "(an askbetter Retriever goes to create_clarifying_rag as it is)")
        self.retriever = retriever

    def search(self, query: str, k: int = 4) -> list[Passage]:
        """The retriever's first `k` documents for `query`, as passages."""
        return self._passages(self.retriever.invoke(query), k)

    async def asearch(self, query: str, k: int = 4) -> list[Passage]:
        """`search` for async runs: the retriever's `ainvoke` (a vector store's async client where
        it has one; LangChain's default runs the sync search in an executor thread)."""
        return self._passages(await self.retriever.ainvoke(query), k)

    def _passages(self, found: object, k: int) -> list[Passage]:
        if not isinstance(found, list):
            raise TypeError(f"{self._name()} returned {type(found).__name__}, not a list of LangChain Documents")
        for document in found[:k]:
            if not isinstance(document, Document):
                raise TypeError(f"{self._name()} returned {type(document).__name__} "
                                f"{str(document)[:80]!r}, not a LangChain Document")
        return [to_passage(document) for document in found[:k]]

    def _name(self) -> str:
        return f"the LangChain retriever {self.retriever.get_name()}"


def to_passage(document: Document) -> Passage:
    """`document` as a passage: `text` its `page_content`; `id` its `id`, else its metadata's "id";
    `title` and `source` its metadata's (LangChain's loaders set "source", some "title"); `score`
    a metadata "score" or "relevance_score" in [0, 1] (left out where there is none); `metadata`
    the rest, made JSON-serialisable (`json_safe`), as the checkpointed graph state needs."""
    metadata = dict(document.metadata)
    passage: Passage = {"text": document.page_content}
    identifier = document.id if document.id is not None else metadata.pop("id", None)
    if identifier is not None:
        passage["id"] = str(identifier)
    if (title := metadata.pop("title", None)) is not None:
        passage["title"] = str(title)
    if (source := metadata.pop("source", None)) is not None:
        passage["source"] = str(source)
    for key in SCORE_KEYS:
        if _real(score := metadata.get(key)) and 0.0 <= float(score) <= 1.0:
            passage["score"] = float(metadata.pop(key))
            break
    if metadata:
        passage["metadata"] = json_safe(metadata)
    return passage


def json_safe(value: Any) -> Any:
    """`value` as JSON's types: mappings with str keys, sequences, sets and numpy arrays as lists,
    numbers and bools (numpy's too) as int, float or bool, anything else its str (a datetime, a
    path, an object), which LangGraph's checkpointers would store as their own types or refuse to
    store at all."""
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, np.bool_ | np.ndarray):  # numpy's bool is no `bool`, its array no list
        return json_safe(value.tolist())
    if isinstance(value, numbers.Integral):
        return int(value)
    if _real(value):
        return float(value)
    if isinstance(value, Mapping):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_safe(item) for item in value]
    return str(value)


def _real(value: object) -> TypeGuard[numbers.Real]:
    """A finite real number, not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
