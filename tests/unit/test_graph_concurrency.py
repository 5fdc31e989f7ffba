"""The graph as a server runs it: from async code (`ainvoke`, `astream`), several turns at once on
one compiled graph and checkpointer, the default components' first use from several threads, and a
turn cancelled mid-generation. Over fakes and the tiny model (the real models: test_graph_real.py)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.constants import CONFIG_KEY_CHECKPOINTER
from langgraph.types import Command

from askbetter import torch_thread
from askbetter.clarifier.assets import LoadedModel
from askbetter.clarifier.local import LocalClarifier
from askbetter.graph.context import default_context
from askbetter.graph.factory import create_clarifying_rag
from askbetter.graph.testing import ScriptedClarifier, StaticRetriever
from askbetter.graph.trace import arun_turn
from askbetter.nodes.answer import SOURCES_TAG
from askbetter.nodes.chat_model import LocalChatModel
from askbetter.retrieval.errors import RetrievalError
from askbetter.settings import Settings
from tiny_model import slowed_tiny_model, steps_after_a_cancel

PASSAGES = [{"id": "d1", "title": "Sync in Nimbus Desktop", "text": "Choose Preferences > Sync.", "score": 0.7,
             "source": "/c/desktop-sync.md"}]
SOURCES = "\n\nSources:\n[1] Sync in Nimbus Desktop (desktop-sync.md)"
TURNS = ["how do i turn on sync", "open the preferences", "nimbus desktop sync", "cite the question",
         "how do i open nimbus", "turn on desktop"]
FOLLOW_UP = {"messages": [HumanMessage(TURNS[0]), AIMessage(TURNS[1]), HumanMessage(TURNS[2])]}
TIMEOUT = 60  # seconds: a deadlock fails the test instead of hanging it


def fake_graph(pre: list[str | None], answer: str = "Open Preferences [1]."):
    return create_clarifying_rag(
        clarifier=ScriptedClarifier(pre=pre, post=[None]), retriever=StaticRetriever(PASSAGES),
        answer_model=GenericFakeChatModel(messages=iter([answer])), rewriter=lambda messages: messages[-1].text,
        settings=Settings(),
    ).compile(checkpointer=InMemorySaver())


def tiny_graph(loaded: LoadedModel, *, threshold: float = 0.5, max_new_tokens: int = 12):
    """Every model the tiny one: the clarifier (its score and question), the rewrite and the answer."""
    chat = LocalChatModel(loaded=loaded, max_new_tokens=max_new_tokens)
    return create_clarifying_rag(
        clarifier=LocalClarifier(loaded, threshold=threshold, max_question_tokens=6),
        retriever=StaticRetriever(PASSAGES), answer_model=chat, rewriter=chat, settings=Settings(),
    ).compile(checkpointer=InMemorySaver())


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def user(text: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


# ---------------------------------------------------------------- async


def test_ainvoke_answers_a_clear_turn_and_resumes_an_interrupted_one():
    async def turns() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        clear = await fake_graph([None]).ainvoke(user("How do I turn on sync?"), thread("clear"))
        asking = fake_graph(["Cloud or Desktop?", None])
        paused = await asking.ainvoke(user("How do I turn on sync?"), thread("ask"), context={"ask_mode": "interrupt"})
        resumed = await asking.ainvoke(Command(resume="Desktop"), thread("ask"), context={"ask_mode": "interrupt"})
        return clear, paused, resumed

    clear, paused, resumed = asyncio.run(asyncio.wait_for(turns(), TIMEOUT))
    assert clear["messages"][-1].text == "Open Preferences [1]." + SOURCES
    assert paused["__interrupt__"][0].value["question"] == "Cloud or Desktop?"
    assert [m.text for m in resumed["messages"][1:3]] == ["Cloud or Desktop?", "Desktop"]
    assert resumed["messages"][-1].text == "Open Preferences [1]." + SOURCES


def test_astream_streams_updates_and_the_answers_tokens_then_its_sources():
    graph = fake_graph([None], answer="Open Preferences then Sync [1].")

    async def stream() -> list[tuple[str, Any]]:
        return [part async for part in graph.astream(user("How do I turn on sync?"), thread("s"),
                                                     stream_mode=["updates", "messages"])]

    parts = asyncio.run(asyncio.wait_for(stream(), TIMEOUT))
    assert [next(iter(chunk)) for mode, chunk in parts if mode == "updates"] == [
        "rewrite", "pre_check", "retrieve", "post_check", "answer"]
    chunks = [chunk for mode, chunk in parts if mode == "messages"]
    assert all(isinstance(m, AIMessageChunk) and meta["langgraph_node"] == "answer" for m, meta in chunks)
    *tokens, (sources, meta) = chunks
    assert len(tokens) > 2 and meta["tags"] == [SOURCES_TAG] and sources.text == SOURCES
    assert "".join(m.text for m, _ in chunks) == graph.get_state(thread("s")).values["messages"][-1].text


def test_astream_rewrites_a_follow_up_with_a_chat_model_and_streams_the_answers_tokens_alone():
    model = GenericFakeChatModel(messages=iter(["how do i turn on sync in nimbus desktop", "Choose Sync [1]."]))
    graph = create_clarifying_rag(
        clarifier=ScriptedClarifier(pre=[None], post=[None]), retriever=(retriever := StaticRetriever(PASSAGES)),
        answer_model=model, settings=Settings(),  # the rewriter too
    ).compile(checkpointer=InMemorySaver())

    async def stream() -> list[tuple[AIMessageChunk, dict[str, Any]]]:
        return [chunk async for chunk in graph.astream(FOLLOW_UP, thread("rewrite"), stream_mode="messages")]

    chunks = asyncio.run(asyncio.wait_for(stream(), TIMEOUT))
    assert retriever.queries == ["how do i turn on sync in nimbus desktop"]  # the model's rewrite
    assert {meta["langgraph_node"] for _, meta in chunks} == {"answer"}
    assert "".join(m.text for m, _ in chunks) == "Choose Sync [1]." + SOURCES


class WithQuestion(ScriptedClarifier):
    """A user's clarifier: a sync `check` and `question`, no async methods."""

    def question(self, messages: list[Any], documents: list[Any] | None = None) -> str:
        return "Cloud or Desktop?"


