"""The `post_check` node: do the retrieved passages support several readings of the last turn?

With no passages there is nothing to check (the decision stays None, read as clear)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from askbetter.clarifier.types import Clarifier
from askbetter.nodes.decisions import passages_as_documents, run_check


def post_check(state: Mapping[str, Any], *, clarifier: Clarifier, threshold: float | None) -> dict[str, Any]:
    documents = passages_as_documents(state.get("documents", []))
    if not documents:
        return {"post_decision": None}
    return {"post_decision": run_check(clarifier, state.get("messages", []), documents, threshold)}
