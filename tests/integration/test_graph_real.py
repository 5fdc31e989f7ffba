"""The whole graph with the real bundled base model (no adapter), the real MiniLM embeddings and a
real on-disk Chroma over the bundled corpus."""

from __future__ import annotations

from dataclasses import replace

import pytest
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from askbetter.settings import Settings

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def graph_parts(tmp_path_factory):
    """(settings, clarifier, compiled graph) over a Chroma folder holding the bundled corpus."""
    from askbetter.clarifier.local import LocalClarifier
    from askbetter.graph.factory import create_clarifying_rag
    from askbetter.retrieval.corpus import bundled_corpus_dir
    from askbetter.retrieval.ingest import ingest
    from askbetter.retrieval.store import ChromaRetriever, open_collection

    with pytest.MonkeyPatch.context() as env:
        env.setenv("HF_HUB_OFFLINE", "1")
        settings = replace(
            Settings.from_env(), adapter="none", max_answer_tokens=24,
            chroma_path=tmp_path_factory.mktemp("chroma"), chroma_host="", collection="integration",
        )
        collection = open_collection(settings)  # a PersistentClient on the tmp folder
        report = ingest([bundled_corpus_dir()], collection, settings.chunk_size, settings.chunk_overlap, progress=False)
        assert report.files_ingested == report.files_seen > 20 and not report.skipped
        clarifier = LocalClarifier.from_settings(settings)
        graph = create_clarifying_rag(clarifier=clarifier, retriever=ChromaRetriever(collection), settings=settings)
        yield settings, clarifier, graph.compile(checkpointer=InMemorySaver())


def assert_decision(decision, stage):
    assert decision["stage"] == stage and 0.0 <= decision["score"] <= 1.0
    assert decision["needs_clarification"] == (decision["question"] is not None)


def test_a_turn_runs_end_to_end_in_interrupt_mode(graph_parts):
    _, _, graph = graph_parts
    config = {"configurable": {"thread_id": "real-interrupt"}}
    out = graph.invoke({"messages": [("user", "How do I turn on sync?")]}, config, context={"ask_mode": "interrupt"})
    assert_decision(out["pre_decision"], "pre")
    if "__interrupt__" in out:  # the base model's own call; both outcomes are valid here
        payload = out["__interrupt__"][0].value
        assert payload["question"].strip() and payload["round"] == 1 and 0.0 <= payload["score"] <= 1.0
        out = graph.invoke(Command(resume="Nimbus Desktop"), config, context={"ask_mode": "interrupt"})
        assert [m.text for m in out["messages"][1:3]] == [payload["question"], "Nimbus Desktop"]
        assert "Nimbus Desktop" in out["query"]
    assert "__interrupt__" not in out  # one round at most
    titles = [p["title"] for p in out["documents"]]
    assert any("Sync" in title for title in titles), titles
    assert_decision(out["post_decision"], "post")
    answer = out["messages"][-1]
    assert isinstance(answer, AIMessage) and "\n\nSources:\n[1] " in answer.text
    assert answer.text.split("\n\nSources:")[0].strip()  # the model wrote something


def test_a_blank_reply_to_the_real_clarifiers_question_answers_the_query_asked_about(graph_parts):
    """The real clarifier refuses a dialog that ends on its own question (the blank reply dropped):
    a blank reply declines the question, and the turn answers without another check."""
    _, _, graph = graph_parts
    config = {"configurable": {"thread_id": "real-blank-reply"}}
    context = {"ask_mode": "interrupt", "threshold": 0.0}  # every check asks
    out = graph.invoke({"messages": [("user", "How do I turn on sync?")]}, config, context=context)
    assert out["__interrupt__"][0].value["stage"] == "pre"
    out = graph.invoke(Command(resume=""), config, context=context)
    assert "__interrupt__" not in out and out["query"] == "How do I turn on sync?"
    assert out["messages"][-1].text.split("\n\nSources:")[0].strip()


def test_the_answer_model_shares_the_clarifiers_weights(graph_parts):
    from askbetter.graph.defaults import local_chat_model

    settings, clarifier, _ = graph_parts
    assert local_chat_model(settings)._loaded() is clarifier.loaded