@pytest.mark.parametrize("default", [False, True], ids=["given", "the default built by a stub"])
def test_an_async_run_asks_with_a_sync_clarifiers_question_at_a_run_threshold_below_its_own(default: bool,
                                                                                               monkeypatch):
    clarifier = WithQuestion(pre=[None], post=[None])
    if default:
        monkeypatch.setattr(LocalClarifier, "from_settings", classmethod(lambda cls, settings: clarifier))
    graph = create_clarifying_rag(
        clarifier=None if default else clarifier, retriever=StaticRetriever(PASSAGES),
        answer_model=GenericFakeChatModel(messages=iter([])), rewriter=lambda messages: messages[-1].text,
        settings=Settings(),
    ).compile(checkpointer=InMemorySaver())
    out = asyncio.run(asyncio.wait_for(graph.ainvoke(user(TURNS[0]), thread("q"), context={"threshold": 0.05}),
                                       TIMEOUT))
    assert out["__interrupt__"][0].value["question"] == "Cloud or Desktop?"


@pytest.mark.parametrize("check", ["pre_check", "post_check"])
def test_an_async_turn_that_rewrites_and_asks_is_the_sync_one(check: str):
    """The async nodes await the models (the rewrite, the check's score and question) where the sync
    ones call them: the same turn, forward pass for forward pass."""
    steps: list[int] = []
    graph = tiny_graph(slowed_tiny_model(0.0, steps), threshold=0.0)  # every check asks
    context = {"pre_check": check == "pre_check", "ask_mode": "message"}
    sync = graph.invoke(FOLLOW_UP, thread("sync"), context=context)
    sync_steps, steps[:] = len(steps), []
    asynchronous = asyncio.run(asyncio.wait_for(graph.ainvoke(FOLLOW_UP, thread("async"), context=context), TIMEOUT))
    fields = ("query", "pre_decision", "post_decision", "documents")
    assert [asynchronous[f] for f in fields] == [sync[f] for f in fields]
    assert texts(asynchronous) == texts(sync) and sync[check.replace("check", "decision")]["question"]
    assert len(steps) == sync_steps > 2


