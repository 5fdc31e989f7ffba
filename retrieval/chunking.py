"""Split text into overlapping chunks of at most `size` characters, on sensible boundaries.

A text is cut at paragraphs first, then sentences, then words, and only a single word longer than
`size` is cut mid-word. Consecutive chunks share up to `overlap` characters: the previous chunk's
trailing sentences when they fill at least half of that budget, else its trailing words.
"""

from __future__ import annotations

import hashlib
import re

# (pattern, the separator to put back when joining the pieces it produced)
_SPLITTERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\n[ \t]*\n\s*"), "\n\n"),  # paragraphs
    (re.compile(r"(?<=[.!?])\s+"), " "),  # sentences
    (re.compile(r"\s+"), " "),  # words
)
_SENTENCE_START = re.compile(r"(?<=[.!?])\s+|\n[ \t]*\n\s*")
_WORD_START = re.compile(r"\s+")


def chunk_text(text: str, size: int, overlap: int) -> list[str]:
    """Chunks of `text`, each at most `size` characters, consecutive ones overlapping (see module)."""
    if size <= 0 or not 0 <= overlap < size:
        raise ValueError(f"need 0 <= overlap < size, got size={size}, overlap={overlap}")
    chunks: list[str] = []
    current = ""
    for joiner, piece in _pieces(text, size, "", 0):
        if not current:
            current = piece
        elif len(current) + len(joiner) + len(piece) <= size:
            current += joiner + piece
        else:
            chunks.append(current)
            tail = _tail(current, min(overlap, size - len(piece) - len(joiner)))
            current = tail + joiner + piece if tail else piece
    if current:
        chunks.append(current)
    return chunks


def chunk_id(file: str, text: str) -> str:
    """An id derived from the file and the content: the same text (up to whitespace) in the same
    file always gets the same id, and the same text in two files two ids."""
    normalized = " ".join(text.split())
    return hashlib.sha256(f"{file}\0{normalized}".encode("utf-8")).hexdigest()[:32]


def _pieces(text: str, size: int, joiner: str, level: int) -> list[tuple[str, str]]:
    """(joiner, piece) pairs, each piece at most `size` characters, split at the coarsest level."""
    text = text.strip()
    if not text:
        return []
    if len(text) <= size:
        return [(joiner, text)]
    if level == len(_SPLITTERS):  # one word longer than a chunk: cut it
        return [(joiner if i == 0 else "", text[i : i + size]) for i in range(0, len(text), size)]
    pattern, separator = _SPLITTERS[level]
    pieces: list[tuple[str, str]] = []
    for part in pattern.split(text):
        pieces.extend(_pieces(part, size, separator if pieces else joiner, level + 1))
    return pieces


def _tail(chunk: str, limit: int) -> str:
    """The longest end of `chunk` of at most `limit` characters that starts a sentence or a word."""
    if limit <= 0:
        return ""
    if len(chunk) <= limit:
        return chunk
    start = len(chunk) - limit - 1  # a boundary found from here leaves at most `limit` characters
    sentence = _SENTENCE_START.search(chunk, start)
    if sentence and len(chunk) - sentence.end() >= limit // 2:
        return chunk[sentence.end() :]
    word = _WORD_START.search(chunk, start)
    return chunk[word.end() :] if word else ""
