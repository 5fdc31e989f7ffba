"""Ingest files into a Chroma collection: read, chunk, embed, store; safe to run again.

Chunk ids come from the file (its absolute path, stored as the chunk's `file` metadata) and the
chunk's text (see `chunk_id`), and a batch stores only the ids the collection lacks. So
re-ingesting the same files adds nothing and re-embeds nothing, and an interrupted ingestion is
resumed by running it again. Once a file's chunks are all stored, the chunks stored earlier for it
that its current version no longer has are deleted (LangChain's "incremental" cleanup): an edited
file keeps only its new text, and its chunks stored already get their current metadata. An emptied
file (no text, or JSON lines whose texts are all empty) loses all its chunks. A file that cannot be
read, or only in part (a JSON-lines file with a broken line), or is not named in this run, keeps
what it had.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from tqdm.auto import tqdm

from askbetter.retrieval.chunking import chunk_id, chunk_text
from askbetter.retrieval.errors import RetrievalError
from askbetter.retrieval.loaders import (
    SUPPORTED_SUFFIXES,
    EmptyFile,
    Metadata,
    SkipFile,
    SourceDocument,
    load_file,
)
from askbetter.text import encodes_as_utf8

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection

PathArg = str | os.PathLike[str]
IGNORED_SHOWN = 5  # ignored files named in the error when a folder holds nothing to ingest
FILE_KEY = "file"  # the chunk metadata holding the absolute path of the file it came from
RESUME_ADVICE = "The chunks stored so far are kept; run the same ingestion again to continue"


@dataclass
class IngestReport:
    files_seen: int = 0
    files_ingested: int = 0
    chunks_added: int = 0
    chunks_present: int = 0  # already in the collection (or repeated within its file)
    chunks_removed: int = 0  # stored for a file earlier, gone from its current version
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (file or file:line, reason)

    def summary(self) -> str:
        lines = [
            f"{self.files_ingested}/{self.files_seen} files ingested; chunks: "
            f"{self.chunks_added} added, {self.chunks_present} already present, "
            f"{self.chunks_removed} stale removed; {len(self.skipped)} files or lines skipped"
        ]
        lines += [f"  skipped {where}: {why}" for where, why in self.skipped]
        return "\n".join(lines)


def ingest(
    paths: PathArg | Iterable[PathArg],
    collection: "Collection",
    chunk_size: int = 800,
    chunk_overlap: int = 120,
    *,
    progress: bool = True,
    batch_size: int = 64,
) -> IngestReport:
    """Ingest files and folders (recursively: .txt, .md, .pdf, .jsonl) into `collection`.

    `paths` is one path or several. Unusable files and JSON lines are skipped and listed in the
    report; the rest is ingested. Folders with no file to ingest raise `RetrievalError`. Chunks are
    stored `batch_size` at a time as the files are read, so memory holds one file's chunks and one
    batch, whatever the corpus's size; the progress bar counts the files' bytes.
    """
    files = find_files(paths)
    report = IngestReport(files_seen=len(files))
    sizes = [_size(path) for path in files]
    with tqdm(total=sum(sizes), desc="ingest", unit="B", unit_scale=True, unit_divisor=1024,
              disable=not progress) as bar:
        batches = _Batches(collection, batch_size, report)
        for path, size in zip(files, sizes):
            read = _read(path, chunk_size, chunk_overlap, report)
            if read is not None:
                batches.add(read)
            bar.update(size)  # read and chunked: stored, but for at most one batch
        batches.flush()
    return report


class _FileChunks(NamedTuple):
    file: str  # the file's absolute path
    chunks: dict[str, tuple[str, Metadata]]  # chunk id -> (text, metadata)
    partly_read: bool  # JSON lines were skipped: its stale chunks are kept


class _Batches:
    """Chunks waiting to be stored, `batch_size` at a time, and the files whose last chunk waits
    with them: once it is stored, the file's stale chunks are removed (`_remove_stale`)."""

    def __init__(self, collection: "Collection", batch_size: int, report: IngestReport) -> None:
        self.collection = collection
        self.batch_size = batch_size
        self.report = report
        self.chunks: dict[str, tuple[str, Metadata]] = {}
        self.files: list[tuple[str, set[str]]] = []  # (file, its current chunk ids) to clean up

    def add(self, read: _FileChunks) -> None:
        """Queue a file's chunks, storing each full batch."""
        for key, chunk in read.chunks.items():
            self.chunks[key] = chunk
            if len(self.chunks) >= self.batch_size:
                self.flush()
        if not read.partly_read:  # a broken line's chunks stay until the line is fixed
            self.files.append((read.file, set(read.chunks)))
        if not self.chunks:  # its last chunk is stored already
            self.flush()

    def flush(self) -> None:
        """Store the waiting chunks the collection lacks, then clean up the files they completed."""
        if self.chunks:
            added = _store_new(self.collection, self.chunks)
            self.report.chunks_added += added
            self.report.chunks_present += len(self.chunks) - added
            self.chunks = {}
        for file, current in self.files:
            self.report.chunks_removed += _remove_stale(self.collection, file, current)
        self.files = []


