"""The conditional edges. Each takes the state and the resolved run context and names the next node.

A decision that needs clarification goes to `ask_user` only while the turn has rounds left
(`max_rounds`) and its question has not been asked before in the thread; otherwise the turn goes
on to retrieval or the answer. `ask_blocker` says which rule held it back. A blank reply to a
question declines it (`declined`): the turn goes on to retrieval and the answer with the query
asked about, and neither check runs again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final, Literal, cast

from langgraph.graph import END

from askbetter.graph.context import Context
from askbetter.nodes.messages import last_user_index, last_user_text

REWRITE: Final = "rewrite"
PRE_CHECK: Final = "pre_check"
RETRIEVE: Final = "retrieve"
POST_CHECK: Final = "post_check"
ASK_USER: Final = "ask_user"
AWAIT_REPLY: Final = "await_reply"
ANSWER: Final = "answer"


def normalize_question(question: str) -> str:
    """Lowercase words only: two questions that differ in case, spacing or punctuation are one."""
    return " ".join(re.findall(r"[^\W_]+", question.lower()))


def ask_blocker(state: Mapping[str, Any], decision: Mapping[str, Any], max_rounds: int) -> str | None:
    """Why a decision that needs clarification is not put to the user, or None if it may be."""
    question = (decision.get("question") or "").strip()
    if not question:
        return "the clarifier gave no question"
    rounds = state.get("clarification_rounds", 0)
    if rounds >= max_rounds:
        return f"the rounds bound is reached ({rounds}/{max_rounds} asked in this turn)"
    asked = {normalize_question(q) for q in state.get("asked_questions", [])}
    if normalize_question(question) in asked:
        return "this question was already asked in this thread"
    return None


def should_ask(state: Mapping[str, Any], decision: Mapping[str, Any] | None, max_rounds: int) -> bool:
    if not decision or not decision["needs_clarification"]:
        return False
    return ask_blocker(state, decision, max_rounds) is None


def declined(state: Mapping[str, Any]) -> bool:
    """The turn's user message is blank but its query is not: a blank reply to a clarification
    question, which `rewrite` answers with the query asked about (a blank new turn has no query)."""
    messages = state.get("messages", [])
    return bool(state.get("query")) and last_user_index(messages) is not None and not last_user_text(messages)


def after_rewrite(state: Mapping[str, Any], ctx: Context) -> Literal["pre_check", "retrieve", "answer"]:
    if not state.get("query"):
        return ANSWER  # an empty turn: answered with a request for a question, no model involved
    return PRE_CHECK if ctx["pre_check"] and not declined(state) else RETRIEVE


def after_pre_check(state: Mapping[str, Any], ctx: Context) -> Literal["ask_user", "retrieve"]:
    return ASK_USER if should_ask(state, state.get("pre_decision"), ctx["max_rounds"]) else RETRIEVE


def after_retrieve(state: Mapping[str, Any], ctx: Context) -> Literal["post_check", "answer"]:
    return POST_CHECK if ctx["post_check"] and not declined(state) else ANSWER


def after_post_check(state: Mapping[str, Any], ctx: Context) -> Literal["ask_user", "answer"]:
    return ASK_USER if should_ask(state, state.get("post_decision"), ctx["max_rounds"]) else ANSWER


def after_ask_user(state: Mapping[str, Any], ctx: Context) -> Literal["await_reply", "__end__"]:
    """Interrupt mode waits for the reply (then goes round again); message mode ends the turn. The
    mode is the one the question was asked in (stored by `ask_user`): `update_state` runs this edge
    with the graph's settings, not the run's (langgraph#6340)."""
    mode = state.get("ask_mode") or ctx["ask_mode"]  # a thread checkpointed before it was stored
    return AWAIT_REPLY if mode == "interrupt" else cast(Literal["__end__"], END)  # LangGraph's is a str
