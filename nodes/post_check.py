"""The `post_check` node: do the retrieved passages support several readings of the last turn?
(`apost_check` for async runs: see `arun_check`.)

With no passages there is nothing to check (the decision stays None, read as clear)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from askbetter.clarifier.types import Clarifier
from askbetter.nodes.decisions import arun_check, passages_as_documents, run_check


def post_check(state: Mapping[str, Any], *, clarifier: Clarifier, threshold: float | None) -> dict[str, Any]:
    documents = passages_as_documents(state.get("documents", []))
    decision = run_check(clarifier, state.get("messages", []), documents, threshold) if documents else None
    return {"post_decision": decision}


async def apost_check(state: Mapping[str, Any], *, clarifier: Clarifier, threshold: float | None) -> dict[str, Any]:
    documents = passages_as_documents(state.get("documents", []))
    decision = await arun_check(clarifier, state.get("messages", []), documents, threshold) if documents else None
    return {"post_decision": decision}