def test_overlong_turn_is_truncated_not_fatal(graph_parts):
    _, _, graph = graph_parts
    config = {"configurable": {"thread_id": "real-long"}}
    with pytest.warns(UserWarning):
        out = graph.invoke({"messages": [("user", "How do I turn on sync? " * 2000)]}, config,
                           context={"ask_mode": "message", "post_check": False, "top_k": 1})
    assert isinstance(out["messages"][-1], AIMessage) and out["messages"][-1].text.strip()
    assert len(out["query"]) <= 2 * graph_parts[0].max_input_tokens


def test_astream_and_gathered_ainvoke_with_the_real_models(graph_parts):
    """As a server runs it: `astream` (updates and messages) in interrupt mode and its resume, then
    two turns gathered with `ainvoke`, each the text it is alone."""
    import asyncio

    from askbetter.nodes.answer import SOURCES_TAG

    _, _, graph = graph_parts
    config = {"configurable": {"thread_id": "real-async"}}
    interrupt = {"ask_mode": "interrupt"}
    message_mode = {"ask_mode": "message", "post_check": False}
    turns = ["Where can I park in Berlin?", "How do I export my notes from Nimbus Desktop?"]

    def send(text, name):
        return {"messages": [("user", text)]}, {"configurable": {"thread_id": f"real-{name}"}}

    async def stream(payload):
        return [p async for p in graph.astream(payload, config, context=interrupt, stream_mode=["updates", "messages"])]

    async def run():
        parts = await stream({"messages": [("user", "How do I turn on sync?")]})
        if any(mode == "updates" and "__interrupt__" in chunk for mode, chunk in parts):
            parts += await stream(Command(resume="Nimbus Desktop"))
        gathered = await asyncio.gather(*(graph.ainvoke(*send(t, f"g{i}"), context=message_mode) for i, t in enumerate(turns)))
        return parts, gathered

    parts, gathered = asyncio.run(asyncio.wait_for(run(), 300))
    final = graph.get_state(config).values["messages"][-1]
    assert isinstance(final, AIMessage) and "\n\nSources:\n[1] " in final.text
    answer = [chunk for mode, chunk in parts if mode == "messages" and chunk[1]["langgraph_node"] == "answer"]
    assert len(answer) > 2 and answer[-1][1]["tags"] == [SOURCES_TAG]  # its tokens, then its Sources
    assert "".join(m.text for m, _ in answer) == final.text
    alone = [graph.invoke(*send(t, f"a{i}"), context=message_mode) for i, t in enumerate(turns)]
    assert [[m.text for m in s["messages"]] for s in gathered] == [[m.text for m in s["messages"]] for s in alone]


@pytest.mark.parametrize("node", ["rewrite", "pre_check"])
def test_a_turn_cancelled_mid_rewrite_or_mid_question_stops_within_a_few_forward_passes(graph_parts, node,
                                                                                        monkeypatch):
    """With the real models under `astream`: a follow-up's rewrite, or the question of a check that
    asks (a run threshold of 0), cancelled at its third token makes at most 3 more forward passes,
    where the same node run whole (sync, the graph paused after it) makes many more."""
    import asyncio

    from tiny_model import counted, steps_after_a_cancel

    _, clarifier, graph = graph_parts
    steps: list[int] = []
    monkeypatch.setattr(clarifier.loaded.model, "forward", counted(clarifier.loaded.model.forward, steps))
    payload = {"messages": [("user", "How do I turn on sync?")]}
    if node == "rewrite":
        payload["messages"][:0] = [("user", "Tell me about Nimbus Desktop."), ("assistant", "It is a notes app.")]
    context = {"threshold": 0.0, "ask_mode": "message"}
    whole_node = {"configurable": {"thread_id": f"real-whole-{node}"}}
    graph.invoke(payload, whole_node, context=context, interrupt_after=[node])
    whole, steps[:] = len(steps), []
    at = 3 if node == "rewrite" else 4  # the score's forward pass, then the question's third token

    async def run():
        config = {"configurable": {"thread_id": f"real-cancelled-{node}"}}
        async for _ in graph.astream(payload, config, context=context, stream_mode="updates"):
            pass

    assert whole >= at + 6 and asyncio.run(asyncio.wait_for(steps_after_a_cancel(run, steps, at), 120)) <= 3, whole
