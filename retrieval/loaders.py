"""Read the files ingestion accepts (.txt, .md, .pdf, .jsonl) into documents with a title.

A file that cannot be used raises `SkipFile` with the reason; a JSON-lines file also reports its
broken lines one by one while its good lines are kept.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from askbetter.text import NOT_UTF8, encodes_as_utf8, not_utf8

SUPPORTED_SUFFIXES = (".txt", ".md", ".pdf", ".jsonl")
EMPTY_TEXT = "empty text"  # why a JSON line with a blank text is skipped
_HEADING = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


class SkipFile(Exception):
    """The whole file is unusable; the message is the reason shown to the user."""


class EmptyFile(SkipFile):
    """The file holds no text, or only JSON lines whose text is empty: emptied on purpose, as such a
    line is (`EMPTY_TEXT`), so ingestion removes what it stored for the file."""


Metadata = dict[str, str | int | float | bool]  # what Chroma can store


@dataclass(frozen=True)
class SourceDocument:
    text: str
    title: str
    source: str  # the file path
    metadata: Metadata = field(default_factory=dict)


@dataclass
class Loaded:
    documents: list[SourceDocument] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (where, why) for partial losses

    @property
    def broken(self) -> bool:
        """Whether a line could not be read (an empty text is a record emptied on purpose, not a
        broken one)."""
        return any(why != EMPTY_TEXT for _, why in self.skipped)


def load_file(path: Path) -> Loaded:
    """The documents in `path`; raises `SkipFile` when none can be read."""
    reader = _READERS.get(path.suffix.lower())
    if reader is None:
        accepted = ", ".join(SUPPORTED_SUFFIXES)
        raise SkipFile(f"unsupported file type {path.suffix or '(none)'}; accepted: {accepted}")
    try:
        return reader(path)
    except OSError as exc:
        raise SkipFile(f"cannot read the file: {exc.strerror or exc}") from exc


def _read_text(path: Path) -> str:
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:  # the report names the file: the reason names the line
        raise SkipFile(not_utf8(exc)) from exc
    if not text.strip():
        raise EmptyFile("empty file")
    return text


def _load_plain(path: Path) -> Loaded:
    return Loaded([SourceDocument(_read_text(path), path.stem, str(path))])


def _load_markdown(path: Path) -> Loaded:
    text = _read_text(path)
    heading = _HEADING.search(text)
    return Loaded([SourceDocument(text, heading.group(1) if heading else path.stem, str(path))])


def _load_pdf(path: Path) -> Loaded:
    from pypdf import PdfReader

    try:
        with _pypdf_quietly():
            reader = PdfReader(path)
            pages = [page.extract_text() or "" for page in reader.pages]
            title = reader.metadata.title if reader.metadata else None
    except OSError:
        raise
    except Exception as exc:  # pypdf raises many types for damaged or encrypted files
        raise SkipFile(f"unreadable PDF: {exc}") from exc
    text = "\n\n".join(page.strip() for page in pages if page.strip())
    if not text:
        raise SkipFile("no extractable text in the PDF (a scan without a text layer?)")
    return Loaded([SourceDocument(text, str(title).strip() if title else path.stem, str(path))])


@contextmanager
def _pypdf_quietly() -> Iterator[None]:
    """Hide pypdf's warnings while it reads: it logs each damage it works around ("Ignoring wrong
    pointing object 1 0", "EOF marker not found"), which the command line printed under
    askbetter's name and not the file's; a PDF it cannot read raises, reported as skipped."""
    logger = logging.getLogger("pypdf")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _load_jsonl(path: Path) -> Loaded:
    """One document per line: an object with a `text` field, optional `title`, `id` and metadata."""
    loaded = Loaded()
    for number, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            reason = f"not valid JSON ({exc.msg}: column {exc.colno})"  # the line is `where`'s
            loaded.skipped.append((where, reason))
            continue
        except RecursionError:  # arrays or objects nested deeper than the parser goes
            loaded.skipped.append((where, "not valid JSON (nested too deep)"))
            continue
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            loaded.skipped.append((where, 'not an object with a string "text" field'))
            continue
        if not record["text"].strip():
            loaded.skipped.append((where, EMPTY_TEXT))
            continue
        if not encodes_as_utf8(record):
            loaded.skipped.append((where, NOT_UTF8))
            continue
        title = str(record.get("title") or f"{path.stem} line {number}")
        metadata = _scalar_fields(record, exclude=("text", "title"))
        loaded.documents.append(SourceDocument(record["text"], title, str(path), metadata))
    if not loaded.documents:
        raise (SkipFile if loaded.broken else EmptyFile)(f"no usable lines{_broken_lines(loaded.skipped)}")
    return loaded


def _broken_lines(skipped: list[tuple[str, str]], shown: int = 3) -> str:
    """The broken lines for a file that has no good one: their count and the first `shown` reasons."""
    if not skipped:
        return ""
    listed = "; ".join(f"line {where.rsplit(':', 1)[1]}: {why}" for where, why in skipped[:shown])
    more = f"; {len(skipped) - shown} more" if len(skipped) > shown else ""
    return f" ({len(skipped)} broken: {listed}{more})"


def _scalar_fields(record: dict[str, Any], exclude: tuple[str, ...]) -> Metadata:
    """The fields Chroma can store as metadata (strings, numbers, booleans, under a key it accepts);
    others are dropped."""
    return {
        key: value
        for key, value in record.items()
        if key not in exclude and _storable_key(key) and _storable_value(value)
    }


def _storable_value(value: Any) -> bool:
    """A value Chroma stores as it is: a string, a boolean, a 64-bit integer or a finite float. It
    drops NaN and infinities without a word and keeps a larger integer as a float (another value),
    and a re-ingest would then find the chunk's metadata changed every time."""
    if isinstance(value, (str, bool)):
        return True
    if isinstance(value, int):
        return -(2**63) <= value < 2**63
    return isinstance(value, float) and math.isfinite(value)


def _storable_key(key: str) -> bool:
    """Chroma refuses an empty metadata key, one starting with "#" or "$" (its own), and
    "chroma:document"."""
    return bool(key) and not key.startswith(("#", "$")) and key != "chroma:document"


_READERS: dict[str, Callable[[Path], Loaded]] = {
    ".txt": _load_plain,
    ".md": _load_markdown,
    ".pdf": _load_pdf,
    ".jsonl": _load_jsonl,
}