def test_the_event_loop_runs_on_while_a_turn_generates():
    """LangGraph runs the sync nodes in an executor, and the models' thread waits in neither: other
    coroutines (a server's other requests) run between the answer's tokens. (Counted, not timed.)"""
    graph = tiny_graph(slowed_tiny_model(0.02), threshold=1.1, max_new_tokens=40)

    async def ticks_between_first_and_last_token() -> list[int]:
        ticks = 0
        done = asyncio.Event()

        async def tick() -> None:
            nonlocal ticks
            while not done.is_set():
                await asyncio.sleep(0.001)
                ticks += 1

        ticker = asyncio.create_task(tick())
        at_tokens: list[int] = []
        async for mode, chunk in graph.astream(user("how do i turn on sync"), thread("loop"),
                                               stream_mode=["updates", "messages"]):
            if mode == "messages" and chunk[1].get("langgraph_node") == "answer" and chunk[0].text:
                at_tokens.append(ticks)
        done.set()
        await ticker
        return at_tokens

    at_tokens = asyncio.run(asyncio.wait_for(ticks_between_first_and_last_token(), TIMEOUT))
    assert len(at_tokens) > 2 and at_tokens[-1] > at_tokens[0], at_tokens


# ---------------------------------------------------------------- several turns at once


def texts(state: dict[str, Any]) -> list[str]:
    return [m.text for m in state["messages"]]


def test_turns_at_once_from_threads_or_gathered_equal_each_turn_alone():
    """One compiled graph and checkpointer, a thread_id a turn: no deadlock, no cross-talk, and
    greedy decoding gives each turn the text it gets alone."""
    graph = tiny_graph(slowed_tiny_model(0.002))

    def run(i: int, prefix: str) -> list[str]:
        for _ in graph.stream(user(TURNS[i]), thread(f"{prefix}{i}"), stream_mode=["updates", "messages"]):
            pass
        return texts(graph.get_state(thread(f"{prefix}{i}")).values)

    alone = [run(i, "alone") for i in range(len(TURNS))]
    with ThreadPoolExecutor(len(TURNS)) as pool:
        futures = [pool.submit(run, i, "pool") for i in range(len(TURNS))]
        assert [f.result(timeout=TIMEOUT) for f in futures] == alone

    async def gathered() -> list[dict[str, Any]]:
        return await asyncio.gather(*(graph.ainvoke(user(t), thread(f"gather{i}")) for i, t in enumerate(TURNS)))

    assert [texts(s) for s in asyncio.run(asyncio.wait_for(gathered(), TIMEOUT))] == alone


def test_the_default_components_load_once_when_several_turns_start_at_once(monkeypatch):
    """First use from several threads at once: one clarifier, one retriever, one model load."""
    from askbetter.clarifier import assets
    from askbetter.graph.defaults import LazyClarifier, LazyRetriever
    from askbetter.retrieval.store import ChromaRetriever

    builds: list[str] = []

    def slow_build(name: str, value: Any) -> Any:
        builds.append(name)
        time.sleep(0.2)  # long enough for every thread to arrive while the first builds
        return value

    loaded = slowed_tiny_model()
    monkeypatch.setattr(LocalClarifier, "from_settings", classmethod(lambda cls, s: slow_build("clarifier", object())))
    monkeypatch.setattr(ChromaRetriever, "from_settings", classmethod(lambda cls, s: slow_build("retriever", object())))
    monkeypatch.setattr(assets, "load_model", lambda settings: slow_build("model", loaded))
    clarifier, retriever = LazyClarifier(Settings()), LazyRetriever(Settings())
    chat = LocalChatModel(settings=Settings())
    with ThreadPoolExecutor(6) as pool:
        got = [pool.submit(lambda: (clarifier.get(), retriever.get(), chat._loaded())) for _ in range(6)]
        results = [f.result(timeout=TIMEOUT) for f in got]
    assert sorted(builds) == ["clarifier", "model", "retriever"]
    assert len({tuple(map(id, r)) for r in results}) == 1


