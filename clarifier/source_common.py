"""Shared pieces of the dataset converters (`source_*.py`).

One place builds and validates examples, caps histories and documents, reads raw files with clear
errors, and derives deterministic randomness, so each converter only maps its dataset's structure.
A converter is ``convert(raw_dir, seed=13) -> Iterator[Converted]``, where ``raw_dir`` is the raw
data folder holding one sub-folder per dataset and each item is ``(group_id, example)``: the group
is the conversation, story, dialogue, rule page or question the example comes from, and the split
keeps a group together.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import lru_cache, wraps
from pathlib import Path
from typing import Any, TypeVar

from askbetter.clarifier.examples import Example, Setting, validate_example
from askbetter.clarifier.types import Document, Message
from askbetter.text import not_utf8

SPLITS = ("train", "dev", "test")
SPLIT_FRACTIONS = (0.8, 0.1, 0.1)
MAX_HISTORY_MESSAGES = 6
"""Messages kept before the judged user turn (the oldest are dropped)."""
MAX_MESSAGE_CHARS = 1000
MAX_DOC_CHARS = 3000

Converted = tuple[str, Example]


class RawDataError(ValueError):
    """A raw dataset file is missing or not what its converter expects; the message names it."""


def clip(text: str, limit: int) -> str:
    """Whitespace-trimmed `text`, cut to at most `limit` characters (an ellipsis marks a cut)."""
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def user(text: str) -> Message:
    return {"role": "user", "content": clip(text, MAX_MESSAGE_CHARS)}


def assistant(text: str) -> Message:
    return {"role": "assistant", "content": clip(text, MAX_MESSAGE_CHARS)}


def exchange(question: str, answer: str) -> list[Message]:
    """A past turn: the user's question and the assistant's answer."""
    return [user(question), assistant(answer)]


def document(doc_id: str, text: str, title: str | None = None) -> Document:
    doc: Document = {"id": doc_id, "text": clip(text, MAX_DOC_CHARS)}
    if title:
        doc["title"] = title
    return doc


def make_example(
    example_id: str,
    source: str,
    setting: Setting,
    messages: list[Message],
    clarification: str | None,
    kind: str,
    documents: Iterable[Document] = (),
    keep_opening: bool = False,
) -> Example:
    """Build one example and validate it against the schema.

    The history is capped to the last `MAX_HISTORY_MESSAGES` messages before the judged turn;
    with `keep_opening`, the first message stays and counts as one of them (for dialogs whose
    opening message holds the question that the later turns follow up)."""
    docs = list(documents) if setting == "post" else []
    if setting == "post" and not docs:
        raise ValueError(f"{example_id}: a post example needs documents")
    history = messages[:-1]
    if len(history) > MAX_HISTORY_MESSAGES:
        keep = MAX_HISTORY_MESSAGES - 1 if keep_opening else MAX_HISTORY_MESSAGES
        history = (history[:1] if keep_opening else []) + history[-keep:]
    capped = history + messages[-1:]
    return validate_example(
        {
            "id": example_id,
            "source": source,
            "setting": setting,
            "messages": capped,
            "documents": docs,
            "clarification": clarification,
            "kind": kind,
        }
    )


def both_settings(
    example_id: str,
    source: str,
    messages: list[Message],
    documents: list[Document],
    clarification: str | None,
    kind: str,
) -> Iterator[Example]:
    """The same turn judged before retrieval (`<id>-pre`, no documents) and after (`<id>-post`)."""
    for setting in ("pre", "post"):
        yield make_example(
            f"{example_id}-{setting}", source, setting, messages, clarification, kind, documents
        )


def _hash64(seed: int, keys: tuple[object, ...]) -> int:
    digest = hashlib.sha256(":".join(map(str, (seed, *keys))).encode()).digest()
    return int.from_bytes(digest[:8], "big")


def rng_for(seed: int, *keys: object) -> random.Random:
    """A random generator determined by the seed and the keys (stable across runs and machines)."""
    return random.Random(_hash64(seed, keys))


def stable_fraction(seed: int, *keys: object) -> float:
    """A number in [0, 1) determined by the seed and the keys (for splits and sampling)."""
    return _hash64(seed, keys) / 2**64


T = TypeVar("T")


def stable_choice(options: Sequence[T], seed: int, *keys: object) -> T:
    """One of `options`, picked by `stable_fraction` of the seed and the keys."""
    return options[int(stable_fraction(seed, *keys) * len(options))]


def first_match(pool: Sequence[T], accept: Callable[[T], bool], tries: int, seed: int,
                *keys: object) -> T | None:
    """The first member of `pool` that `accept` takes, among `tries` consecutive ones (wrapping
    round) from a place picked by `stable_fraction` of the seed and the keys; None if none is."""
    start = int(stable_fraction(seed, *keys) * len(pool))
    for i in range(min(tries, len(pool))):
        member = pool[(start + i) % len(pool)]
        if accept(member):
            return member
    return None


def split_of(group: str, seed: int) -> str:
    """The split a group belongs to: 80/10/10 by a hash of the seed and the group id."""
    x = stable_fraction(seed, "split", group)
    bound = 0.0
    for split, fraction in zip(SPLITS, SPLIT_FRACTIONS, strict=True):
        bound += fraction
        if x < bound:
            return split
    return SPLITS[-1]


def require_file(folder: Path, name: str) -> Path:
    path = folder / name
    if not path.is_file():
        raise RawDataError(f"missing raw file {path}")
    return path


Signature = tuple[tuple[str, int, int], ...]


def files_signature(*folders: Path) -> Signature:
    """Path, size and modification time of every file under `folders`: a cache key for what is
    parsed from them, which changes when the files do."""
    return tuple(sorted(
        (str(p), st.st_size, st.st_mtime_ns)
        for folder in folders if folder.is_dir()
        for p in folder.rglob("*") if p.is_file() for st in [p.stat()]
    ))  # fmt: skip


def parsed_once(*folders: str) -> Callable[[Callable[[Path], T]], Callable[[Path], T]]:
    """Decorator for `parse(raw_dir)`, read by several converters: it runs again only when the
    raw folder or the files under its `folders` change (`files_signature`); the latest result is
    kept, as a build reads one folder. Results are shared, so they must not be changed."""

    def decorate(parse: Callable[[Path], T]) -> Callable[[Path], T]:
        @lru_cache(maxsize=1)
        def cached(raw_dir: Path, signature: Signature) -> T:
            return parse(raw_dir)

        @wraps(parse)
        def parsed(raw_dir: Path) -> T:
            return cached(raw_dir, files_signature(*(raw_dir / f for f in folders)))

        return parsed

    return decorate


def read_text(path: Path) -> str:
    """A raw file's text, naming the file and line in the error when it is not UTF-8."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RawDataError(not_utf8(exc, str(path))) from exc


