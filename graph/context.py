"""Run settings passed at invoke time: `graph.invoke(inputs, config, context={"ask_mode": "message"})`.

Every key is optional; a missing key, or one set to None, takes its value from the `Settings` the
graph was built with (`Settings.from_env()` by default). LangGraph does not keep the context
across calls: pass the same context again when resuming with `Command(resume=...)`, or the defaults
apply.

Keys that are no run setting are left alone: a parent graph that runs this one as a subgraph passes
its own context down (a dataclass or pydantic one is read by its fields), and a LangGraph server
mirrors `configurable` into it. A key that is a run setting written otherwise (`ask-mode`, `topK`)
is an error; one a letter off (`treshold`, `topq`, but also a parent's `task_mode`; not `top_p`) a
warning.
"""

from __future__ import annotations

import difflib
import re
import warnings
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from functools import cache
from types import UnionType
from typing import Any, Literal, Union, cast, get_args, get_origin, get_type_hints

from pydantic import BaseModel
from typing_extensions import TypedDict  # pydantic (LangGraph's JSON schemas) needs it before Python 3.12

from askbetter.settings import RUN_SETTINGS, AskMode, Settings, check_run_settings


# squashed keys a letter off a run setting that are settings of their own, passed down by a parent
# graph: nucleus sampling's `top_p`
_NOT_TYPOS = frozenset({"topp"})


class Context(TypedDict, total=False):
    """The run settings a caller may pass as `context=`; each key optional (see the module)."""

    pre_check: bool  # run the clarifier before retrieval
    post_check: bool  # run the clarifier after retrieval, with the passages
    threshold: float | None  # ask when score >= threshold (None there: the clarifier's own)
    top_k: int  # passages retrieved, 1 to MAX_TOP_K
    ask_mode: AskMode  # "interrupt": pause with interrupt(); "message": end the turn with the question
    max_rounds: int  # clarification questions per user turn; past it the graph answers


def default_context(settings: Settings) -> Context:
    return cast(Context, {name: getattr(settings, name) for name in RUN_SETTINGS})


def resolve_context(context: Mapping[str, Any] | None, defaults: Context) -> Context:
    """`context` over `defaults`, validated; a run setting written otherwise or a bad value raises
    ValueError, a value of the wrong type, or a context that is not a mapping, TypeError. Other keys
    are ignored (with a warning when one is a letter off a run setting)."""
    given = dict(_as_mapping(context))
    known = {_squash(name): name for name in Context.__annotations__}
    for key in sorted(set(given) - set(Context.__annotations__), key=str):
        squashed = _squash(str(key))
        if squashed in known:  # the same up to case and separators: `ask-mode`, `topK`
            raise ValueError(
                f"unknown context key {key!r}: did you mean {known[squashed]!r}? (run settings: "
                f"{sorted(Context.__annotations__)})"
            )
        # a letter off (`treshold`, `topq`), or a key of a parent graph's own (`task_mode`)
        close = difflib.get_close_matches(squashed, known, n=1, cutoff=0.85) or [
            name for name in known if _one_edit_apart(squashed, name)]
        if close and squashed not in _NOT_TYPOS:
            warnings.warn(f"context key {key!r} is no run setting and is ignored; did you mean "
                          f"{known[close[0]]!r}?", stacklevel=2)
    given = {key: given[key] for key in Context.__annotations__ if given.get(key) is not None}
    for key, value in given.items():
        _check_type(key, value)
    merged = cast(Context, {**defaults, **given})
    check_run_settings(merged, lambda name: f"context key {name!r}")
    return merged


def _as_mapping(context: object) -> Mapping[str, Any]:
    """A mapping as it is; a parent graph's dataclass or pydantic context by its fields (LangGraph
    hands a subgraph its parent's context object). A `Settings` is refused: its models and paths
    cannot change per run."""
    if context is None:
        return {}
    if isinstance(context, Mapping):
        return context
    if isinstance(context, BaseModel):
        return dict(context)
    if is_dataclass(context) and not isinstance(context, type | Settings):
        return {f.name: getattr(context, f.name) for f in fields(context)}
    raise TypeError(
        f"the context must be a mapping of run settings, e.g. {{'ask_mode': 'message'}}, not "
        f"{type(context).__name__}"
    )


def _squash(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", key.lower())


def _one_edit_apart(a: str, b: str) -> bool:
    """One letter changed, added or dropped, or two neighbouring letters swapped."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    if len(a) != len(b):
        return a[i:] == b[i + 1:] or a[i + 1:] == b[i:]
    return a[i + 1:] == b[i + 1:] or (a[i + 2:] == b[i + 2:] and a[i:i + 2] == b[i + 1:i + 2] + b[i])


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
