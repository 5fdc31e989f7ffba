"""Latency and memory of the clarifying-RAG turn on this machine, per dtype, side by side.

Each dtype named runs in its own fresh Python process (`ASKBETTER_DTYPE` set to it), one after
the other, so that its model load time and peak RSS are its own. A process ingests the bundled
corpus into a fresh in-memory Chroma collection ("corpus ingest": sentence-transformers imported,
MiniLM loaded, the chunks embedded), loads the clarifier ("model load":
`LocalClarifier.from_settings`, the converted base model read in the dtype and the adapter
applied; the answer and rewrite model share that copy; the bundled GGUF is converted before the
first process starts, so no load includes that) and compiles the default graph over them,
as `askbetter demo` does. Then it runs three turns in message mode, each on a fresh thread: once
as a warm-up (not counted), then --repeats times:

- clear: "Where can I park?" after "I work in the Boston office." (the rewrite runs the model,
  both checks pass, the answer is generated: up to ASKBETTER_MAX_ANSWER_TOKENS tokens);
- pre-ask: "Where can I park?" (the pre-retrieval check asks);
- post-ask: "How do I turn on sync?" (clear before retrieval, asks after it).

A turn runs through `askbetter.graph.trace.run_turn`, as `askbetter ask` and `chat` run one (it
streams the graph's updates and the answer's tokens). A node's time runs from the previous node's
step (or the turn's start) to its own, so it includes the step's LangGraph bookkeeping
(checkpoint, routing); a check that asks includes its question's generation. The whole turn runs
from the call to `run_turn`'s return (it reads the thread's state before and after the stream);
"answer, per token" is the answer node's time over its length.
Apart from the graph, after each repeat: `LocalClarifier.score` alone (one forward pass) on the
post-ask turn without passages and with the passages retrieval returns for it (searched once,
directly, so whichever path the graph's turn took), and `LocalClarifier.question` (generation) on
it with the passages. Median and min over the repeats; the last column is the
ratio of the medians, last dtype over first. Peak RSS is the process's `ru_maxrss` at the end
(what loading and ingesting held only for a while included), beside its RSS then.

Under the table, the path each turn took in each dtype: scores, the rewritten query, and the
lengths of what was generated (in tokens, the text tokenized again). Greedy decoding in another
dtype can write another text, so a node's figures compare only where the paths and lengths agree.

    python scripts/bench_turn.py float32 bfloat16 --repeats 5 --json runs/bench_turn.json

A dtype written `DTYPE@caller` (say `float32@caller float32`) runs the models' work in whichever
thread calls it, as askbetter did before `askbetter.torch_thread` put it on one thread: the
LangGraph worker thread that runs a node, the thread that loaded the models. One difference: the
answer model then generated on a fresh thread of its own per call, streaming its tokens; here it
generates in the node's thread, and its tokens are read once it has finished (the node times
the same generation).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from askbetter import torch_thread
from askbetter.clarifier.types import Message
from askbetter.cli import UsageError
from askbetter.cli_model import check_output_files
from askbetter.settings import Settings, check_dtype
from askbetter.text import write_lines

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

    from askbetter.graph.context import Context

TURNS: dict[str, list[Message]] = {
    "clear": [{"role": "user", "content": "I work in the Boston office."},
              {"role": "assistant", "content": "Thanks. What would you like to know about the Boston office?"},
              {"role": "user", "content": "Where can I park?"}],
    "pre-ask": [{"role": "user", "content": "Where can I park?"}],
    "post-ask": [{"role": "user", "content": "How do I turn on sync?"}],
}
# the turn whose dialog and passages the clarifier's own calls are timed on
CLARIFIER_TURN = "post-ask"


def timed_turn(graph, messages: list[Message], config: RunnableConfig, context: Context) -> tuple[dict[str, float], list]:
    """Seconds per node and for the whole turn (`"turn"`), and the steps: (node, update). The turn
    runs through `run_turn`, as the CLI runs it."""
    from askbetter.graph.trace import Step, run_turn

    times: dict[str, float] = {}
    start = last = time.perf_counter()

    def lap(step: Step) -> None:  # one node a step: the graph is a chain
        nonlocal last
        now = time.perf_counter()
        times[step.node] = now - last
        last = now

    result = run_turn(graph, {"messages": messages}, config, context, on_step=lap)
    times["turn"] = time.perf_counter() - start
    return times, [(step.node, step.update) for step in result.steps]


def answer_text(update: dict) -> str:
    """The generated part of an answer node's message (without the `Sources:` list it appends)."""
    return update["messages"][-1].text.split("\n\nSources:")[0]