def load_json(path: Path) -> Any:
    """Parse a JSON file, naming the file in the error when it is broken."""
    try:
        return json.loads(read_text(path))
    except (json.JSONDecodeError, RecursionError) as exc:  # nested too deep: RecursionError
        raise RawDataError(f"{path}: not valid JSON: {exc}") from exc


def load_jsonl(path: Path) -> list[Any]:
    """Parse a JSON-lines file, naming the file and line in the error when one is broken, or the
    file when it holds no record (an empty file: an interrupted download, not an empty dataset)."""
    records = []
    for lineno, line in enumerate(read_text(path).split("\n"), 1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except (json.JSONDecodeError, RecursionError) as exc:  # nested too deep: RecursionError
                raise RawDataError(f"{path}:{lineno}: not valid JSON: {exc}") from exc
    if not records:
        raise RawDataError(f"{path}: no records (an empty file)")
    return records


def record_name(record: Any, key: str, kind: str, index: int) -> str:
    """How a message names a raw record: by its `key` field (`record 'a|2|1'`), or, when it has
    none, by its position in the file (`record 12 (no id)`), the first being 0."""
    if isinstance(record, dict) and key in record:
        return f"{kind} {record[key]!r}"
    return f"{kind} {index} (no {key})"


def field(record: dict[str, Any], key: str, where: str) -> Any:
    """`record[key]`, or a RawDataError naming the record when the field is missing."""
    if not isinstance(record, dict) or key not in record:
        raise RawDataError(f"{where}: missing field {key!r}")
    return record[key]
