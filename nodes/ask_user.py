"""The `ask_user` node: put the clarification question to the user.

`interrupt` mode pauses the graph with `interrupt({question, score, stage, round})`; the value the
caller resumes with (`Command(resume=reply)`) becomes the next user message, and the turn goes on
with the reply folded into the dialog. `message` mode ends the turn with the question as an AI
message; the next user message on the same thread is read as the reply.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.types import interrupt

from askbetter.settings import AskMode

#: the question's AI message carries its decision under this `response_metadata` key
CLARIFICATION_METADATA = "askbetter_clarification"


def pending_decision(state: Mapping[str, Any]) -> dict[str, Any]:
    """The decision that routed here: the post-retrieval one if it ran in this pass, else the pre."""
    decision = state.get("post_decision") or state.get("pre_decision")
    if not decision or not decision.get("question"):
        raise ValueError("ask_user needs a decision with a question in the state")
    return decision


def ask_user(state: Mapping[str, Any], *, ask_mode: AskMode) -> dict[str, Any]:
    decision = pending_decision(state)
    question: str = decision["question"]
    round_ = state.get("clarification_rounds", 0) + 1
    asked = AIMessage(question, response_metadata={CLARIFICATION_METADATA: dict(decision)})
    updates: dict[str, Any] = {
        "clarification_rounds": round_,
        "asked_questions": [*state.get("asked_questions", []), question],
        "awaiting_reply": True,
    }
    if ask_mode == "message":
        return {**updates, "messages": [asked]}
    reply = interrupt(
        {"question": question, "score": decision["score"], "stage": decision["stage"], "round": round_}
    )
    return {**updates, "messages": [asked, HumanMessage(str(reply))]}
