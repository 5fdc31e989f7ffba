"""Retrieval's data types. A passage is a Document (see `askbetter.clarifier.types`) plus a score
and metadata, as plain JSON-serialisable dicts."""

from __future__ import annotations

from typing import Any, NotRequired, Protocol, runtime_checkable

from typing_extensions import TypedDict  # pydantic (LangGraph's JSON schemas) needs it before Python 3.12


class Passage(TypedDict):
    """One retrieved chunk, as a `Retriever` returns it and the graph state keeps it. Only `text`
    is required of a custom retriever; `ChromaRetriever` sets `id` and `score` too."""

    id: NotRequired[str]  # chunk id in the collection (content-derived)
    text: str
    title: NotRequired[str]
    source: NotRequired[str]  # file path or URL the chunk came from
    score: NotRequired[float]  # similarity in [0, 1], higher is closer (1 - cosine distance, clipped)
    metadata: NotRequired[dict[str, Any]]


@runtime_checkable
class Retriever(Protocol):
    """Anything with `search(query, k)` returning up to `k` passages, best first."""

    def search(self, query: str, k: int = 4) -> list[Passage]:
        ...
