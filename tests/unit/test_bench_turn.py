"""scripts/bench_turn.py: the table's medians, mins and ratio, from made-up samples (no model runs)."""

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_turn.py"
spec = importlib.util.spec_from_file_location("bench_turn", SCRIPT)
bench_turn = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_turn)


def _result(seconds: dict[str, list[float]], load: float, peak: float, end: float | None) -> dict:
    return {"seconds": seconds, "corpus_ingest_s": 4.0, "model_load_s": load, "peak_rss_mib": peak,
            "end_rss_mib": end}


def test_each_row_shows_median_and_min_per_dtype_and_the_ratio_of_medians() -> None:
    fp32 = _result({"clear: answer": [2.0, 1.0, 3.0], "clear: turn": [4.0, 4.0, 5.0]}, 0.5, 1000.0, 900.0)
    # a node only the second dtype ran (another path), and no /proc for its RSS at the end
    bf16 = _result({"clear: answer": [1.0, 0.5, 1.5], "pre-ask: ask_user": [0.002]}, 0.6, 800.0, None)
    table = bench_turn.markdown_table(["float32", "bfloat16"], bench_turn.summary_rows([fp32, bf16]))
    lines = table.splitlines()
    assert lines[0] == ("| measure | float32 median | float32 min | bfloat16 median | bfloat16 min "
                        "| bfloat16 / float32 |")
    rows = {line.split(" | ")[0].lstrip("| "): line for line in lines[2:]}
    assert list(rows) == ["clear: answer (ms)", "clear: turn (ms)", "pre-ask: ask_user (ms)",
                          "corpus ingest, MiniLM load included (s)", "model load (s)", "peak RSS (MiB)",
                          "RSS at the end (MiB)"]
    assert rows["clear: answer (ms)"] == "| clear: answer (ms) | 2000.0 | 1000.0 | 1000.0 | 500.0 | 0.50 |"
    assert rows["clear: turn (ms)"] == "| clear: turn (ms) | 4000.0 | 4000.0 | n/a |  | n/a |"
    # one sample: its value, no min
    assert rows["pre-ask: ask_user (ms)"] == "| pre-ask: ask_user (ms) | n/a |  | 2.00 |  | n/a |"
    assert rows["model load (s)"] == "| model load (s) | 0.50 |  | 0.60 |  | 1.20 |"
    assert rows["peak RSS (MiB)"] == "| peak RSS (MiB) | 1000.0 |  | 800.0 |  | 0.80 |"
    assert rows["RSS at the end (MiB)"] == "| RSS at the end (MiB) | 900.0 |  | n/a |  | n/a |"