# ---------------------------------------------------------------- a cancelled turn


def test_a_turn_cancelled_mid_generation_halts_it_and_the_models_thread_serves_the_next():
    """A client that goes away (the astream task cancelled) while the answer generates: the
    generation halts within a step or two of the cancel (not its 60 tokens), and the next turn is
    what it is alone."""
    steps: list[int] = []
    graph = tiny_graph(slowed_tiny_model(0.01, steps), threshold=1.1, max_new_tokens=60)
    alone = texts(graph.invoke(user(TURNS[1]), thread("alone")))

    async def cancel_then_next() -> tuple[int, int, dict[str, Any]]:
        tokens = 0

        async def stream() -> None:
            nonlocal tokens
            async for mode, _ in graph.astream(user(TURNS[0]), thread("gone"), stream_mode=["updates", "messages"]):
                tokens += mode == "messages"
                if tokens == 3:
                    reading.set()

        reading = asyncio.Event()
        task = asyncio.create_task(stream())
        await reading.wait()
        task.cancel()
        at_cancel = len(steps)
        with pytest.raises(asyncio.CancelledError):
            await task
        await torch_thread.arun(lambda: None)  # queued after the generation
        return tokens, len(steps) - at_cancel, await graph.ainvoke(user(TURNS[1]), thread("next"))

    tokens, steps_after_cancel, after = asyncio.run(asyncio.wait_for(cancel_then_next(), TIMEOUT))
    assert tokens >= 3 and steps_after_cancel <= 3, steps_after_cancel
    assert texts(after) == alone


class KeepErrors(BaseCallbackHandler):
    """A callback handler that keeps the errors it is told of (as one that reports them later
    would): their tracebacks keep the frames they passed through."""

    def __init__(self) -> None:
        self.errors: list[BaseException] = []

    def on_llm_error(self, error: BaseException, **kwargs: Any) -> None:
        self.errors.append(error)

    def on_chain_error(self, error: BaseException, **kwargs: Any) -> None:
        self.errors.append(error)


@pytest.mark.parametrize("how", ["ainvoke", "astream updates", "astream messages, errors kept"])
def test_a_turn_cancelled_mid_answer_halts_its_generation_however_it_runs(how: str):
    """The answer is the only model call: cancelled at its third forward step, its generation halts
    within a step or two (not its 60), whether the model streams (`messages` mode) or not, and
    whatever keeps the cancellation's traceback."""
    steps: list[int] = []
    graph = create_clarifying_rag(
        clarifier=ScriptedClarifier(pre=[None], post=[None]), retriever=StaticRetriever(PASSAGES),
        answer_model=LocalChatModel(loaded=slowed_tiny_model(0.01, steps), max_new_tokens=60),
        rewriter=lambda messages: messages[-1].text, settings=Settings(),
    ).compile(checkpointer=InMemorySaver())
    keep = KeepErrors()
    config = {**thread(how), "callbacks": [keep]}

    async def run() -> None:
        if how == "ainvoke":
            await graph.ainvoke(user(TURNS[0]), config)
            return
        mode = "updates" if how == "astream updates" else "messages"
        async for _ in graph.astream(user(TURNS[0]), config, stream_mode=mode):
            pass

    assert asyncio.run(asyncio.wait_for(steps_after_a_cancel(run, steps), TIMEOUT)) < 10  # of the 57 left


