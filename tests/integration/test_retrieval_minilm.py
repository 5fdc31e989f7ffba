"""The real embedded default: MiniLM from the bundled package, an on-disk Chroma, the bundled corpus."""

import os

import pytest
from chromadb.utils.embedding_functions import SentenceTransformerEmbeddingFunction

from askbetter.retrieval import (
    ChromaRetriever,
    LocalEmbeddings,
    bundled_corpus_dir,
    ingest,
    load_sentence_transformer,
    make_embedding_function,
    open_collection,
)
from askbetter.settings import Settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # no model hub here: everything is local
pytestmark = pytest.mark.slow


def test_bundled_corpus_ingests_once_and_retrieves_the_right_product(tmp_path):
    settings = Settings(chroma_path=tmp_path / "chroma", collection="demo")
    documents = sorted(bundled_corpus_dir().glob("*.md"))
    assert 24 <= len(documents) <= 32

    collection = open_collection(settings)
    report = ingest([bundled_corpus_dir()], collection, settings.chunk_size, settings.chunk_overlap)
    assert (report.files_ingested, report.skipped) == (len(documents), [])
    assert report.chunks_added >= len(documents)

    again = ingest([bundled_corpus_dir()], open_collection(settings), progress=False)
    assert (again.chunks_added, again.chunks_present) == (0, report.chunks_added)

    retriever = ChromaRetriever.from_settings(settings)
    assert retriever.collection.count() == report.chunks_added
    [desktop] = retriever.search("Nimbus Desktop sync", k=1)
    assert desktop["title"] == "How to turn on Sync in Nimbus Desktop"
    [expenses] = retriever.search("What is the expense limit for client dinners?", k=1)
    assert expenses["title"] == "Expense policy" and "€80 per attendee" in expenses["text"]
    # the demo's ambiguous query: both products' Sync pages come first, with close scores
    top = retriever.search("How do I turn on sync?", k=4)
    assert {p["title"] for p in top[:2]} == {
        "How to turn on Sync in Nimbus Cloud",
        "How to turn on Sync in Nimbus Desktop",
    }
    assert abs(top[0]["score"] - top[1]["score"]) < 0.1


def test_embedding_function_shares_the_one_loaded_model():
    model = load_sentence_transformer("bundled:all-minilm-l6-v2")
    function = make_embedding_function("bundled:all-minilm-l6-v2")
    assert SentenceTransformerEmbeddingFunction.models[function.model_name] is model
    assert load_sentence_transformer("bundled:all-minilm-l6-v2") is model
    [vector] = function(["How do I turn on sync?"])
    assert vector.shape == (384,)
    assert abs(float((vector**2).sum()) - 1.0) < 1e-4  # normalised for the cosine space


def test_local_embeddings_are_chromas_vectors():
    [chroma] = make_embedding_function("bundled:all-minilm-l6-v2")(["How do I turn on sync?"])
    embeddings = LocalEmbeddings()
    [document] = embeddings.embed_documents(["How do I turn on sync?"])
    assert embeddings.embed_query("How do I turn on sync?") == document and len(document) == 384
    assert max(abs(a - float(b)) for a, b in zip(document, chroma)) < 1e-6
