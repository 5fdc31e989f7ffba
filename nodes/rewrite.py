"""The `rewrite` node: make the last user turn a standalone query for retrieval.

It is also the entry of every turn, so it resets the per-turn fields. A user message that answers
a clarification question (`awaiting_reply`) continues the turn: the rounds count is kept.

The rewriter is pluggable: a callable taking the dialog and returning the query, or any LangChain
chat model (bound or wrapped too, or a chain ending in one that returns a str), prompted with
`REWRITE_INSTRUCTION`. Its output is kept only when it looks like one
standalone question that keeps the user's words (`accept_rewrite`); otherwise the query falls back
to the raw turn, or, for a reply to a clarification question, to the clarified query plus the reply
(the clarified query alone when the reply is blank).
Without history there is nothing to resolve and the rewriter is not called.

Async runs use `arewrite`: it awaits a chat model's `ainvoke`, so a cancelled run stops the
rewrite's generation, and runs a plain callable in an executor thread.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import run_in_executor
from langgraph.constants import TAG_NOSTREAM

from askbetter.nodes.messages import ChatModel, last_user_index, last_user_text, output_text, to_dialog, truncate_chars

Rewriter = Callable[[list[BaseMessage]], str] | ChatModel

REWRITE_INSTRUCTION = (
    "Rewrite the user's last message as one standalone question that can be understood without "
    "the conversation. Keep the user's words and add only what the conversation makes clear. "
    "Reply with the question only."
)
# history shown to the rewriter, in characters (most recent kept)
MAX_HISTORY_CHARS = 2000
# a rewrite longer than this many times the turn (plus slack) is rejected as rambling
MAX_GROWTH = 3
_STOPWORDS = frozenset(
    "the and for are but not you your its it's this that these those what which who whom whose "
    "when where why how can could would should does did has have had was were will with from "
    "into about there their they them then than our out all any some yes please thanks thank".split()
)
_PREFIX = re.compile(r"^\s*(standalone question|question|rewritten question|rewrite)\s*:\s*", re.I)
# tagged so LangGraph's `messages` stream mode does not show the rewrite's tokens
_REWRITE_CONFIG: RunnableConfig = {"tags": [TAG_NOSTREAM]}


def rewrite(state: Mapping[str, Any], *, rewriter: Rewriter | None, max_query_chars: int) -> dict[str, Any]:
    planned = _Rewrite.of(state, rewriter, max_query_chars)
    if rewriter is None or planned.dialog is None:
        return planned.updates(None)
    return planned.updates(run_rewriter(rewriter, planned.dialog))


async def arewrite(state: Mapping[str, Any], *, rewriter: Rewriter | None, max_query_chars: int) -> dict[str, Any]:
    """`rewrite` for async runs (`ainvoke`, `astream`): a chat model's `ainvoke` is awaited, so a
    cancelled run cancels the call (`LocalChatModel` then halts its generation at the next token)."""
    planned = _Rewrite.of(state, rewriter, max_query_chars)
    if rewriter is None or planned.dialog is None:
        return planned.updates(None)
    return planned.updates(await arun_rewriter(rewriter, planned.dialog))


@dataclass(frozen=True)
class _Rewrite:
    """A turn's rewrite but for the rewriter's call, the one step in which `rewrite` and `arewrite`
    differ."""

    resets: dict[str, Any]  # the per-turn fields, reset
    query: str  # the query without an accepted rewrite
    dialog: list[BaseMessage] | None = None  # what the rewriter is called on; None: it is not called
    turn: str = ""  # the last user turn, whose words a rewrite must keep
    max_query_chars: int = 0

    @classmethod
    def of(cls, state: Mapping[str, Any], rewriter: Rewriter | None, max_query_chars: int) -> _Rewrite:
        messages: list[BaseMessage] = list(state.get("messages", []))
        continuing = bool(state.get("awaiting_reply"))
        resets: dict[str, Any] = {
            "documents": [],
            "pre_decision": None,
            "post_decision": None,
            "awaiting_reply": False,
        }
        if not continuing:
            resets["clarification_rounds"] = 0
        turn = truncate_chars(last_user_text(messages), max_query_chars, "user turn")
        if not turn:  # an empty turn; a blank reply to a question leaves the clarified query as it was
            return cls(resets, state.get("query", "") if continuing else "")
        fallback = turn
        if continuing and state.get("query"):
            fallback = f"{state['query']} {turn}"[:max_query_chars]
        index = last_user_index(messages)
        if rewriter is None or index is None or not to_dialog(messages[:index]):
            return cls(resets, turn)
        return cls(resets, fallback, messages[: index + 1], turn, max_query_chars)

    def updates(self, output: str | None) -> dict[str, Any]:
        """The node's updates given the rewriter's output (None when it was not called)."""
        return {**self.resets, "query": accept_rewrite(output, self.turn, self.max_query_chars) or self.query}


def run_rewriter(rewriter: Rewriter, messages: list[BaseMessage]) -> str:
    if not isinstance(rewriter, Runnable):
        return rewriter(messages)
    response = rewriter.invoke(rewrite_prompt(messages), config=_REWRITE_CONFIG)
    return output_text(response, "the rewriter")


async def arun_rewriter(rewriter: Rewriter, messages: list[BaseMessage]) -> str:
    """`run_rewriter` for async runs: a Runnable's `ainvoke`; a plain callable in an executor thread,
    as LangGraph runs a sync node (it may block, on a remote model say, and a cancel cannot stop it)."""
    if not isinstance(rewriter, Runnable):
        return await run_in_executor(None, rewriter, messages)
    response = await rewriter.ainvoke(rewrite_prompt(messages), config=_REWRITE_CONFIG)
    return output_text(response, "the rewriter")


def rewrite_prompt(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The rewrite prompt: the instruction, then the dialog (last turn included) as one message."""
    lines = [
        f"{'User' if m['role'] == 'user' else 'Assistant'}: {m['content']}" for m in to_dialog(messages)
    ]
    *history, last = lines
    history_text = "\n".join(history)[-MAX_HISTORY_CHARS:]
    body = f"Conversation:\n{history_text}\n{last}\n\nStandalone question:"
    return [SystemMessage(REWRITE_INSTRUCTION), HumanMessage(body)]


def accept_rewrite(output: str | None, turn: str, max_chars: int) -> str | None:
    """The cleaned rewrite, or None when it is empty, not text, too long, or drops the turn's words."""
    line = next((ln.strip() for ln in (output or "").splitlines() if ln.strip()), "")
    line = _PREFIX.sub("", line).strip().strip("\"'`").strip()
    if not re.search(r"[^\W\d_]", line):
        return None
    if len(line) > min(max_chars, MAX_GROWTH * len(turn) + 100):
        return None
    kept = _content_words(line)
    if not _content_words(turn) <= kept:
        return None
    return line


def _content_words(text: str) -> set[str]:
    """The words a rewrite must keep. Not `askbetter.clarifier.words.content_words`, whose ASCII
    words and stopwords fit the English data build: a user's turn may be in any script, so words
    are Unicode letters and digits, and words under three characters are dropped instead of listed."""
    return {w for w in re.findall(r"[^\W_]+", text.lower()) if len(w) >= 3 and w not in _STOPWORDS}