def test_a_turn_cancelled_mid_rewrite_halts_the_rewriters_generation():
    """A follow-up is rewritten by the chat model: cancelled at the rewrite's third forward step,
    its generation halts within a step or two, not its 60 (the async node awaits the model)."""
    steps: list[int] = []
    graph = create_clarifying_rag(
        clarifier=ScriptedClarifier(), retriever=StaticRetriever(PASSAGES),  # neither reached
        answer_model=GenericFakeChatModel(messages=iter([])),
        rewriter=LocalChatModel(loaded=slowed_tiny_model(0.01, steps), max_new_tokens=60), settings=Settings(),
    ).compile(checkpointer=InMemorySaver())

    async def run() -> None:
        async for _ in graph.astream(FOLLOW_UP, thread("rewrite"), stream_mode=["updates", "messages"]):
            pass

    assert asyncio.run(asyncio.wait_for(steps_after_a_cancel(run, steps), TIMEOUT)) <= 3  # of the 57 left


@pytest.mark.parametrize("how", ["pre_check", "post_check", "a run's threshold", "the default clarifier"])
def test_a_turn_cancelled_while_a_check_asks_halts_the_questions_generation(how: str, monkeypatch):
    """A check that asks: its score (one forward pass), then its question, cancelled at the
    question's second step. The generation halts within a step or two, not its 60, in either check,
    when the question comes from a run's lower threshold (`question` after `check`), and with the
    default clarifier (`LazyClarifier`)."""
    steps: list[int] = []
    threshold = 1.1 if how == "a run's threshold" else 0.0  # 1.1: never asks alone; 0.0: always
    clarifier = LocalClarifier(slowed_tiny_model(0.01, steps), threshold=threshold, max_question_tokens=60)
    if how == "the default clarifier":
        monkeypatch.setattr(LocalClarifier, "from_settings", classmethod(lambda cls, settings: clarifier))
    graph = create_clarifying_rag(
        clarifier=None if how == "the default clarifier" else clarifier, retriever=StaticRetriever(PASSAGES),
        answer_model=GenericFakeChatModel(messages=iter([])), rewriter=lambda messages: messages[-1].text,
        settings=Settings(),
    ).compile(checkpointer=InMemorySaver())
    context = {"pre_check": how != "post_check", "threshold": 0.0 if how == "a run's threshold" else None}

    async def run() -> None:
        async for _ in graph.astream(user(TURNS[0]), thread(how), context=context, stream_mode="updates"):
            pass

    assert asyncio.run(asyncio.wait_for(steps_after_a_cancel(run, steps), TIMEOUT)) <= 3  # of the 58 left


class Hanging(ScriptedClarifier):
    """A clarifier whose async check of the turn `line` never ends (a model that hangs): the turn
    waits there. Other turns it judges as `ScriptedClarifier` does."""

    def __init__(self, line: str, **queues: Any) -> None:
        super().__init__(**queues)
        self.line = line

    async def acheck(self, messages: list[Any], documents: list[Any] | None = None) -> Any:
        if messages[-1]["content"] == self.line:
            await asyncio.Event().wait()
        return self.check(messages, documents)


class CannotDeleteAThread(InMemorySaver):
    """A checkpointer without `adelete_thread`: BaseCheckpointSaver's raises NotImplementedError."""

    async def adelete_thread(self, thread_id: str) -> None:
        raise NotImplementedError


async def stop_at_the_check(graph, payload: Any, config: dict[str, Any], context: Any) -> None:
    """Run `arun_turn` until the thread of `config` waits on the check, then cancel it."""
    head = {"configurable": {k: v for k, v in config["configurable"].items() if k != "checkpoint_id"}}
    task = asyncio.create_task(arun_turn(graph, payload, config, context))
    while (await graph.aget_state(head)).next != ("pre_check",):
        await asyncio.sleep(0.001)
    task.cancel()
    await task


def test_a_first_turn_stopped_on_a_checkpointer_that_cannot_delete_a_thread_still_ends_in_its_stop():
    """`arun_turn` undoes a stopped first turn by deleting its thread; where the checkpointer cannot,
    the turn is left as a cancelled `astream` leaves it, and the stop (CancelledError) goes on up,
    not the checkpointer's NotImplementedError."""
    graph = create_clarifying_rag(
        clarifier=Hanging(TURNS[0]), retriever=StaticRetriever(PASSAGES), answer_model=GenericFakeChatModel(messages=iter([])),
        rewriter=lambda messages: messages[-1].text, settings=Settings(),
    ).compile(checkpointer=CannotDeleteAThread())

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(asyncio.wait_for(stop_at_the_check(graph, user(TURNS[0]), thread("kept"),
                                                       default_context(Settings())), TIMEOUT))
    assert texts(graph.get_state(thread("kept")).values) == [TURNS[0]]


