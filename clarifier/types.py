"""The clarifier's data types: what it reads (messages, documents) and what it returns (a decision).

These match the example schema in the design: a message is ``{"role", "content"}``, a document is
``{"id", "title"?, "text"}``. They are plain dicts so they stay JSON-serialisable in graph state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NotRequired, Protocol, TypedDict, runtime_checkable

Stage = Literal["pre", "post"]


class Message(TypedDict):
    role: str  # "user" or "assistant"
    content: str


class Document(TypedDict):
    id: str
    text: str
    title: NotRequired[str]


def stage_of(documents: list[Document] | None) -> Stage:
    """The check a call is: "post" (after retrieval) when documents are given, else "pre"."""
    return "post" if documents else "pre"


@dataclass(frozen=True)
class Decision:
    """One clarification decision.

    `score` is the probability that the query needs clarification (1 - P(CLEAR) at the first
    answer position); `needs_clarification` is `score >= threshold`; `question` is set only when
    it asks.
    """

    needs_clarification: bool
    score: float
    question: str | None
    stage: Stage

    def to_dict(self) -> dict[str, object]:
        """The fields as plain `bool`, `float` and `str`, as a checkpointed state needs them: a
        clarifier computing with numpy gives `numpy.float32` scores and `numpy.bool_` decisions,
        which LangGraph's checkpointers refuse to store."""
        return {"needs_clarification": bool(self.needs_clarification), "score": float(self.score),
                "question": None if self.question is None else str(self.question), "stage": str(self.stage)}


@runtime_checkable
class Clarifier(Protocol):
    """Anything that decides whether the last user turn needs a clarification question.

    `check` is all the graph needs. It also uses, where a clarifier has them, `question(messages,
    documents=None) -> str` (what a run's threshold below the clarifier's own asks with) and, in
    async runs, the async `acheck` and `aquestion` (`LocalClarifier`'s halt the question's
    generation when the run is cancelled); without those, async runs call `check` and `question`
    in an executor thread."""

    def check(
        self, messages: list[Message], documents: list[Document] | None = None
    ) -> Decision:
        """`documents` None or empty: the pre-retrieval check; otherwise the post-retrieval one."""
        ...
