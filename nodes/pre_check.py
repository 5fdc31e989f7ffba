"""The `pre_check` node: is the last user turn ambiguous or ill-formed given the dialog alone?
(`apre_check` for async runs: see `arun_check`.)"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from askbetter.clarifier.types import Clarifier
from askbetter.nodes.decisions import arun_check, run_check


def pre_check(state: Mapping[str, Any], *, clarifier: Clarifier, threshold: float | None) -> dict[str, Any]:
    return {"pre_decision": run_check(clarifier, state.get("messages", []), None, threshold)}


async def apre_check(state: Mapping[str, Any], *, clarifier: Clarifier, threshold: float | None) -> dict[str, Any]:
    return {"pre_decision": await arun_check(clarifier, state.get("messages", []), None, threshold)}
