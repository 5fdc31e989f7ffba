"""Content words: the lower-cased words of a text that are not stopwords; and the keys two turns
or two passages are compared by when the build and `scripts/split_leaks.py` look for shared text.

Shared by the data build (which questions and passages share a topic) and the prompt (which part
of a long passage the conversation is about).
"""

from __future__ import annotations

import re

WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    "a an the of in on at to for from by with and or but is are was were be been do does did "
    "what which who whom whose when where why how that this these those it its they them their "
    "he him his she her you your i me my we our us about as into than then there so not no yes "
    "s t also other any some more most can could would should will just".split()
)


def content_words(text: str) -> set[str]:
    return {w for w in WORD.findall(text.lower()) if w not in STOPWORDS}


def turn_key(text: str) -> str:
    """A turn as compared: lowercased words, punctuation and spacing dropped."""
    return " ".join(WORD.findall(text.lower()))


def passage_key(text: str) -> str:
    """A passage as compared: its text with whitespace collapsed."""
    return " ".join(text.split())
