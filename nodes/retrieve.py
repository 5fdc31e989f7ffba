"""The `retrieve` node: top-k passages for the standalone query."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from askbetter.retrieval.types import Retriever


def retrieve(state: Mapping[str, Any], *, retriever: Retriever, top_k: int) -> dict[str, Any]:
    passages = retriever.search(state["query"], k=top_k)
    return {"documents": [dict(p) for p in passages]}
