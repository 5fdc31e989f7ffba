"""A graph worker over fakes whose threads live in a given checkpointer: the workers of the
durable-checkpointer tests (`unit/test_graph_sqlite.py`, `unit/test_graph_postgres.py`), in the
test process and in the second worker's subprocess alike."""

from __future__ import annotations

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver

from askbetter.graph.factory import create_clarifying_rag
from askbetter.graph.testing import ScriptedClarifier, StaticRetriever
from askbetter.settings import Settings

PASSAGES = [{"id": "d1", "title": "Sync in Nimbus Desktop", "text": "Choose Preferences > Sync.", "score": 0.7}]
QUESTION = "Which product: Nimbus Cloud or Nimbus Desktop?"
ANSWER = "Open Preferences and choose Sync [1]."
CONTEXT = {"ask_mode": "interrupt"}
ASKED = ["How do I turn on sync?", QUESTION, "Nimbus Desktop"]  # a paused thread's messages, with the reply


def graph_on(saver: BaseCheckpointSaver, clarifier: ScriptedClarifier, answer: str = ANSWER):
    """A worker's graph over fakes whose checkpoints live where `saver` keeps them."""
    return create_clarifying_rag(
        clarifier=clarifier,
        retriever=StaticRetriever(PASSAGES),
        answer_model=GenericFakeChatModel(messages=iter([answer])),
        rewriter=lambda messages: messages[-1].text,
        settings=Settings(),
    ).compile(checkpointer=saver)
