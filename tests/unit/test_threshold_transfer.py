"""scripts/threshold_transfer.py: a threshold picked on the other sources, applied to the held-out one."""

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "threshold_transfer.py"
spec = importlib.util.spec_from_file_location("threshold_transfer", SCRIPT)
threshold_transfer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(threshold_transfer)


def _row(source: str, label: bool, score: float) -> dict:
    # the adapter's own threshold, as its predictions record it: 0.35
    return {"source": source, "label": label, "score": score, "decision": score >= 0.35}


def test_each_source_is_judged_at_the_threshold_the_others_pick(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # source a separates at 0.5; source b at 0.2, so a's threshold misses b's two 0.3 positives
    rows = [_row("a", False, 0.1), _row("a", False, 0.4), _row("a", True, 0.6), _row("a", True, 0.9),
            _row("b", False, 0.1), _row("b", False, 0.15), _row("b", True, 0.3), _row("b", True, 0.3)]
    path = tmp_path / "pred.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    threshold_transfer.main(str(path))
    lines = {line.split(" | ")[0].lstrip("| "): line for line in capsys.readouterr().out.splitlines()}
    # columns: picked on the other source, the recorded decisions (0.35), 0.5, the source's own best
    # b at a's threshold (0.5): the negatives right, the positives missed; at 0.35 and 0.5 the same
    assert lines["b"] == "| b | 4 | 0.500, 0.000 (t 0.500) | 0.500, 0.000 | 0.500, 0.000 | 1.000, 1.000 (t 0.225) |"
    # a at b's threshold (0.225) and at 0.35: 0.4 asked wrongly; at 0.5 all right
    assert lines["a"] == "| a | 4 | 0.750, 0.800 (t 0.225) | 0.750, 0.800 | 1.000, 1.000 | 1.000, 1.000 (t 0.500) |"
    mean = "| mean over 2 sources | | 0.625, 0.400 | 0.625, 0.400 | 0.750, 0.500 | 1.000, 1.000 |"
    assert lines["mean over 2 sources"] == mean


def test_one_source_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "pred.jsonl"
    path.write_text(json.dumps(_row("a", True, 0.9)) + "\n")
    with pytest.raises(SystemExit, match="1 source"):
        threshold_transfer.main(str(path))


def test_a_source_with_nothing_to_clarify_has_no_f1_and_the_means_say_over_how_many(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # source c: two clear examples that no threshold here asks on, so F1-clarify counts nothing there
    rows = [_row("a", False, 0.1), _row("a", False, 0.4), _row("a", True, 0.6), _row("a", True, 0.9),
            _row("b", False, 0.1), _row("b", False, 0.15), _row("b", True, 0.3), _row("b", True, 0.3),
            _row("c", False, 0.05), _row("c", False, 0.1)]
    path = tmp_path / "pred.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    threshold_transfer.main(str(path))
    lines = {line.split(" | ")[0].lstrip("| "): line for line in capsys.readouterr().out.splitlines()}
    assert lines["c"].split(" | ")[3:5] == ["1.000, n/a", "1.000, n/a"]  # at 0.35 and at 0.5
    # at 0.5: accuracy over the three sources, F1 over a (1.000) and b (0.000)
    assert lines["mean over 3 sources"].split(" | ")[3] == "0.833, 0.500 (F1 of 2)"
