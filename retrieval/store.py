"""Chroma: the client (embedded folder, server, or in-memory), the collection, and top-k search.

Collections use the cosine space, so a passage's score is 1 - cosine distance, clipped to [0, 1]
(the same cosine similarity for a collection made elsewhere in the l2 or inner-product space).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from askbetter.retrieval.embeddings import make_embedding_function
from askbetter.retrieval.errors import RetrievalError
from askbetter.retrieval.types import Passage
from askbetter.settings import Settings

CHROMA_DB_FILE = "chroma.sqlite3"  # what a PersistentClient keeps in its folder
REASON_CHARS = 160  # of the reason an unreachable server's error quotes (another server's page)

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection
    from chromadb.api.types import EmbeddingFunction


def make_client(settings: Settings, *, ephemeral: bool = False, create: bool = True) -> "ClientAPI":
    """An in-memory client when `ephemeral` (tests), an `HttpClient` when `settings.chroma_host` is
    set, else an embedded `PersistentClient` on `settings.chroma_path` (when not `create`, a folder
    holding no Chroma store raises `RetrievalError` instead of getting one)."""
    import chromadb

    if ephemeral:
        return chromadb.EphemeralClient()
    if settings.chroma_host:
        try:
            return chromadb.HttpClient(host=settings.chroma_host, port=settings.chroma_port)
        except Exception as exc:  # chromadb raises a bare ValueError, httpx its own errors
            message = _unreachable(settings.chroma_host, settings.chroma_port, exc, str(settings.chroma_path))
            raise RetrievalError(message) from exc
    return _persistent_client(Path(settings.chroma_path), create)


_THIS_MACHINE = ("localhost", "127.0.0.1", "::1", "0.0.0.0")


def _unreachable(host: str, port: int, exc: Exception, path: str | None = None) -> str:
    """`path` None: the server answered before (its data folder is not known here). The reason is
    put on one line and cut: a server at that port that is not Chroma answers with its own page.
    `chroma run` is suggested for a server on this machine only; another one is for its owner."""
    folder = path or "<its data folder>"
    reason = " ".join(str(exc).split())
    if len(reason) > REASON_CHARS:
        reason = reason[: REASON_CHARS - 3] + "..."
    remedy = (f"start it with `chroma run --path {folder} --port {port}`" if host.lower() in _THIS_MACHINE
              else "check that the server there is running and that this machine may connect to it")
    return (f"cannot reach Chroma at {host}:{port} ({reason}); {remedy}, or unset ASKBETTER_CHROMA_HOST "
            "to use a local folder")


@contextmanager
def chroma_errors(failure: str, advice: str = "") -> Iterator[None]:
    """Chroma calls inside raise `RetrievalError`: a server that stopped answering is reported as
    unreachable (as `make_client` does), any other Chroma error as `failure` and Chroma's reason;
    `advice`, if any, ends either message."""
    import httpx
    from chromadb.errors import ChromaError

    tail = f". {advice}" if advice else ""
    try:
        yield
    except httpx.TransportError as exc:  # connection refused or dropped, timeout
        url = exc.request.url
        port = url.port or (443 if url.scheme == "https" else 80)  # httpx gives None for the default
        raise RetrievalError(_unreachable(url.host, port, exc) + tail) from exc
    except ChromaError as exc:
        raise RetrievalError(f"{failure}: {_explain(exc)}{tail}") from exc


def _persistent_client(path: Path, create: bool = True) -> "ClientAPI":
    import chromadb
    from chromadb.errors import ChromaError

    hint = "set ASKBETTER_CHROMA_PATH to a writable folder"
    if path.exists() and not path.is_dir():
        raise RetrievalError(f"the Chroma path {path} is a file, not a folder; {hint}")
    if not create and not (path / CHROMA_DB_FILE).is_file():  # a mistyped path, or the documents' folder
        raise RetrievalError(f"there is no Chroma store in {path}: run `askbetter ingest PATH` first, or set "
                             "ASKBETTER_CHROMA_PATH (--chroma-path) to the folder it stored into")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        reason = exc.strerror or exc
        raise RetrievalError(f"cannot create the Chroma folder {path}: {reason}; {hint}") from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise RetrievalError(f"the Chroma folder {path} is not writable (or cannot be entered); {hint}")
    try:
        return chromadb.PersistentClient(path=str(path))
    except (ChromaError, OSError) as exc:
        raise RetrievalError(f"cannot open the Chroma folder {path}: {_explain(exc)}") from exc


def _explain(exc: Exception) -> str:
    """Chroma's message, plus what to do when the folder is locked by another process."""
    message = str(exc) or type(exc).__name__
    if "lock" in message.lower():
        message += (
            " (another process holds the folder: a `chroma run` server or another askbetter "
            "process; stop it, or set ASKBETTER_CHROMA_HOST to use that server)"
        )
    return message


