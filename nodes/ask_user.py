"""The `ask_user` and `await_reply` nodes: put the clarification question to the user.

`ask_user` adds the question to the thread as an AI message (`awaiting_reply`), in either mode, so
the question is recorded before the graph waits: `message` mode ends the turn there, and the next
user message on the same thread is read as the reply. `interrupt` mode goes on to `await_reply`,
which pauses the graph with `interrupt({question, score, stage, round})`; the value the caller
resumes with (`Command(resume=reply)`, a string or a message) becomes the next user message, and
the turn goes on with the reply folded into the dialog. A new user message sent instead of the
resume is the reply too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, convert_to_messages
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


def ask_user(state: Mapping[str, Any], ask_mode: AskMode) -> dict[str, Any]:
    """Add the pending question to the thread, with the run's `ask_mode` it is asked in (the edge
    after it reads that, as `update_state` runs it without the run's context)."""
    decision = pending_decision(state)
    question: str = decision["question"]
    return {
        "messages": [AIMessage(question, response_metadata={CLARIFICATION_METADATA: dict(decision)})],
        "clarification_rounds": state.get("clarification_rounds", 0) + 1,
        "asked_questions": [*state.get("asked_questions", []), question],
        "awaiting_reply": True,
        "ask_mode": ask_mode,
    }


def await_reply(state: Mapping[str, Any]) -> dict[str, Any]:
    """Pause with the question `ask_user` just asked; the resume value is the user's reply. The
    question is read off the decision in the state, not the thread's last message: a caller may add
    messages while the thread is paused (`Command(resume=..., update=...)`, `update_state`)."""
    decision = pending_decision(state)
    reply = interrupt(
        {
            "question": decision["question"],
            "score": decision["score"],
            "stage": decision["stage"],
            "round": state["clarification_rounds"],
        }
    )
    return {"messages": [reply_message(reply)]}


def reply_message(reply: Any) -> HumanMessage:
    """The resume value as the user's message: a string as it is; a LangChain message, a
    `("user", text)` tuple or a `{"role", "content"}` dict by its content (whatever its role, it is
    the user's reply), not its repr; any other value, or one LangChain cannot read as a message (a
    tool-role dict without its `tool_call_id`), as `str(reply)`."""
    if isinstance(reply, str):
        return HumanMessage(reply)
    try:
        [message] = convert_to_messages([reply])
    except (ValueError, KeyError, TypeError, NotImplementedError):  # no message: its str, never a failure
        return HumanMessage(str(reply))
    return HumanMessage(message.content)