class CannotReachItsStore(InMemorySaver):
    """A checkpointer whose store is gone by the time a turn is undone: deleting a thread fails."""

    async def adelete_thread(self, thread_id: str) -> None:
        raise ConnectionError("the checkpointer's database is gone")


class ServerGone(StaticRetriever):
    def search(self, query: str, k: int = 4) -> list[Any]:
        raise RetrievalError("the Chroma server at localhost:8000 is not reachable")


@pytest.mark.parametrize("ending", ["stopped", "failed"])
def test_a_turn_whose_undo_fails_too_reports_the_undos_error_if_stopped_its_own_if_failed(ending: str, caplog):
    """A first turn's undo deletes its thread; where that fails, a stopped turn ends in the undo's
    error (the thread keeps what the stop left, which the caller must hear of), a failed turn (its
    retriever's server gone) in its own error, the undo's logged."""
    graph = create_clarifying_rag(
        clarifier=Hanging(TURNS[0]) if ending == "stopped" else ScriptedClarifier(pre=[None]),
        retriever=StaticRetriever(PASSAGES) if ending == "stopped" else ServerGone(PASSAGES),
        answer_model=GenericFakeChatModel(messages=iter([])), rewriter=lambda messages: messages[-1].text,
        settings=Settings(),
    ).compile(checkpointer=CannotReachItsStore())
    context = default_context(Settings())
    turn = (stop_at_the_check(graph, user(TURNS[0]), thread(ending), context) if ending == "stopped"
            else arun_turn(graph, user(TURNS[0]), thread(ending), context))

    with pytest.raises(ConnectionError if ending == "stopped" else RetrievalError):
        asyncio.run(asyncio.wait_for(turn, TIMEOUT))
    logged = [r.getMessage() for r in caplog.records if "could not be undone" in r.getMessage()]
    assert len(logged) == (ending == "failed")
    assert all("database is gone" in message for message in logged)


@pytest.mark.parametrize("turns_before", [0, 1])
def test_a_stopped_turn_is_undone_on_a_checkpointer_the_config_lends(turns_before: int):
    """A graph compiled without a checkpointer, run with one the config lends (as LangGraph
    runs a subgraph): a stopped first turn's thread is deleted from that checkpointer, a stopped later
    turn's thread is put back as it was before the turn (the undo used the graph's checkpointer
    only: None)."""
    graph = create_clarifying_rag(
        clarifier=Hanging(TURNS[4], pre=[None], post=[None]), retriever=StaticRetriever(PASSAGES),
        answer_model=GenericFakeChatModel(messages=iter(["Open Preferences [1]."])),
        rewriter=lambda messages: messages[-1].text, settings=Settings(),
    ).compile()
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "lent", CONFIG_KEY_CHECKPOINTER: saver}}
    context = default_context(Settings())

    async def turns_then_stop() -> tuple[Any, Any]:
        for _ in range(turns_before):
            await arun_turn(graph, user(TURNS[0]), config, context)
        before = await graph.aget_state(config)
        with pytest.raises(asyncio.CancelledError):
            await stop_at_the_check(graph, user(TURNS[4]), config, context)
        return before, await graph.aget_state(config)

    before, after = asyncio.run(asyncio.wait_for(turns_then_stop(), TIMEOUT))
    assert after.values == before.values and after.next == before.next == ()
    assert texts({"messages": [], **after.values}) == [TURNS[0], "Open Preferences [1]." + SOURCES][:2 * turns_before]
    assert (saver.get_tuple({"configurable": {"thread_id": "lent"}}) is None) == (turns_before == 0)


