"""Greeting exchanges: a label-preserving change of a conversation.

An opening greeting ("Hi!" / "Hello! How can I help you today?") resolves nothing and makes
nothing ambiguous, so the clarifier should decide the same with it as without. Training can put
one before a share of its examples (`TrainConfig.smalltalk_share`), and
`scripts/smalltalk_prefix.py` measures how much one moves the decisions. The two use different
greetings, so the measurement is not of phrasings the adapter was trained on.
"""

from __future__ import annotations

import zlib

from askbetter.clarifier.examples import Example
from askbetter.clarifier.types import Message

Opening = tuple[str, str]  # (user turn, assistant turn)

TRAIN_OPENINGS: tuple[Opening, ...] = (
    ("Hello", "Hi! What can I help you with?"),
    ("hi there!", "Hello! Ask me anything."),
    ("Good afternoon", "Good afternoon! How can I help?"),
    ("I need some help please", "Happy to help. What is your question?"),
    ("hey", "Hey! What would you like to know?"),
    ("Hi, are you there?", "Yes, I'm here. How can I help you?"),
    ("Good evening!", "Good evening! What can I do for you today?"),
    ("Hello, quick question", "Sure, what is it?"),
)

PROBE_OPENINGS: tuple[Opening, ...] = (
    ("Hi!", "Hello! How can I help you today?"),
    ("Good morning.", "Good morning! What can I do for you?"),
    ("Hello, I have a question.", "Sure, go ahead."),
    ("Hey there", "Hi! What would you like to know?"),
    ("Can you help me with something?", "Of course. What do you need?"),
)


def pick(key: str, openings: tuple[Opening, ...]) -> Opening:
    """The opening for `key` (an example id, or an id and a seed): stable across runs."""
    return openings[zlib.crc32(key.encode("utf-8")) % len(openings)]


def with_opening(example: Example, opening: Opening) -> Example:
    """A copy of the example with the greeting exchange before its conversation."""
    user, assistant = opening
    greeting: list[Message] = [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    return {**example, "messages": [*greeting, *example["messages"]]}
