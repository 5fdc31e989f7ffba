"""askbetter.retrieval: Chroma store, embedding function, ingestion, the bundled demo corpus, and a
LangChain retriever as a `Retriever`."""

from askbetter.retrieval.corpus import bundled_corpus_dir
from askbetter.retrieval.embeddings import (
    LocalEmbeddings,
    load_sentence_transformer,
    make_embedding_function,
    resolve_embedding_model,
)
from askbetter.retrieval.errors import RetrievalError
from askbetter.retrieval.ingest import IngestReport, ingest
from askbetter.retrieval.langchain import LangChainRetriever
from askbetter.retrieval.store import ChromaRetriever, make_client, open_collection
from askbetter.retrieval.types import Passage, Retriever

__all__ = [
    "ChromaRetriever",
    "IngestReport",
    "LangChainRetriever",
    "LocalEmbeddings",
    "Passage",
    "RetrievalError",
    "Retriever",
    "bundled_corpus_dir",
    "ingest",
    "load_sentence_transformer",
    "make_client",
    "make_embedding_function",
    "open_collection",
    "resolve_embedding_model",
]
