"""scripts/bench_turn.py: the table's medians, mins and ratio, from made-up samples (no model runs)."""

import importlib.util
from pathlib import Path

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
