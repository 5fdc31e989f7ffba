"""Helpers shared by the nodes: read the dialog out of LangChain messages."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import Runnable

from askbetter.clarifier.types import Message

# a chat model, bound or wrapped too (`.bind(...)`, `.with_retry()`), or a chain ending in one, with
# a `StrOutputParser()` or not: any Runnable returning a message or its text
ChatModel = BaseChatModel | Runnable[Any, BaseMessage | str]


def last_user_index(messages: Sequence[BaseMessage]) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage):
            return i
    return None


def last_user_text(messages: Sequence[BaseMessage]) -> str:
    """The last user turn, stripped ("" when there is none or it is blank)."""
    i = last_user_index(messages)
    return "" if i is None else messages[i].text.strip()


def to_dialog(messages: Sequence[BaseMessage]) -> list[Message]:
    """User and AI turns as clarifier messages; system/tool messages and blank turns are dropped."""
    dialog: list[Message] = []
    for m in messages:
        if isinstance(m, HumanMessage | AIMessage) and m.text.strip():
            role = "user" if isinstance(m, HumanMessage) else "assistant"
            dialog.append(Message(role=role, content=m.text.strip()))
    return dialog


def truncate_chars(text: str, max_chars: int, what: str) -> str:
    """`text` cut to `max_chars` characters, with a warning when it was cut."""
    if len(text) <= max_chars:
        return text
    warnings.warn(
        f"The {what} has {len(text)} characters; only the first {max_chars} are used.",
        stacklevel=3,
    )
    return text[:max_chars]


def output_text(output: object, who: str) -> str:
    """The text of what a `ChatModel` returned: a str as it is, a message's `.text`; anything else
    raises TypeError naming `who`."""
    if isinstance(output, str):
        return output
    if isinstance(output, BaseMessage):
        return output.text
    raise TypeError(f"{who} returned {type(output).__name__}, not a message or a str")
