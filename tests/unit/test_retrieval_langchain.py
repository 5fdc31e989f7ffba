"""A LangChain retriever passed as it is as the graph's retriever: its documents as passages, through
the compiled graph (sync and async runs), a durable checkpointer and a trace."""

from __future__ import annotations

import asyncio
import datetime
import json
import sqlite3
import uuid
from pathlib import Path

import numpy as np
import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import HumanMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from askbetter.graph.factory import create_clarifying_rag
from askbetter.graph.testing import ScriptedClarifier, StaticRetriever
from askbetter.retrieval.langchain import LangChainRetriever, to_passage
from askbetter.settings import Settings

ANSWER = "Open Preferences and choose Sync [1]."
DOCUMENTS = [
    Document(id="desktop-sync", page_content="Choose Preferences > Sync.",
             metadata={"title": "Sync in Nimbus Desktop", "source": "/docs/desktop-sync.md", "page": 2}),
    Document(id="cloud-sync", page_content="Admins turn on Cloud Sync.",
             metadata={"title": "Sync in Nimbus Cloud", "source": "https://docs.example.com/cloud-sync"}),
    Document(page_content="Park in the garage.", metadata={"source": "/docs/parking.md"}),
]
# DOCUMENTS as passages, and the answer's Sources list for the first two
PASSAGES = [
    {"id": "desktop-sync", "text": "Choose Preferences > Sync.", "title": "Sync in Nimbus Desktop",
     "source": "/docs/desktop-sync.md", "metadata": {"page": 2}},
    {"id": "cloud-sync", "text": "Admins turn on Cloud Sync.", "title": "Sync in Nimbus Cloud",
     "source": "https://docs.example.com/cloud-sync"},
    {"text": "Park in the garage.", "source": "/docs/parking.md"},
]
SOURCES = ("Sources:\n[1] Sync in Nimbus Desktop (desktop-sync.md)\n"
           "[2] Sync in Nimbus Cloud (https://docs.example.com/cloud-sync)")


class ListRetriever(BaseRetriever):
    """The same documents for every query; records which of its methods ran, with the query."""

    documents: list[Document]
    calls: list[tuple[str, str]] = []

    def _get_relevant_documents(self, query, *, run_manager):
        self.calls.append(("sync", query))
        return self.documents

    async def _aget_relevant_documents(self, query, *, run_manager):
        self.calls.append(("async", query))
        return self.documents


def graph_over(retriever, clarifier=None, checkpointer=None, turns=1):
    return create_clarifying_rag(
        clarifier=clarifier or ScriptedClarifier(pre=[None] * turns, post=[None] * turns), retriever=retriever,
        answer_model=GenericFakeChatModel(messages=iter([ANSWER] * turns)), rewriter=lambda messages: messages[-1].text,
        settings=Settings(),
    ).compile(checkpointer=checkpointer or InMemorySaver())


def run(graph, text, mode="invoke", context=None, callbacks=()):
    config = {"configurable": {"thread_id": str(uuid.uuid4())}, "callbacks": list(callbacks)}
    inputs = {"messages": [HumanMessage(text)]}
    if mode == "ainvoke":
        return asyncio.run(graph.ainvoke(inputs, config, context=context))
    return graph.invoke(inputs, config, context=context)


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_a_langchain_retrievers_documents_reach_post_check_and_the_sources_as_passages(mode):
    retriever = ListRetriever(documents=DOCUMENTS)
    clarifier = ScriptedClarifier(pre=[None], post=[None])
    out = run(graph_over(retriever, clarifier), "How do I turn on sync?", mode, context={"top_k": 2})
    # an async run awaits the retriever's async method (a vector store's async client)
    assert retriever.calls == [("sync" if mode == "invoke" else "async", "How do I turn on sync?")]
    assert out["documents"] == PASSAGES[:2]  # the run's top_k of the retriever's documents
    assert clarifier.calls[1][0] == "post"  # the clarifier reads a passage's id, title and text
    assert clarifier.calls[1][2] == [{key: p[key] for key in ("id", "title", "text")} for p in PASSAGES[:2]]
    assert out["messages"][-1].text == f"{ANSWER}\n\n{SOURCES}"


@pytest.mark.parametrize("wrap", [lambda r: r, lambda r: r.with_retry()], ids=["as_retriever", "with_retry"])
def test_a_vector_stores_retriever_is_used_as_it_is(wrap):
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_documents(DOCUMENTS)
    out = run(graph_over(wrap(store.as_retriever())), "Admins turn on Cloud Sync.", context={"top_k": 1})
    # the query is that document's text: its nearest; no score, as the vector store gives none
    assert out["documents"] == [PASSAGES[1]]
    assert out["messages"][-1].text.endswith("Sources:\n[1] Sync in Nimbus Cloud (https://docs.example.com/cloud-sync)")