def open_collection(
    settings: Settings,
    *,
    client: "ClientAPI | None" = None,
    embedding_function: "EmbeddingFunction[Any] | None" = None,
    create: bool = True,
) -> "Collection":
    """The collection `settings.collection`, created (in the cosine space) if missing; when not
    `create` (to search it), a `RetrievalError` instead when it is missing (naming the collections
    there) or empty.

    `client` defaults to `make_client(settings)`, `embedding_function` to the model named by
    `settings.embedding_model` on `settings.device` (loaded once the collection is known to exist
    and, when not `create`, to hold chunks).
    """
    client = client if client is not None else make_client(settings, create=create)
    name = settings.collection
    with chroma_errors(f"cannot open collection {name!r}"):
        if not create:
            _require_chunks(_existing_collection(client, name))
        if embedding_function is None:
            embedding_function = make_embedding_function(settings.embedding_model, settings.device)
        # the ignores: Chroma types the parameter as a function of texts and images both, which
        # its own text-only functions (this one) are not
        try:
            if not create:
                return client.get_collection(name, embedding_function=embedding_function)  # type: ignore[arg-type]
            return client.get_or_create_collection(
                name,
                embedding_function=embedding_function,  # type: ignore[arg-type]
                # a fresh dict each time: Chroma writes the embedding function into it
                configuration={"hnsw": {"space": "cosine"}},
            )
        except ValueError as exc:  # the collection was built with another embedding function
            raise RetrievalError(
                f"cannot open collection {name!r}: {exc}. Use the embedding model it was built "
                "with, or another collection name (ASKBETTER_COLLECTION)"
            ) from exc


def _existing_collection(client: "ClientAPI", name: str) -> "Collection":
    """The collection `name` without its embedding function (enough to count its chunks), or a
    `RetrievalError` naming the collections there."""
    from chromadb.errors import NotFoundError

    try:
        return client.get_collection(name, embedding_function=None)
    except NotFoundError as exc:
        here = ", ".join(sorted(_collection_names(client))) or "none"
        raise RetrievalError(
            f"collection {name!r} does not exist (collections here: {here}); run `askbetter ingest PATH` first"
        ) from exc


def _collection_names(client: "ClientAPI", page: int = 100) -> list[str]:
    """The names of all the collections in the client's database, read page by page (a server may
    give fewer than `page` at a time)."""
    names: list[str] = []
    while batch := client.list_collections(limit=page, offset=len(names)):
        names += [collection.name for collection in batch]
    return names


def _require_chunks(collection: "Collection") -> None:
    """Raise `RetrievalError` when the collection holds nothing to search."""
    name = collection.name
    with chroma_errors(f"reading collection {name!r} failed"):
        if collection.count() == 0:
            raise RetrievalError(f"collection {name!r} is empty: run `askbetter ingest PATH` first")


class ChromaRetriever:
    """Top-k search over one Chroma collection (the `Retriever` protocol)."""

    def __init__(self, collection: "Collection") -> None:
        self.collection = collection
        self.space = _distance_space(collection)

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        client: "ClientAPI | None" = None,
        embedding_function: "EmbeddingFunction[Any] | None" = None,
    ) -> "ChromaRetriever":
        """A retriever over the existing collection `settings.collection` (searching creates none;
        a missing or empty one raises `RetrievalError` before the embedding model loads)."""
        return cls(open_collection(settings, client=client, embedding_function=embedding_function, create=False))

    def search(self, query: str, k: int = 4) -> list[Passage]:
        """The `k` passages closest to `query`, best first."""
        if not query.strip():
            raise ValueError("cannot search for an empty query")
        if k < 1:
            raise ValueError(f"k must be >= 1, not {k}")
        with chroma_errors(f"search in collection {self.collection.name!r} failed"):
            result = self.collection.query(
                query_texts=[query], n_results=k, include=["documents", "metadatas", "distances"]
            )
        if not result["ids"][0]:  # only an empty collection finds nothing: say so
            _require_chunks(self.collection)
        return [
            _passage(chunk_id, text, metadata, _similarity(distance, self.space))
            for chunk_id, text, metadata, distance in zip(
                result["ids"][0],
                (result["documents"] or [[]])[0],
                (result["metadatas"] or [[]])[0],
                (result["distances"] or [[]])[0],
            )
        ]


def _distance_space(collection: "Collection") -> str:
    """The collection's distance function: "cosine" for one `open_collection` created, possibly
    another for one made elsewhere ("l2", Chroma's default, or "ip")."""
    configuration = collection.configuration or {}
    index = configuration.get("hnsw") or configuration.get("spann") or {}
    return str(index.get("space") or "l2")


def _similarity(distance: float, space: str) -> float:
    """The cosine similarity Chroma's `distance` stands for, clipped to [0, 1]: 1 - d in the cosine
    and inner-product spaces, 1 - d / 2 in the l2 space (the squared distance of unit vectors; the
    embeddings are L2-normalised), so a collection made elsewhere shows the same scores."""
    similarity = 1.0 - float(distance) / 2 if space == "l2" else 1.0 - float(distance)
    return min(1.0, max(0.0, similarity))


def _passage(chunk_id: str, text: str | None, metadata: Any, score: float) -> Passage:
    meta = dict(metadata or {})
    passage: Passage = {"id": chunk_id, "text": text or "", "score": score, "metadata": meta}
    if "title" in meta:
        passage["title"] = str(meta["title"])
    if "source" in meta:
        passage["source"] = str(meta["source"])
    return passage