def describe(steps: list, history: bool, tokens) -> str:
    """The path: each node, a check's score (and its question's length), the rewritten query (when
    the turn has history, so the model rewrote it), the answer's length (`tokens(text)`)."""
    parts = []
    for node, update in steps:
        decision = update.get("pre_decision") or update.get("post_decision")
        if decision:
            asks = f", asks ({tokens(decision['question'])} tokens)" if decision["question"] else ""
            parts.append(f"{node} {decision['score']:.3f}{asks}")
        elif node == "rewrite" and history:
            parts.append(f'rewrite "{update["query"]}"')
        elif node == "answer":
            parts.append(f"answer ({tokens(answer_text(update))} tokens)")
        else:
            parts.append(node)
    return " -> ".join(parts)


def measure(repeats: int, placement: str = "") -> dict:
    """One dtype's figures, in this process (the settings from the environment); with placement
    "caller", the models' work runs in the calling threads."""
    import torch
    from langgraph.checkpoint.memory import InMemorySaver

    from askbetter.clarifier.local import LocalClarifier
    from askbetter.graph.context import default_context
    from askbetter.graph.factory import create_clarifying_rag
    from askbetter.nodes.decisions import passages_as_documents
    from askbetter.retrieval.corpus import ephemeral_corpus_collection
    from askbetter.retrieval.store import ChromaRetriever

    if placement == "caller":
        torch_thread.submit = run_here
    settings = Settings.from_env()
    started = time.perf_counter()
    collection, _ = ephemeral_corpus_collection(settings, "askbetter-bench")
    ingest_s = time.perf_counter() - started
    started = time.perf_counter()
    clarifier = LocalClarifier.from_settings(settings)
    load_s = time.perf_counter() - started
    retriever = ChromaRetriever(collection)
    graph = create_clarifying_rag(clarifier=clarifier, retriever=retriever,
                                  settings=settings).compile(checkpointer=InMemorySaver())
    context: Context = {**default_context(settings), "ask_mode": "message", "max_rounds": 1}
    dialog = TURNS[CLARIFIER_TURN]
    documents = passages_as_documents(retriever.search(dialog[-1]["content"], k=context["top_k"]))
    samples: dict[str, list[float]] = defaultdict(list)
    paths: dict[str, str] = {}

    def tokens(text: str) -> int:  # generated text, tokenized again
        return len(clarifier.loaded.tokenizer.encode(text, add_special_tokens=False))

    for repeat in range(repeats + 1):  # round 0 is the warm-up
        for name, messages in TURNS.items():
            config: RunnableConfig = {"configurable": {"thread_id": f"{name}-{repeat}"}}
            times, steps = timed_turn(graph, messages, config, context)
            paths[name] = describe(steps, len(messages) > 1, tokens)
            if not repeat:
                continue
            for node, seconds in times.items():
                samples[f"{name}: {node}"].append(seconds)
            for node, update in steps:
                if node == "answer":
                    samples[f"{name}: answer, per token"].append(times[node] / max(1, tokens(answer_text(update))))
        for label, call in (("score, no passages", lambda: clarifier.score(dialog)),
                            (f"score, {len(documents)} passages", lambda: clarifier.score(dialog, documents)),
                            (f"question, {len(documents)} passages", lambda: clarifier.question(dialog, documents))):
            started = time.perf_counter()
            result = call()  # the last call's: the question
            if repeat:
                samples[f"clarifier.{label}"].append(time.perf_counter() - started)
    assert isinstance(result, str)  # the question's (the scores' calls give a float)
    paths["clarifier.question"] = f"{tokens(result)} tokens"
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return {
        "dtype": settings.dtype,
        "torch_dtype": str(next(clarifier.loaded.model.parameters()).dtype),
        "threads": torch.get_num_threads(),
        "seconds": dict(samples),
        "corpus_ingest_s": ingest_s,
        "model_load_s": load_s,
        "peak_rss_mib": peak_kib / 1024,
        "end_rss_mib": current_rss_mib(),
        "paths": paths,
    }


def run_here(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
    """`torch_thread.submit` that runs `fn` in the calling thread (the placement "caller")."""
    future: Future = Future()
    try:
        future.set_result(fn(*args, **kwargs))
    except Exception as exc:
        future.set_exception(exc)
    return future


def split_variant(variant: str) -> tuple[str, str]:
    """`DTYPE` or `DTYPE@caller` as (dtype, placement); a usage error for another placement."""
    dtype, _, placement = variant.partition("@")
    if placement not in ("", "caller"):
        raise UsageError(f"{variant!r}: write DTYPE or DTYPE@caller")
    check_dtype(dtype)
    return dtype, placement


def current_rss_mib() -> float | None:
    """The process's resident memory now (Linux's /proc; None elsewhere)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * int(Path("/proc/self/statm").read_text().split()[1]) / 2**20
    except (OSError, ValueError, IndexError):
        return None


def run_child(variant: str, repeats: int) -> dict:
    """`measure` in a fresh process with `ASKBETTER_DTYPE` set to the variant's dtype."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        subprocess.run([sys.executable, __file__, variant, "--repeats", str(repeats), "--child-out", str(out)],
                       env={**os.environ, "ASKBETTER_DTYPE": split_variant(variant)[0]}, check=True)
        return json.loads(out.read_text(encoding="utf-8"))


