"""askbetter: a LangGraph plugin that makes a RAG agent ask a clarification question when, and only
when, the user's query needs one.

    from langgraph.checkpoint.memory import InMemorySaver
    from askbetter import create_clarifying_rag

    graph = create_clarifying_rag().compile(checkpointer=InMemorySaver())
    graph.invoke({"messages": [("user", "How do I turn on sync?")]},
                 {"configurable": {"thread_id": "1"}}, context={"ask_mode": "interrupt"})

The names below are imported on first use (`askbetter.lazy`): `askbetter.settings` is imported
by every subpackage, and an eager import here would load them all, in a circle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from askbetter.lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "create_clarifying_rag": "askbetter.graph.factory",
    "Context": "askbetter.graph.context",
    "RagState": "askbetter.graph.state",
    "Settings": "askbetter.settings",
    "Clarifier": "askbetter.clarifier.types",
    "Decision": "askbetter.clarifier.types",
    "LocalClarifier": "askbetter.clarifier.local",
    "load_model": "askbetter.clarifier.assets",
    "LocalChatModel": "askbetter.nodes.chat_model",
    "Retriever": "askbetter.retrieval.types",
    "Passage": "askbetter.retrieval.types",
    "ChromaRetriever": "askbetter.retrieval.store",
    "LocalEmbeddings": "askbetter.retrieval.embeddings",
    "make_client": "askbetter.retrieval.store",
    "open_collection": "askbetter.retrieval.store",
    "ingest": "askbetter.retrieval.ingest",
    "bundled_corpus_dir": "askbetter.retrieval.corpus",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:
    from askbetter.clarifier.assets import load_model
    from askbetter.clarifier.local import LocalClarifier
    from askbetter.clarifier.types import Clarifier, Decision
    from askbetter.graph.context import Context
    from askbetter.graph.factory import create_clarifying_rag
    from askbetter.graph.state import RagState
    from askbetter.nodes.chat_model import LocalChatModel
    from askbetter.retrieval.corpus import bundled_corpus_dir
    from askbetter.retrieval.embeddings import LocalEmbeddings
    from askbetter.retrieval.ingest import ingest
    from askbetter.retrieval.store import ChromaRetriever, make_client, open_collection
    from askbetter.retrieval.types import Passage, Retriever
    from askbetter.settings import Settings


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
