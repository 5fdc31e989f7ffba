"""Helpers shared by the nodes: read the dialog out of LangChain messages."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from askbetter.clarifier.types import Message


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
