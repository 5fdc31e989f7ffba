"""`askbetter demo`: a scripted conversation over the bundled corpus, with every decision printed.

The corpus (a fictional company whose two products both have "Sync") goes into a fresh in-memory
Chroma collection. Then two user turns run through the real graph: an ambiguous one in interrupt
mode, answered by the scripted reply "Nimbus Desktop" when the clarifier asks, and a clear one in
message mode. The decisions are the models' own: the demo prints the real scores and says so
when the clarifier did not ask where it should have, or asked where it need not have.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from askbetter.settings import AskMode, Settings

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig


@dataclass(frozen=True)
class ScriptedTurn:
    text: str
    ambiguous: bool  # what the corpus makes of it: True if a clarification question is warranted
    reply: str  # the user's answer if a question is asked
    ask_mode: AskMode


SCRIPT: tuple[ScriptedTurn, ...] = (
    ScriptedTurn(
        text="How do I turn on sync?",
        ambiguous=True,  # Nimbus Cloud and Nimbus Desktop both have Sync, switched on differently
        reply="Nimbus Desktop",
        ask_mode="interrupt",
    ),
    ScriptedTurn(
        text="How much can I spend per attendee on a client dinner?",
        ambiguous=False,  # one expense policy answers it
        reply="The company expense policy, please.",
        ask_mode="message",
    ),
)


def run_demo(settings: Settings | None = None, out: TextIO = sys.stdout) -> int:
    """Run `SCRIPT`; returns 0 (the exit code) once every turn has been answered."""
    from langgraph.checkpoint.memory import InMemorySaver

    from askbetter.clarifier.local import LocalClarifier
    from askbetter.graph.factory import create_clarifying_rag
    from askbetter.retrieval.corpus import ephemeral_corpus_collection
    from askbetter.retrieval.store import ChromaRetriever

    settings = settings or Settings.from_env()
    started = time.monotonic()
    say = _printer(out)

    say("== Set-up: the bundled corpus into a fresh in-memory Chroma collection")
    collection, report = ephemeral_corpus_collection(settings, "askbetter-demo")
    say(f"   {report.summary()}")
    say("== Loading the clarifier (the answer model shares its weights)")
    clarifier = LocalClarifier.from_settings(settings)
    kind = f"adapter {clarifier.loaded.adapter}" if clarifier.loaded.has_adapter else "base model, no adapter"
    say(f"   {kind}; {clarifier.prompt_style} prompt; asks when score >= {clarifier.threshold:.2f}")
    if not clarifier.loaded.has_adapter:
        say("   Note: without the tuned adapter the prompted base model makes weak decisions; "
            "the scores below are its own.")
    graph = create_clarifying_rag(
        clarifier=clarifier, retriever=ChromaRetriever(collection), settings=settings
    ).compile(checkpointer=InMemorySaver())

    for number, turn in enumerate(SCRIPT, 1):
        _run_scripted_turn(graph, turn, number, settings, say, out)
    say(f"== Done in {time.monotonic() - started:.0f} s")
    return 0


def _run_scripted_turn(graph: Any, turn: ScriptedTurn, number: int, settings: Settings, say: Any, out: TextIO) -> None:
    from langgraph.types import Command

    from askbetter.graph.context import Context, default_context
    from askbetter.graph.trace import TurnPrinter, run_turn

    # one question at most per turn, so the scripted reply always ends the turn
    context: Context = {**default_context(settings), "ask_mode": turn.ask_mode, "max_rounds": 1}
    config: RunnableConfig = {"configurable": {"thread_id": f"demo-{number}"}}
    printer = TurnPrinter(out)
    label = "ambiguous" if turn.ambiguous else "clear"
    say(f"\n== Turn {number} ({label} query, {turn.ask_mode} mode)\nuser: {turn.text}")
    result = run_turn(graph, {"messages": [("user", turn.text)]}, config, context,
                      on_step=printer.step, on_token=printer.token)
    printer.outcome(result)
    if result.question is None:
        if turn.ambiguous:
            say("   (The clarifier did not ask although two products match this query: its scores "
                "stayed below the threshold. That is the model's real decision, shown as is.)")
        return
    if not turn.ambiguous:
        say("   (This query is clear in the corpus, so this question is a false positive of the "
            "clarifier; the scripted user answers it anyway.)")
    say(f"user: {turn.reply}")
    payload: Command | dict[str, Any] = (Command(resume=turn.reply) if result.interrupt is not None
                                         else {"messages": [("user", turn.reply)]})
    result = run_turn(graph, payload, config, context, on_step=printer.step, on_token=printer.token)
    printer.outcome(result)


def _printer(out: TextIO) -> Any:
    def say(text: str) -> None:
        print(text, file=out, flush=True)

    return say
