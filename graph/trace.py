"""Run one turn of a compiled clarifying-RAG graph and describe its decision path, step by step.

Used by the CLI and the demo: `run_turn` streams the graph (`updates` for the path, `messages`
for the answer's tokens) and returns what the turn ended with: a question or an answer (a turn
stopped part-way is undone: `arestore_thread`); `TurnPrinter` prints it all to a terminal.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TextIO, TypeVar, cast

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.constants import CONFIG_KEY_CHECKPOINTER
from langgraph.pregel import Pregel
from langgraph.types import StateSnapshot

from askbetter.graph.context import Context
from askbetter.graph.routing import ANSWER, ASK_USER, AWAIT_REPLY, POST_CHECK, PRE_CHECK, RETRIEVE, REWRITE, ask_blocker
from askbetter.interrupts import ctrl_c_held
from askbetter.nodes.answer import SOURCES_TAG, passage_title
from askbetter.nodes.ask_user import CLARIFICATION_METADATA
from askbetter.text import displayable

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

# the node column of printed steps: as wide as the longest node name
NODE_WIDTH = max(map(len, (REWRITE, PRE_CHECK, RETRIEVE, POST_CHECK, ASK_USER, AWAIT_REPLY, ANSWER)))


@dataclass
class Step:
    node: str
    update: dict[str, Any]
    text: str  # one line (or a few) describing the step


@dataclass
class TurnResult:
    steps: list[Step] = field(default_factory=list)
    interrupt: dict[str, Any] | None = None  # interrupt mode: the question payload awaiting a reply
    state: dict[str, Any] = field(default_factory=dict)  # the thread's state after the turn

    @property
    def last_message(self) -> BaseMessage | None:
        messages = self.state.get("messages") or []
        return messages[-1] if messages else None

    @property
    def asked(self) -> dict[str, Any] | None:
        """The clarification the turn ended with (question, score, stage), in either ask mode."""
        if self.interrupt is not None:
            return self.interrupt
        message = self.last_message
        if self.state.get("awaiting_reply") and isinstance(message, AIMessage):
            return dict(message.response_metadata[CLARIFICATION_METADATA])
        return None

    @property
    def question(self) -> str | None:
        return None if self.asked is None else str(self.asked["question"])

    @property
    def answer(self) -> str | None:
        if self.asked is not None or not isinstance(self.last_message, AIMessage):
            return None
        return self.last_message.text


async def arun_turn(
    graph: Pregel[Any, Context, Any, Any],
    payload: Any,
    config: RunnableConfig,
    context: Context,
    *,
    on_step: Callable[[Step], None] | None = None,
    on_token: Callable[[str], None] | None = None,
) -> TurnResult:
    """Run the graph on `payload` (`{"messages": [...]}` or `Command(resume=...)`) until the turn
    ends or pauses. `context` is the full run context (e.g. `default_context(settings)`): the
    descriptions quote its `max_rounds`. `on_step` sees each node's step as it finishes, `on_token`
    the answer model's tokens (not the Sources list's chunk: the result's answer has it).

    The graph runs async (`astream`; the checkpointer must have async methods, as LangGraph's
    `InMemorySaver`, `AsyncSqliteSaver` and `AsyncPostgresSaver` do), so cancelling the turn (a
    Ctrl-C under `run_turn`) halts the generation running (the rewrite's, a clarifier's question,
    the answer) at its next token, where LangGraph's sync `stream` would first wait for the running
    node to finish.

    A stopped turn (its task cancelled, or a KeyboardInterrupt out of a node) or a failed one (an
    error out of a node, e.g. a Chroma server gone) leaves no trace: the thread is put back as it
    was before the turn (`arestore_thread`: its messages, and a question it
    was paused on), so the next turn reads the dialog as if the stopped one had not been sent; then
    the stop goes on up. A turn run from an earlier checkpoint (`checkpoint_id` in `config`: a fork
    of the thread's history) is undone alike: the thread goes back to its head before the turn, not
    to that checkpoint. A Ctrl-C meanwhile (under `run_turn` a second one, which `asyncio.run`
    turns into a KeyboardInterrupt wherever the code is) waits until the thread is back."""
    result = TurnResult()
    start = await graph.aget_state(config)  # the thread's head, or the checkpoint the turn forks from
    forked = config.get("configurable", {}).get("checkpoint_id") is not None
    before = await graph.aget_state(_thread_head(config)) if forked else start  # what a stop puts back
    view = dict(start.values)  # the state the next step's routing sees
    try:
        # (mode, chunk) pairs, as a list of stream modes gives; LangGraph's annotation says each is a dict
        parts: AsyncIterator[Any] = graph.astream(payload, config, context=context, stream_mode=["updates", "messages"])
        async for mode, chunk in parts:
            if mode == "messages":
                message, meta = chunk
                model_token = meta.get("langgraph_node") == ANSWER and SOURCES_TAG not in meta.get("tags", ())
                if on_token and model_token and message.text:
                    on_token(message.text)
                continue
            for node, update in chunk.items():
                if node == "__interrupt__":
                    result.interrupt = dict(update[0].value)
                    continue
                update = dict(update or {})
                step = Step(node, update, describe(node, update, view, context))
                view.update({k: v for k, v in update.items() if k != "messages"})
                result.steps.append(step)
                if on_step:
                    on_step(step)
        result.state = dict((await graph.aget_state(_thread_head(config))).values)  # a fork's too: its new head
    except (asyncio.CancelledError, KeyboardInterrupt, Exception) as stop:
        # a stopped turn and a failed one (a Chroma server gone) are undone alike: sent again, it reads the same dialog
        try:
            await arestore_thread(graph, config, before, context)
        except Exception as undo:
            if not isinstance(stop, Exception):  # a stop: the failed undo's error goes up in its place
                raise
            # the checkpointer failing too: the turn's own error is the one to report
            log.warning("the failed turn could not be undone (%s): thread %r keeps it", undo, _thread_id(config))
        raise
    return result


async def arestore_thread(
    graph: Pregel[Any, Context, Any, Any], config: RunnableConfig, before: StateSnapshot, context: Context
) -> None:
    """Put the thread of `config` back as `before` (its head when a turn began) shows it, by
    LangGraph's time travel: `before`'s checkpoint is copied to the head of the thread, where the
    next turn goes on from (the turn's own checkpoints stay in the history, a branch left behind).
    The copy holds no pending writes, so a question the thread was paused on is put again by
    running the node that asked it (`await_reply`, the copy's next task) with no resume value; it
    pauses the thread with the same question. A thread the turn began is deleted (a checkpointer
    without `adelete_thread` keeps it as a cancelled run leaves it, with a warning).

    A Ctrl-C that comes meanwhile, in the main thread, waits until the thread is back (the copy
    alone leaves a paused thread with no question waiting), then goes to the SIGINT handler
    installed (`askbetter.interrupts.ctrl_c_held`); it is not dropped (unless the undo itself
    fails: its error goes up in its place): a turn cancelled by other means than a Ctrl-C (a
    client gone) still leaves the Ctrl-C its own stop to make.

    (Going on from `before`'s checkpoint itself, its `checkpoint_id` in the next turn's config,
    would not do for a paused thread: a stopped reply's resume value stays stored there as its
    task's, and LangGraph 1.2 hands that, not the next reply, to the interrupt.)"""
    head = _thread_head(config)
    with ctrl_c_held():
        if before.metadata is None:  # no checkpoint: the turn began the thread
            try:
                await _checkpointer(graph, config).adelete_thread(_thread_id(config))
            except NotImplementedError:  # BaseCheckpointSaver's: the stop goes on up all the same
                log.warning("the checkpointer cannot delete a thread (no adelete_thread): thread %r keeps "
                            "the stopped turn", _thread_id(config))
            return
        # `before`'s checkpoint, in the run's config (which may lend the checkpointer)
        at = {**head, "configurable": {**head["configurable"], **before.config["configurable"]}}
        await graph.aupdate_state(cast(RunnableConfig, at), None, as_node="__copy__")
        if before.interrupts:
            await graph.ainvoke(None, head, context=context)


def _thread_id(config: RunnableConfig) -> Any:
    return config.get("configurable", {}).get("thread_id")


def _checkpointer(graph: Pregel[Any, Context, Any, Any], config: RunnableConfig) -> BaseCheckpointSaver:
    """The checkpointer a run of `config` uses, as LangGraph picks it: the one the config lends
    (`CONFIG_KEY_CHECKPOINTER`, as LangGraph lends a parent graph's to a subgraph; a LangGraph
    server sets its own on the graph it serves), else the graph's (a graph with neither had its
    `aget_state` refused before this is asked)."""
    lent = config.get("configurable", {}).get(CONFIG_KEY_CHECKPOINTER)
    return cast(BaseCheckpointSaver, lent if lent is not None else graph.checkpointer)


def _thread_head(config: RunnableConfig) -> RunnableConfig:
    """`config` without a `checkpoint_id`: it addresses the thread's latest checkpoint, its head."""
    configurable = {k: v for k, v in config.get("configurable", {}).items() if k != "checkpoint_id"}
    return {**config, "configurable": configurable}


def _blocking(coroutine_function: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, R]:
    """`coroutine_function` as a plain function: each call runs it under `asyncio.run` (so a
    Ctrl-C cancels it, then raises KeyboardInterrupt)."""

    @functools.wraps(coroutine_function)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return asyncio.run(coroutine_function(*args, **kwargs))

    return run


#: `arun_turn` for callers with no event loop running (the CLI, the demo, the benchmark)
run_turn = _blocking(arun_turn)


def describe(node: str, update: Mapping[str, Any], view: Mapping[str, Any], context: Context) -> str:
    """A short human-readable line for one step; `view` is the state before it."""
    if node == REWRITE:
        query = update.get("query", "")
        return f'query: "{query}"' if query else "empty turn: nothing to search for"
    if node in (PRE_CHECK, POST_CHECK):
        decision = update.get("pre_decision" if node == PRE_CHECK else "post_decision")
        return _describe_decision(decision, view, context)
    if node == RETRIEVE:
        passages = update.get("documents", [])
        listed = "; ".join(f"[{i}] {_passage(p)}" for i, p in enumerate(passages, 1))
        return f"{len(passages)} passages: {listed}" if passages else "no passages found"
    if node == ASK_USER:
        return f"asks (round {update.get('clarification_rounds')}/{context['max_rounds']})"
    if node == AWAIT_REPLY:
        rounds = f"round {view.get('clarification_rounds')}/{context['max_rounds']}"
        return f'got the reply "{update["messages"][-1].text}" ({rounds})'
    if node == ANSWER:
        return "answers"
    return ", ".join(sorted(update))


def _passage(passage: Mapping[str, Any]) -> str:
    """Title (or id) and score, each where the retriever gave it (a custom one need not)."""
    name = passage_title(passage)
    score = passage.get("score")
    return f"{name} ({score:.2f})" if isinstance(score, int | float) and not isinstance(score, bool) else name


def _describe_decision(decision: Mapping[str, Any] | None, view: Mapping[str, Any], context: Context) -> str:
    if decision is None:
        return "skipped (no passages)"
    head = f"score {decision['score']:.2f}"
    if not decision["needs_clarification"]:
        return f"{head} -> clear"
    blocker = ask_blocker(view, decision, context["max_rounds"])
    question = decision.get("question") or ""
    if blocker is None:
        return f'{head} -> needs clarification: "{question}"'
    return f"{head} -> needs clarification, not asked: {blocker}"


class TurnPrinter:
    """Prints a turn's decision path as it runs, then its question or answer (tokens streamed);
    control characters in what it prints are shown as escapes (`askbetter.text.displayable`)."""

    def __init__(self, out: TextIO | None = None) -> None:
        self._out = out
        self.streamed = ""

    @property
    def out(self) -> TextIO:
        return self._out or sys.stdout  # looked up late, so a redirected stdout is honoured

    def step(self, step: Step) -> None:
        if step.node == ANSWER:
            return  # the answer itself is printed by `token` and `outcome`
        print(f"  {step.node:<{NODE_WIDTH}} {displayable(step.text)}", file=self.out, flush=True)

    def token(self, text: str) -> None:
        if not self.streamed:
            print("askbetter: ", end="", file=self.out)
        self.streamed += text
        print(displayable(text), end="", file=self.out, flush=True)

    def outcome(self, result: TurnResult) -> None:
        """The question (with stage, score and round) or the answer's unstreamed rest (its sources)."""
        asked = result.asked
        if asked is not None:
            print(
                f"askbetter asks ({asked['stage']}-retrieval check, score {asked['score']:.2f}): "
                f"{displayable(str(asked['question']))}",
                file=self.out,
            )
        elif result.answer is not None:
            streamed = self.streamed.strip()
            if streamed and result.answer.startswith(streamed):
                print(displayable(result.answer[len(streamed):]), file=self.out)
            else:
                print(("\n" if self.streamed else "askbetter: ") + displayable(result.answer), file=self.out)
        self.streamed = ""

    def stopped(self) -> None:
        """The turn was stopped (Ctrl-C) before its outcome."""
        print(("\n" if self.streamed else "") + "(stopped)", file=self.out)
        self.streamed = ""

