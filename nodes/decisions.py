"""Run the clarifier on the dialog (shared by `pre_check` and `post_check`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from askbetter.clarifier.types import Clarifier, Document
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
    checked = clarifier.check(dialog, documents)
    decision = checked.to_dict()
    if threshold is None:
        return decision
    decision["needs_clarification"] = checked.score >= threshold
    if not decision["needs_clarification"]:
        decision["question"] = None
    generate = getattr(clarifier, "question", None)
    if decision["needs_clarification"] and not decision["question"] and callable(generate):
        decision["question"] = generate(dialog, documents)
    return decision


def passages_as_documents(passages: Sequence[Mapping[str, Any]]) -> list[Document]:
    """Retrieved passages as the clarifier's documents (id, title, text)."""
    documents: list[Document] = []
    for p in passages:
        doc = Document(id=str(p.get("id", "")), text=str(p.get("text", "")))
        if p.get("title"):
            doc["title"] = str(p["title"])
        documents.append(doc)
    return documents