def test_a_turn_is_timed_node_by_node_and_its_path_described() -> None:
    """`timed_turn` over fakes: a time for each node the turn ran and for the whole turn; `describe`
    names each step, a check's score and its question's length, the rewrite with history, and the
    answer's length without its `Sources:` list."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langgraph.checkpoint.memory import InMemorySaver

    from askbetter.graph.context import default_context
    from askbetter.graph.factory import create_clarifying_rag
    from askbetter.graph.testing import ScriptedClarifier, StaticRetriever
    from askbetter.settings import Settings

    settings = Settings()
    graph = create_clarifying_rag(
        clarifier=ScriptedClarifier(pre=[None, None], post=[None, "Which office?"]),
        retriever=StaticRetriever([{"id": "d1", "title": "Parking", "text": "Level 2.", "score": 0.8}]),
        answer_model=GenericFakeChatModel(messages=iter(["On level 2 [1]."])),
        rewriter=lambda messages: "Where can I park in Boston?", settings=settings,
    ).compile(checkpointer=InMemorySaver())
    context = {**default_context(settings), "ask_mode": "message", "max_rounds": 1}
    words = lambda text: len(text.split())  # noqa: E731 (the token count, here in words)

    clear = bench_turn.TURNS["clear"]
    times, steps = bench_turn.timed_turn(graph, clear, {"configurable": {"thread_id": "a"}}, context)
    assert [node for node, _ in steps] == ["rewrite", "pre_check", "retrieve", "post_check", "answer"]
    assert set(times) == {"rewrite", "pre_check", "retrieve", "post_check", "answer", "turn"}
    assert times["turn"] >= sum(times[node] for node, _ in steps) > 0
    assert bench_turn.describe(steps, True, words) == (
        'rewrite "Where can I park in Boston?" -> pre_check 0.100 -> retrieve -> post_check 0.100 '
        "-> answer (4 tokens)")

    asks = bench_turn.TURNS["post-ask"]
    times, steps = bench_turn.timed_turn(graph, asks, {"configurable": {"thread_id": "b"}}, context)
    assert bench_turn.describe(steps, False, words) == (
        "rewrite -> pre_check 0.100 -> retrieve -> post_check 0.900, asks (2 tokens) -> ask_user")


class RecordingGraph:
    """A compiled graph that records how each run streamed: the method and its stream modes."""

    def __init__(self, graph) -> None:
        self.graph, self.modes = graph, []

    def stream(self, *args, **kwargs):
        self.modes.append(("stream", kwargs.get("stream_mode")))
        return self.graph.stream(*args, **kwargs)

    def astream(self, *args, **kwargs):
        self.modes.append(("astream", kwargs.get("stream_mode")))
        return self.graph.astream(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.graph, name)


def test_a_turn_is_timed_through_the_cli_s_code_path() -> None:
    """The benchmark runs a turn as `askbetter ask` does (`run_turn`: updates and messages
    streamed, async), so that its times are what users wait for."""
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langgraph.checkpoint.memory import InMemorySaver

    from askbetter.graph.context import default_context
    from askbetter.graph.factory import create_clarifying_rag
    from askbetter.graph.testing import ScriptedClarifier, StaticRetriever
    from askbetter.graph.trace import run_turn
    from askbetter.settings import Settings

    settings = Settings()
    graph = RecordingGraph(create_clarifying_rag(
        clarifier=ScriptedClarifier(pre=[None, None], post=[None, None]),
        retriever=StaticRetriever([{"id": "d1", "title": "Parking", "text": "Level 2."}]),
        answer_model=GenericFakeChatModel(messages=iter(["On level 2 [1].", "On level 2 [1]."])),
        settings=settings,
    ).compile(checkpointer=InMemorySaver()))
    context = {**default_context(settings), "ask_mode": "message", "max_rounds": 1}
    turn = bench_turn.TURNS["post-ask"]
    cli = run_turn(graph, {"messages": turn}, {"configurable": {"thread_id": "cli"}}, context)
    times, steps = bench_turn.timed_turn(graph, turn, {"configurable": {"thread_id": "bench"}}, context)
    assert graph.modes == [("astream", ["updates", "messages"])] * 2
    assert [step.node for step in cli.steps] == [node for node, _ in steps] == list(times)[:-1]


def test_a_json_output_it_could_not_write_stops_it_before_the_run(tmp_path, monkeypatch) -> None:
    from askbetter.clarifier import assets
    from askbetter.cli import UsageError

    def no_run(*args):
        raise AssertionError("the benchmark ran")

    monkeypatch.setattr(assets, "resolve_base_model", no_run)
    monkeypatch.setattr(bench_turn, "run_child", no_run)
    with pytest.raises(UsageError, match=f"--json {tmp_path} is a folder: name a file"):
        bench_turn.main(["float32"], 1, tmp_path)


def test_the_bundled_model_is_converted_before_the_first_dtype_s_process(monkeypatch, capsys) -> None:
    """Else on a first run the first dtype's "model load" would include the GGUF's conversion."""
    from askbetter.clarifier import assets

    calls = []
    monkeypatch.setattr(assets, "resolve_base_model", lambda base, cache: calls.append("convert"))

    def child(dtype, repeats):
        calls.append(dtype)
        return {"torch_dtype": f"torch.{dtype}", "threads": 2, "seconds": {"clear: turn": [1.0]},
                "corpus_ingest_s": 4.0, "model_load_s": 0.5, "peak_rss_mib": 1000.0, "end_rss_mib": 900.0,
                "paths": {"clear": "answer"}}

    monkeypatch.setattr(bench_turn, "run_child", child)
    bench_turn.main(["float32", "bfloat16"], 1, None)
    assert calls == ["convert", "float32", "bfloat16"]
    assert "| clear: turn (ms) | 1000.0 |  | 1000.0 |  | 1.00 |" in capsys.readouterr().out


def test_a_variant_names_a_dtype_and_where_the_models_work_runs() -> None:
    assert bench_turn.split_variant("float32") == ("float32", "")
    assert bench_turn.split_variant("bfloat16@caller") == ("bfloat16", "caller")
    with pytest.raises(bench_turn.UsageError, match="DTYPE@caller"):
        bench_turn.split_variant("float32@main")
    with pytest.raises(ValueError):
        bench_turn.split_variant("float64")


def test_the_caller_placement_runs_the_models_work_in_the_calling_thread() -> None:
    import threading

    assert bench_turn.run_here(lambda: threading.current_thread()).result() is threading.current_thread()
    with pytest.raises(ZeroDivisionError):
        bench_turn.run_here(lambda: 1 / 0).result()
