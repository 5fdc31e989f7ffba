"""The example schema (JSON lines), the one format for training, evaluation and tests.

    {"id": "pacific-val-0412", "source": "pacific", "setting": "pre|post",
     "messages": [{"role": "user|assistant", "content": "..."}],
     "documents": [{"id": "d1", "title": "optional", "text": "..."}],
     "clarification": "reference question, or null when the query is clear",
     "kind": "ambiguous|underspecified|missing-fact|hard-negative|clear"}

The label is `clarification is not None`. `kind` and `source` are informative only: a file from
elsewhere may leave them out, and they read as `UNKNOWN`; an example without an id (or a null one)
is named by its line in the file (`line-7`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal, TypedDict

from askbetter.clarifier.types import Document, Message
from askbetter.text import NOT_UTF8, encodes_as_utf8, not_utf8, write_lines

Setting = Literal["pre", "post"]
UNKNOWN = "unknown"  # the kind or source of an example whose file does not give one


class Example(TypedDict):
    id: str
    source: str
    setting: Setting
    messages: list[Message]
    documents: list[Document]
    clarification: str | None
    kind: str


class ExampleFormatError(ValueError):
    """A JSONL line that is not an example; the message names the file and line."""


def needs_clarification(example: Example) -> bool:
    return example["clarification"] is not None


def check_both_labels(examples: Iterable[Example], then: str) -> None:
    """ExampleFormatError unless the examples hold both labels (a threshold between them needs
    both, and their AUC is undefined); `then` ends the message with what the caller does or
    what the user may do. Here, not in `calibrate`: `train` checks its dev sample before its
    steps, and must not need scikit-learn, which `calibrate` imports."""
    labels = [needs_clarification(ex) for ex in examples]
    if all(labels) or not any(labels):
        label = "need clarification" if any(labels) else "are clear"
        raise ExampleFormatError(f"calibration needs examples of both labels: all {len(labels)} {label}; {then}")


def check_documents(example: Example) -> list[Document] | None:
    """What a check of this example sees: its passages after retrieval (`post`), none before."""
    return example["documents"] if example["setting"] == "post" else None


def validate_example(obj: Any, default_id: str | None = None) -> Example:
    """Check one parsed JSON value against the schema and return it; raise ValueError if not. An
    id left out or null reads as `default_id` when one is given."""
    if not isinstance(obj, dict):
        raise ValueError("an example must be a JSON object")
    if not encodes_as_utf8(obj):
        raise ValueError(NOT_UTF8)
    if obj.get("id") is None and default_id is not None:
        obj["id"] = default_id
    for key in ("id", "messages", "clarification"):
        if key not in obj:
            raise ValueError(f"missing key {key!r}")
    if isinstance(obj["id"], bool) or not isinstance(obj["id"], str | int):
        raise ValueError(f"id must be a string or a whole number, not {obj['id']!r}")
    obj["id"] = str(obj["id"])  # another writer's numeric id reads as text, as a document's does
    if obj.get("setting") is None:  # left out: `post` when there are passages, as the design defines
        obj["setting"] = "post" if obj.get("documents") else "pre"
    for key in ("source", "kind"):
        if not isinstance(obj.setdefault(key, UNKNOWN), str):
            raise ValueError(f"{key} must be a string")
    if obj["setting"] not in ("pre", "post"):
        raise ValueError(f"setting must be 'pre' or 'post', not {obj['setting']!r}")
    messages = obj["messages"]
    if not isinstance(messages, list) or not messages:
        raise ValueError("messages must be a non-empty list")
    for m in messages:
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant", "system"):
            raise ValueError(f"bad message {m!r}: needs role user, assistant or system, and content")
        if not isinstance(m.get("content"), str):
            raise ValueError(f"message content must be a string: {m!r}")
    if messages[-1]["role"] != "user" or not messages[-1]["content"].strip():
        raise ValueError("messages must end with the (non-empty) user turn being judged")
    if obj.get("documents") is None:  # left out or null: no passages, as `pre` has
        obj["documents"] = []
    documents = obj["documents"]
    if not isinstance(documents, list):
        raise ValueError("documents must be a list")
    for index, d in enumerate(documents):
        if isinstance(d, str):  # a bare passage text
            d = documents[index] = {"text": d}
        if not isinstance(d, dict) or not isinstance(d.get("text"), str):
            raise ValueError(f"bad document {str(d)[:80]!r}: needs a text string")
        # other writers may give numbers: read as text (id 0 stays "0"); no id reads as ""
        d["id"] = "" if d.get("id") is None else str(d["id"])
        if d.get("title") is not None:
            d["title"] = str(d["title"])
    clar = obj["clarification"]
    if clar is not None and not isinstance(clar, str):
        raise ValueError("clarification must be a string or null")
    if clar is not None and not clar.strip():  # a blank reference question: the query is clear
        obj["clarification"] = None
    return obj  # type: ignore[return-value]


def read_examples(path: str | Path) -> list[Example]:
    """Read a JSONL file of examples. Blank lines are skipped; a broken line raises
    ExampleFormatError naming the file and line number."""
    return list(iter_examples(path))


def check_examples_file(path: Path) -> None:
    """ExampleFormatError for a folder, FileNotFoundError for nothing at `path`: what the command
    line checks before it imports the model libraries, and `iter_examples` before it reads."""
    if path.is_dir():
        raise ExampleFormatError(f"{path} is a folder: name a JSONL file of examples, e.g. data/dev.jsonl")
    if not path.is_file():
        raise FileNotFoundError(f"no such examples file: {path}")


def check_limit(limit: int | None) -> None:
    """ValueError for a `--limit` below 1 (None means every example)."""
    if limit is not None and limit < 1:
        raise ValueError(f"--limit must be a positive number of examples, not {limit}")


def iter_examples(path: str | Path) -> Iterator[Example]:
    path = Path(path)
    check_examples_file(path)
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")  # a BOM may open the file
            except UnicodeDecodeError as exc:
                raise ExampleFormatError(not_utf8(exc, str(path), lineno)) from exc
            if not line.strip():
                continue
            try:
                yield validate_example(json.loads(line), default_id=f"line-{lineno}")
            except (ValueError, RecursionError) as exc:  # json.JSONDecodeError is one; JSON nested too deep
                raise ExampleFormatError(f"{path}:{lineno}: not a valid example: {exc}") from exc


def write_examples(path: str | Path, examples: Iterable[Example]) -> int:
    """Write examples as JSON lines, atomically (`askbetter.text.write_lines`). Returns the count."""
    return write_lines(path, (json.dumps(ex, ensure_ascii=False) + "\n" for ex in examples))