def _size(path: Path) -> int:
    """The file's size in bytes, its weight in the progress bar (0 when it cannot be read: it is
    reported as skipped)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _read(path: Path, chunk_size: int, chunk_overlap: int, report: IngestReport) -> _FileChunks | None:
    """The file's chunks (none when it was emptied), or None when it cannot be used; skips and
    repeats go to `report`."""
    file = str(path.resolve())
    if not encodes_as_utf8(file):  # a name in bytes that are not UTF-8: Chroma cannot store it
        shown = str(path).encode("utf-8", "backslashreplace").decode("utf-8")  # printable
        report.skipped.append((shown, "its path is not UTF-8 text: rename the file"))
        return None
    try:
        loaded = load_file(path)
    except SkipFile as exc:
        report.skipped.append((str(path), str(exc)))
        return _FileChunks(file, {}, False) if isinstance(exc, EmptyFile) else None  # emptied: its chunks go
    report.skipped.extend(loaded.skipped)
    chunks: dict[str, tuple[str, Metadata]] = {}
    for document in loaded.documents:
        for index, text in enumerate(chunk_text(document.text, chunk_size, chunk_overlap)):
            key = chunk_id(file, text)
            if key in chunks:  # the same text twice in this file: stored once
                report.chunks_present += 1
            else:
                chunks[key] = (text, _metadata(document, index, file))
    report.files_ingested += 1
    return _FileChunks(file, chunks, loaded.broken)


def _metadata(document: SourceDocument, index: int, file: str) -> Metadata:
    """A JSONL record's own fields may replace `source` (e.g. a URL), never `title`, `chunk` or
    `file`."""
    return {"source": document.source, **document.metadata, "title": document.title, "chunk": index,
            FILE_KEY: file}


def find_files(paths: PathArg | Iterable[PathArg]) -> list[Path]:
    """Files named directly (any type: unsupported ones get reported), plus the supported files
    under each folder, recursively, skipping hidden ones; in order, without repeats: a symbolic
    link to a file found under its own name too is that file (its chunks keep the file's name).

    Raises `RetrievalError` for a missing path, one that is neither a file nor a folder (a named
    pipe), or when only folders are named and none of them holds a supported file (naming the
    other files found there)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    found: dict[Path, Path] = {}  # the file a path resolves to -> its path here

    def add(file: Path) -> None:
        key = file.resolve()
        if found.setdefault(key, file).is_symlink() and not file.is_symlink():
            found[key] = file
    folders: list[Path] = []
    ignored: list[str] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if not path.exists():
            raise RetrievalError(f"{path} does not exist")
        if not path.is_dir():
            if not path.is_file():  # a named pipe or a device: reading it may wait for ever
                raise RetrievalError(f"{path} is neither a file nor a folder")
            add(path)
            continue
        folders.append(path)
        for file in sorted(path.rglob("*")):
            relative = file.relative_to(path)
            if not file.is_file() or any(part.startswith(".") for part in relative.parts):
                continue
            if file.suffix.lower() in SUPPORTED_SUFFIXES:
                add(file)
            else:
                ignored.append(str(relative))
    if not found:
        raise RetrievalError(_nothing_to_ingest(folders, ignored))
    return list(found.values())


def _nothing_to_ingest(folders: list[Path], ignored: list[str]) -> str:
    if not folders:
        return "no paths to ingest: name files or folders"
    kinds = f"{', '.join(SUPPORTED_SUFFIXES[:-1])} or {SUPPORTED_SUFFIXES[-1]}"
    message = f"no {kinds} files under {', '.join(map(str, folders))}"
    if ignored:
        names = ", ".join(ignored[:IGNORED_SHOWN]) + (", ..." if len(ignored) > IGNORED_SHOWN else "")
        message += f" ({len(ignored)} other file{'' if len(ignored) == 1 else 's'} ignored: {names})"
    return message


def _store_new(collection: "Collection", chunks: dict[str, tuple[str, Metadata]]) -> int:
    """Add the chunks (id -> (text, metadata)) that the collection lacks, and give those it holds
    their current metadata (a JSONL record's new title or URL, a Markdown file's new heading, a
    chunk's new position) without embedding them again; return how many were added."""
    # here, not at the top: the store imports LangChain, which `find_files` (the command line's
    # check of its paths) does not need
    from askbetter.retrieval.store import chroma_errors

    with chroma_errors(f"writing to collection {collection.name!r} failed", RESUME_ADVICE):
        stored = collection.get(ids=list(chunks), include=["metadatas"])
        present = dict(zip(stored["ids"], stored["metadatas"] or []))
        new = [i for i in chunks if i not in present]
        if new:
            collection.add(
                ids=new,
                documents=[chunks[i][0] for i in new],
                metadatas=[chunks[i][1] for i in new],
            )
        changed = [i for i, metadata in present.items() if dict(metadata or {}) != chunks[i][1]]
        if changed:  # None deletes a field the chunk no longer has
            collection.update(
                ids=changed,
                metadatas=[{**dict.fromkeys(present[i] or {}), **chunks[i][1]} for i in changed],
            )
    return len(new)


def _remove_stale(collection: "Collection", file: str, current: set[str]) -> int:
    """Delete the chunks stored for `file` whose ids are not in `current`; return how many."""
    from askbetter.retrieval.store import chroma_errors  # here: see _store_new

    failure = f"removing the old chunks of {file} from collection {collection.name!r} failed"
    with chroma_errors(failure, RESUME_ADVICE):
        stale = [i for i in collection.get(where={FILE_KEY: file}, include=[])["ids"] if i not in current]
        if stale:
            collection.delete(ids=stale)
    return len(stale)
