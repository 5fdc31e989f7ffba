"""askbetter.retrieval: Chroma store, embedding function, ingestion, the bundled demo corpus, and a
LangChain retriever as a `Retriever`.

The names in `_EXPORTS` are imported on first use (`askbetter.lazy`), as in `askbetter`:
importing a submodule imports this package first, and an eager import here would load them all
(LangChain, numpy) for one that needs none of them, as `askbetter ingest` checks its paths with
`askbetter.retrieval.ingest` alone. `ingest` and `IngestReport` are imported here: that module is
light, and the function `ingest` must be bound before its module of the same name is imported,
which would otherwise take its place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from askbetter.lazy import lazy_exports
from askbetter.retrieval.ingest import IngestReport, ingest

_EXPORTS: dict[str, str] = {
    "ChromaRetriever": "askbetter.retrieval.store",
    "LangChainRetriever": "askbetter.retrieval.langchain",
    "LocalEmbeddings": "askbetter.retrieval.embeddings",
    "Passage": "askbetter.retrieval.types",
    "RetrievalError": "askbetter.retrieval.errors",
    "Retriever": "askbetter.retrieval.types",
    "bundled_corpus_dir": "askbetter.retrieval.corpus",
    "load_sentence_transformer": "askbetter.retrieval.embeddings",
    "make_client": "askbetter.retrieval.store",
    "make_embedding_function": "askbetter.retrieval.embeddings",
    "open_collection": "askbetter.retrieval.store",
    "resolve_embedding_model": "askbetter.retrieval.embeddings",
}

__all__ = sorted([*_EXPORTS, "IngestReport", "ingest"])

if TYPE_CHECKING:
    from askbetter.retrieval.corpus import bundled_corpus_dir
    from askbetter.retrieval.embeddings import (
        LocalEmbeddings,
        load_sentence_transformer,
        make_embedding_function,
        resolve_embedding_model,
    )
    from askbetter.retrieval.errors import RetrievalError
    from askbetter.retrieval.langchain import LangChainRetriever
    from askbetter.retrieval.store import ChromaRetriever, make_client, open_collection
    from askbetter.retrieval.types import Passage, Retriever


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
