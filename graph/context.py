"""Run settings passed at invoke time: `graph.invoke(inputs, config, context={"ask_mode": "message"})`.

Every key is optional; a missing key, or one set to None, takes its value from the `Settings` the
graph was built with (`Settings.from_env()` by default). LangGraph does not keep the context
across calls: pass the same context again when resuming with `Command(resume=...)`, or the defaults
apply.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from typing_extensions import TypedDict  # pydantic (LangGraph's JSON schemas) needs it before Python 3.12

from askbetter.settings import RUN_SETTINGS, AskMode, Settings, check_run_settings


class Context(TypedDict, total=False):
    """The run settings a caller may pass as `context=`; each key optional (see the module)."""

    pre_check: bool  # run the clarifier before retrieval
    post_check: bool  # run the clarifier after retrieval, with the passages
    threshold: float | None  # ask when score >= threshold (None there: the clarifier's own)
    top_k: int  # passages retrieved, 1 to MAX_TOP_K
    ask_mode: AskMode  # "interrupt": pause with interrupt(); "message": end the turn with the question
    max_rounds: int  # clarification questions per user turn; past it the graph answers


def default_context(settings: Settings) -> Context:
    return Context(**{name: getattr(settings, name) for name in RUN_SETTINGS})  # type: ignore[typeddict-item]


def resolve_context(context: Mapping[str, Any] | None, defaults: Context) -> Context:
    """`context` over `defaults`, validated; unknown keys or bad values raise ValueError, values of
    the wrong type, or a context that is not a mapping, TypeError."""
    if context is not None and not isinstance(context, Mapping):
        raise TypeError(
            f"the context must be a mapping of run settings, e.g. {{'ask_mode': 'message'}}, not "
            f"{type(context).__name__}"
        )
    given = dict(context or {})
    unknown = set(given) - set(Context.__annotations__)
    if unknown:
        raise ValueError(
            f"unknown context key(s) {sorted(unknown)}; known: {sorted(Context.__annotations__)}"
        )
    given = {key: value for key, value in given.items() if value is not None}
    for key, value in given.items():
        _check_type(key, value)
    merged = Context(**{**defaults, **given})
    check_run_settings(merged, lambda name: f"context key {name!r}")
    return merged


@cache
def accepted_types() -> dict[str, tuple[type, ...]]:
    """The types each `Context` key accepts, read off its annotation: a `Literal`'s values' types,
    `None` left out (it means "take the default"), and an int wherever a float goes."""
    accepted = {}
    for key, hint in get_type_hints(Context).items():
        kinds: list[type] = []
        for arg in get_args(hint) if get_origin(hint) in (Union, UnionType) else (hint,):
            if get_origin(arg) is Literal:
                kinds += dict.fromkeys(type(v) for v in get_args(arg))
            elif arg is not type(None):
                kinds += [arg, int] if arg is float else [arg]
        accepted[key] = tuple(kinds)
    return accepted


def _check_type(key: str, value: Any) -> None:
    """TypeError naming `key` when `value` is not of its type (a bool is no number here)."""
    kinds = accepted_types()[key]
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        expected = " or ".join(kind.__name__ for kind in kinds)
        raise TypeError(f"context key {key!r} must be {expected}, not {type(value).__name__} {value!r}")