def test_a_stopped_turn_run_from_an_earlier_checkpoint_leaves_the_thread_as_before_it():
    """A turn run from the thread's history (its config's `checkpoint_id`: a fork) and stopped: the
    thread is put back to its head before the turn, the question it waited on still waiting, not
    to the checkpoint the fork began from (which had no question waiting: the next line was read
    as a new turn)."""
    graph = create_clarifying_rag(
        clarifier=Hanging(TURNS[4], pre=[None, "Which product?"], post=[None]), retriever=StaticRetriever(PASSAGES),
        answer_model=GenericFakeChatModel(messages=iter(["Open Preferences [1]."])),
        rewriter=lambda messages: messages[-1].text, settings=Settings(),
    ).compile(checkpointer=InMemorySaver())
    context = {**default_context(Settings()), "ask_mode": "interrupt"}

    async def fork_then_stop() -> tuple[Any, Any]:
        await arun_turn(graph, user(TURNS[0]), thread("fork"), context)  # answered
        answered = await graph.aget_state(thread("fork"))
        await arun_turn(graph, user(TURNS[2]), thread("fork"), context)  # asks: the thread waits
        head = await graph.aget_state(thread("fork"))
        with pytest.raises(asyncio.CancelledError):
            await stop_at_the_check(graph, user(TURNS[4]), answered.config, context)
        return head, await graph.aget_state(thread("fork"))

    head, after = asyncio.run(asyncio.wait_for(fork_then_stop(), TIMEOUT))
    assert after.values == head.values and after.next == head.next == ("await_reply",)
    assert [i.value for i in after.interrupts] == [i.value for i in head.interrupts] != []


def test_a_turn_run_from_an_earlier_checkpoint_ends_with_the_state_it_left():
    """A fork's result read the state of the checkpoint it forked from (its config's
    `checkpoint_id`), not the thread's new head: its answer was the earlier turn's."""
    graph = create_clarifying_rag(
        clarifier=ScriptedClarifier(pre=[None] * 3, post=[None] * 3), retriever=StaticRetriever(PASSAGES),
        answer_model=GenericFakeChatModel(messages=iter(["Open Preferences [1].", "Choose Sync [1].",
                                                         "Open Nimbus [1]."])),
        rewriter=lambda messages: messages[-1].text, settings=Settings(),
    ).compile(checkpointer=InMemorySaver())
    context = default_context(Settings())

    async def answer_twice_then_fork() -> Any:
        await arun_turn(graph, user(TURNS[0]), thread("fork"), context)
        answered = await graph.aget_state(thread("fork"))
        await arun_turn(graph, user(TURNS[2]), thread("fork"), context)
        return await arun_turn(graph, user(TURNS[4]), answered.config, context)

    forked = asyncio.run(asyncio.wait_for(answer_twice_then_fork(), TIMEOUT))
    assert forked.answer == "Open Nimbus [1]." + SOURCES
    assert forked.state == graph.get_state(thread("fork")).values
    assert texts(forked.state)[:2] == [TURNS[0], "Open Preferences [1]." + SOURCES]


def test_a_process_whose_turn_was_cancelled_mid_generation_exits_cleanly(tmp_path: Path):
    script = tmp_path / "cancel.py"
    script.write_text(f"""
import asyncio, sys
sys.path[:0] = [{str(Path(__file__).parent)!r}, {str(Path(__file__).parents[1])!r}]
from test_graph_concurrency import slowed_tiny_model, thread, tiny_graph, user

graph = tiny_graph(slowed_tiny_model(0.01), threshold=1.1, max_new_tokens=60)

async def main():
    async def stream():
        async for mode, _ in graph.astream(user("how do i turn on sync"), thread("t"), stream_mode=["messages"]):
            started.set()
    started = asyncio.Event()
    task = asyncio.create_task(stream())
    await started.wait()
    task.cancel()

asyncio.run(main())
print("done")
""")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=TIMEOUT)
    assert run.returncode == 0 and run.stdout.strip() == "done", run.stderr[-2000:]
