"""Run the clarifier on the dialog (shared by `pre_check` and `post_check`), from sync or async code."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from askbetter.clarifier.types import Clarifier, Decision, Document
from askbetter.nodes.awaiting import acall
from askbetter.nodes.messages import to_dialog


def run_check(
    clarifier: Clarifier,
    messages: Sequence[BaseMessage],
    documents: list[Document] | None,
    threshold: float | None,
) -> dict[str, Any]:
    """The clarifier's decision as a dict.

    With `threshold` set (a run setting), the decision is re-read from the score
    (`score >= threshold`) instead of the clarifier's own threshold. When that makes it ask and the
    clarifier gave no question, the question comes from the clarifier's optional
    `question(messages, documents)` method (`LocalClarifier` has one); without it, none is asked.
    When it makes it clear, the clarifier's question is dropped (a decision has one only when it asks).
    """
    dialog = to_dialog(messages)
    decision = _reread(_plain(clarifier.check(dialog, documents), clarifier), threshold)
    if _wants_question(clarifier, decision):
        decision["question"] = clarifier.question(dialog, documents)  # type: ignore[attr-defined]
    return decision


async def arun_check(
    clarifier: Clarifier,
    messages: Sequence[BaseMessage],
    documents: list[Document] | None,
    threshold: float | None,
) -> dict[str, Any]:
    """`run_check` for async runs: the clarifier's `acheck` and `aquestion` where it has them
    (`LocalClarifier` does: a cancelled run halts its question's generation), else its `check` and
    `question` in an executor thread, as LangGraph runs a sync node."""
    dialog = to_dialog(messages)
    decision = _reread(_plain(await acall(clarifier, "check", dialog, documents), clarifier), threshold)
    if _wants_question(clarifier, decision):
        decision["question"] = await acall(clarifier, "question", dialog, documents)
    return decision


def _plain(checked: object, clarifier: Clarifier) -> dict[str, Any]:
    """The clarifier's `Decision` as a dict of plain values (`Decision.to_dict`); anything else
    than a `Decision` raises TypeError naming what came back."""
    if not isinstance(checked, Decision):
        raise TypeError(f"{type(clarifier).__name__}.check returned {type(checked).__name__} "
                        f"{str(checked)[:80]!r}, not an askbetter Decision")
    return checked.to_dict()


def _reread(decision: dict[str, Any], threshold: float | None) -> dict[str, Any]:
    """The decision, re-read from its score at `threshold` when one is set (`run_check`)."""
    if threshold is None:
        return decision
    decision["needs_clarification"] = decision["score"] >= threshold
    if not decision["needs_clarification"]:
        decision["question"] = None
    return decision


def _wants_question(clarifier: Clarifier, decision: Mapping[str, Any]) -> bool:
    """A re-read decision asks without a question, and the clarifier can generate one."""
    return bool(decision["needs_clarification"] and not decision["question"]
                and callable(getattr(clarifier, "question", None)))


def passages_as_documents(passages: Sequence[Mapping[str, Any]]) -> list[Document]:
    """Retrieved passages as the clarifier's documents (id, title, text)."""
    documents: list[Document] = []
    for p in passages:
        doc = Document(id=str(p.get("id", "")), text=str(p.get("text", "")))
        if p.get("title"):
            doc["title"] = str(p["title"])
        documents.append(doc)
    return documents
