"""Run settings passed at invoke time: `graph.invoke(inputs, config, context={"ask_mode": "message"})`.

Every key is optional; a missing key takes its value from the `Settings` the graph was built with
(`Settings.from_env()` by default). LangGraph does not keep the context across calls: pass the same
context again when resuming with `Command(resume=...)`, or the defaults apply.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from askbetter.settings import AskMode, Settings


class Context(TypedDict, total=False):
    pre_check: bool  # run the clarifier before retrieval
    post_check: bool  # run the clarifier after retrieval, with the passages
    threshold: float | None  # ask when score >= threshold; None: the clarifier's own threshold
    top_k: int  # passages retrieved
    ask_mode: AskMode  # "interrupt": pause with interrupt(); "message": end the turn with the question
    max_rounds: int  # clarification questions per user turn; past it the graph answers


def default_context(settings: Settings) -> Context:
    return Context(
        pre_check=settings.pre_check,
        post_check=settings.post_check,
        threshold=settings.threshold,
        top_k=settings.top_k,
        ask_mode=settings.ask_mode,
        max_rounds=settings.max_rounds,
    )


def resolve_context(context: Mapping[str, Any] | None, defaults: Context) -> Context:
    """`context` over `defaults`, validated; unknown keys or bad values raise ValueError."""
    given = dict(context or {})
    unknown = set(given) - set(Context.__annotations__)
    if unknown:
        raise ValueError(
            f"unknown context key(s) {sorted(unknown)}; known: {sorted(Context.__annotations__)}"
        )
    merged = Context(**{**defaults, **{k: v for k, v in given.items() if v is not None}})
    if merged["ask_mode"] not in ("interrupt", "message"):
        raise ValueError(f"ask_mode must be 'interrupt' or 'message', not {merged['ask_mode']!r}")
    threshold = merged["threshold"]
    if threshold is not None and not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must lie in [0, 1], not {threshold}")
    if merged["top_k"] < 1:
        raise ValueError(f"top_k must be >= 1, not {merged['top_k']}")
    if merged["max_rounds"] < 0:
        raise ValueError(f"max_rounds must be >= 0, not {merged['max_rounds']}")
    return merged
