"""The graph state: only JSON-serialisable values (messages are LangChain messages, via `add_messages`).

One *user turn* starts with a user message that is not the answer to a clarification question;
`clarification_rounds` counts the questions asked since then. A reply to a question (resumed with
`Command(resume=...)` in interrupt mode, or the next message in message mode) continues the turn.
"""

from __future__ import annotations

from typing import Annotated

from typing_extensions import TypedDict  # pydantic (LangGraph's JSON schemas) needs it before Python 3.12

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

from askbetter.retrieval.types import Passage
from askbetter.settings import AskMode


class DecisionDict(TypedDict):
    """`askbetter.clarifier.types.Decision.to_dict()`."""

    needs_clarification: bool
    score: float
    question: str | None
    stage: str  # "pre" or "post"


class RagState(TypedDict, total=False):
    """The thread's state: the dialog, and the current turn's query, passages and decisions."""

    messages: Annotated[list[AnyMessage], add_messages]
    query: str  # the last user turn made standalone ("" for an empty turn)
    documents: list[Passage]  # retrieved for `query`
    pre_decision: DecisionDict | None  # None: the check is off, or has not run in this turn
    post_decision: DecisionDict | None
    clarification_rounds: int  # questions asked in the current user turn
    asked_questions: list[str]  # every question asked in this thread, never asked twice
    awaiting_reply: bool  # the last AI message is a clarification question
    ask_mode: AskMode  # the run's `ask_mode` when the last question was asked (routes after it)


class InputState(TypedDict):
    """What a caller passes to start a turn: `{"messages": [("user", "...")]}`."""

    messages: Annotated[list[AnyMessage], add_messages]