def summary_rows(results: list[dict]) -> list[tuple[str, list[list[float]]]]:
    """(measure, one list of values per result): times in ms, in first-seen order; load in s, RSS in MiB."""
    labels = list(dict.fromkeys(label for r in results for label in r["seconds"]))
    rows = [(f"{label} (ms)", [[s * 1000 for s in r["seconds"].get(label, [])] for r in results])
            for label in labels]
    rows.append(("corpus ingest, MiniLM load included (s)", [[r["corpus_ingest_s"]] for r in results]))
    rows.append(("model load (s)", [[r["model_load_s"]] for r in results]))
    rows.append(("peak RSS (MiB)", [[r["peak_rss_mib"]] for r in results]))
    rows.append(("RSS at the end (MiB)", [[r["end_rss_mib"]] if r.get("end_rss_mib") else [] for r in results]))
    return rows


def _number(value: float) -> str:
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def markdown_table(names: list[str], rows: list[tuple[str, list[list[float]]]]) -> str:
    """Median and min per name (a single value: in the median column), then last / first medians."""
    ratio = f"{names[-1]} / {names[0]}"
    head = ["measure", *(f"{n} {stat}" for n in names for stat in ("median", "min")), ratio]
    lines = ["| " + " | ".join(head) + " |", "| :-- " + "| --: " * (len(head) - 1) + "|"]
    for label, values in rows:
        cells = [label]
        for v in values:
            cells += ([_number(statistics.median(v)), _number(min(v)) if len(v) > 1 else ""] if v else ["n/a", ""])
        first, last = values[0], values[-1]
        cells.append(f"{statistics.median(last) / statistics.median(first):.2f}"
                     if first and last and statistics.median(first) > 0 else "n/a")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(dtypes: list[str], repeats: int, json_out: Path | None) -> None:
    from askbetter.clarifier.assets import resolve_base_model

    check_output_files(None, json=json_out)  # a --json it could not write stops here, not after the run
    placements = [split_variant(variant)[1] for variant in dtypes]
    settings = Settings.from_env()  # a setting out of range stops here, before any model loads
    # the bundled GGUF converted (once, about 30 s) before any child: not in the first one's load
    resolve_base_model(settings.base_model, settings.cache_dir)
    load_before = os.getloadavg()
    results = [run_child(dtype, repeats) for dtype in dtypes]
    load_after = os.getloadavg()
    names = [r["torch_dtype"].removeprefix("torch.") + (f"@{p}" if p else "") for r, p in zip(results, placements)]
    rows = summary_rows(results)
    print(f"{repeats} repeats after one warm-up; {os.cpu_count()} CPUs, torch threads "
          f"{', '.join(str(r['threads']) for r in results)}; load average before "
          f"{load_before[0]:.2f}, after {load_after[0]:.2f}\n")
    print(markdown_table(names, rows))
    print("\nPaths (node and score, last repeat):")
    for name in results[0]["paths"]:
        for dtype, r in zip(names, results):
            print(f"  {name:<18} {dtype:<8} {r['paths'][name]}")
    if json_out is not None:
        write_lines(json_out, [json.dumps({"repeats": repeats, "dtypes": names, "results": results,
                                           "load_average": [load_before, load_after]}, indent=2) + "\n"])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dtypes", nargs="+", metavar="DTYPE",
                        help="dtypes to compare (float32, bfloat16, float16, auto; DTYPE@caller: the models' "
                        "work in the calling threads); the ratio is last / first")
    parser.add_argument("--repeats", type=int, default=5, help="counted runs of each turn (default 5)")
    parser.add_argument("--json", type=Path, help="also write every sample and the paths here")
    parser.add_argument("--child-out", type=Path, help=argparse.SUPPRESS)  # one dtype, in this process
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be 1 or more")
    if args.child_out is not None:
        placement = split_variant(args.dtypes[0])[1]
        args.child_out.write_text(json.dumps(measure(args.repeats, placement)), encoding="utf-8")
    else:
        try:
            main(args.dtypes, args.repeats, args.json)
        except UsageError as exc:
            parser.error(str(exc))