def test_metadata_the_checkpointer_cannot_store_is_kept_as_json(tmp_path):
    """LangGraph's checkpointers refuse a numpy number or an object in the state, and keep a
    datetime or a path as themselves, which JSON has no type for (a server's API, `json.dumps`)."""

    class Loader:
        def __str__(self):
            return "PDFLoader"

    document = Document(page_content="Choose Preferences > Sync.", metadata={
        "source": Path("/docs/desktop-sync.md"), "distance": np.float32(0.25), "rank": np.int64(1),
        "modified": datetime.date(2024, 5, 1), "loader": Loader(), "pages": (1, 2), "flags": {3: True},
    })
    saver = SqliteSaver(sqlite3.connect(str(tmp_path / "threads.sqlite"), check_same_thread=False))
    out = run(graph_over(ListRetriever(documents=[document]), checkpointer=saver), "How do I turn on sync?")
    [passage] = out["documents"]
    assert passage == {"text": "Choose Preferences > Sync.", "source": "/docs/desktop-sync.md", "metadata": {
        "distance": 0.25, "rank": 1, "modified": "2024-05-01", "loader": "PDFLoader", "pages": [1, 2],
        "flags": {"3": True}}}
    assert json.loads(json.dumps(out["documents"])) == out["documents"]
    saver.conn.close()


def test_numpy_bools_and_arrays_keep_their_json_types():
    metadata = {"ok": np.bool_(True), "vector": np.array([0.5, 1.0], dtype=np.float32), "grid": np.arange(4).reshape(2, 2)}
    assert to_passage(Document(page_content="a", metadata=metadata))["metadata"] == {
        "ok": True, "vector": [0.5, 1.0], "grid": [[0, 1], [2, 3]]}


@pytest.mark.parametrize(("metadata", "passage"), [
    ({"id": 7, "relevance_score": 0.83}, {"id": "7", "score": 0.83}),  # a reranker's score
    ({"score": 0.5, "relevance_score": 0.9}, {"score": 0.5, "metadata": {"relevance_score": 0.9}}),
    ({"score": 12.5}, {"metadata": {"score": 12.5}}),  # not a similarity in [0, 1]: no score
    ({"score": True, "title": None}, {"metadata": {"score": True}}),
])
def test_a_documents_id_and_score_come_from_its_metadata_where_it_has_them(metadata, passage):
    assert to_passage(Document(page_content="a", metadata=metadata)) == {"text": "a", **passage}


def test_the_documents_own_id_comes_before_its_metadatas():
    document = Document(id="chunk-1", page_content="a", metadata={"id": "file-9"})
    assert to_passage(document) == {"id": "chunk-1", "text": "a", "metadata": {"id": "file-9"}}


def test_the_retrieval_is_the_retrieve_nodes_child_run_in_a_trace():
    class Runs(BaseCallbackHandler):
        def __init__(self):
            self.chains = {}  # run id: name
            self.retriever_parents = []

        def on_chain_start(self, serialized, inputs, *, run_id, name=None, **kwargs):
            self.chains[run_id] = name

        def on_retriever_start(self, serialized, query, *, run_id, parent_run_id=None, **kwargs):
            self.retriever_parents.append(parent_run_id)

    runs = Runs()
    graph = graph_over(ListRetriever(documents=DOCUMENTS), turns=2)
    for mode in ("invoke", "ainvoke"):
        run(graph, "How do I turn on sync?", mode, callbacks=[runs])
    assert [runs.chains.get(parent) for parent in runs.retriever_parents] == ["retrieve", "retrieve"]


@pytest.mark.parametrize(("returns", "error"), [
    ("Choose Sync.", "returned str, not a list of LangChain Documents"),
    ([{"text": "Choose Sync."}], "returned dict \"{'text': 'Choose Sync.'}\", not a LangChain Document"),
])
def test_a_runnable_returning_no_documents_is_a_clear_error(returns, error):
    graph = graph_over(RunnableLambda(lambda query: returns, name="docs"))
    with pytest.raises(TypeError) as caught:
        run(graph, "How do I turn on sync?")
    assert str(caught.value) == f"the LangChain retriever docs {error}"


def test_wrapping_what_is_no_langchain_runnable_is_refused_when_wrapped():
    with pytest.raises(TypeError) as caught:
        LangChainRetriever(StaticRetriever([{"text": "Choose Sync."}]))
    assert str(caught.value) == ("LangChainRetriever wraps a LangChain retriever or runnable, not StaticRetriever "
                                 "(an askbetter Retriever goes to create_clarifying_rag as it is)")
