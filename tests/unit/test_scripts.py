"""scripts/*.py: each answers --help with its usage and refuses a wrong argument count."""

import ast
import json
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
from example_factory import example

SCRIPTS = sorted((Path(__file__).resolve().parents[2] / "scripts").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda s: s.name)
def test_help_prints_the_usage_and_no_arguments_are_a_usage_error(
        script: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    summary = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8"))).splitlines()[0]
    shown = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True,
                           timeout=60, check=False)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"usage: {script.name}") and summary in shown.stdout
    # in this process, whose imports (sklearn, torch) are loaded once: a second start per script
    # would double the test's time
    monkeypatch.setattr(sys, "argv", [str(script)])
    with pytest.raises(SystemExit) as refused:
        runpy.run_path(str(script), run_name="__main__")
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: {script.name}") and "error:" in err


def test_combine_scores_reads_f1_and_auc_as_n_a_on_examples_of_one_label(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No example needs clarifying and none is asked: F1 and AUC count nothing."""
    main = runpy.run_path(str(SCRIPTS[0].with_name("combine_scores.py")))["main"]
    for name, shift in (("a", 0.0), ("b", 0.1)):
        rows = [f'{{"id": "e{i}", "label": 0, "score": {0.05 * i + shift}}}\n' for i in range(6)]
        (tmp_path / f"{name}.jsonl").write_text("".join(rows), encoding="utf-8")
    main(str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"))
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and all("F1 n/a (n=3); AUC on all n/a (n=6)" in line for line in lines), lines


def test_paired_auc_reads_the_candidates_gap_and_refuses_files_of_other_examples(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A candidate that ranks every example right against one that ranks them backwards: ahead in
    every resample on AUC, accuracy and F1, and on each source's examples; files that score other
    examples are refused."""
    def write(name: str, scores: list[float], ids: range = range(8)) -> str:
        rows = [f'{{"id": "e{i}", "source": "p{i % 2 + 1}", "label": {int(i >= 4)}, "score": {s}, '
                f'"decision": {str(s >= 0.5).lower()}}}\n'
                for i, s in zip(ids, scores)]
        (tmp_path / name).write_text("".join(rows), encoding="utf-8")
        return str(tmp_path / name)

    rising = [0.1 * i + 0.1 for i in range(8)]
    shipped, candidate = write("a.jsonl", rising[::-1]), write("b.jsonl", rising)
    script = str(SCRIPTS[0].with_name("paired_auc.py"))
    monkeypatch.setattr(sys, "argv", [script, shipped, candidate, "--resamples", "200"])
    runpy.run_path(script, run_name="__main__")
    out = capsys.readouterr().out
    assert "shipped   AUC 0.000" in out and "candidate AUC 1.000, accuracy 100.0% (n=8)" in out
    assert "candidate - shipped AUC: +1.000, 95% interval [+1.000, +1.000]; candidate ahead in 100%" in out
    # at 0.5 the backward scores decide every example wrong, the rising ones every example right
    assert "candidate - shipped accuracy: +1.000, 95% interval [+1.000, +1.000]" in out
    assert "candidate - shipped F1-clarify: +1.000, 95% interval [+1.000, +1.000]" in out
    assert out.splitlines()[-2:] == ["  p1: shipped AUC 0.000, candidate 1.000 (n=4)",
                                     "  p2: shipped AUC 0.000, candidate 1.000 (n=4)"]

    monkeypatch.setattr(sys, "argv", [script, shipped, shipped, "--resamples", "200"])  # the same scores
    runpy.run_path(script, run_name="__main__")
    assert "candidate - shipped AUC: +0.000, 95% interval [+0.000, +0.000]; candidate ahead in 0%" in capsys.readouterr().out

    monkeypatch.setattr(sys, "argv", [script, shipped, write("c.jsonl", rising, range(1, 9))])
    with pytest.raises(SystemExit, match="score other examples"):
        runpy.run_path(script, run_name="__main__")


def test_paired_auc_names_a_source_of_one_label(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [(f"e{i}", "mixed" if i < 4 else "clear-only", int(i in (2, 3)), 0.1 * i) for i in range(6)]
    path = tmp_path / "p.jsonl"
    path.write_text("".join(f'{{"id": "{i}", "source": "{src}", "label": {lab}, "score": {sc}, "decision": false}}\n'
                            for i, src, lab, sc in rows), encoding="utf-8")
    script = str(SCRIPTS[0].with_name("paired_auc.py"))
    monkeypatch.setattr(sys, "argv", [script, str(path), str(path), "--resamples", "50"])
    runpy.run_path(script, run_name="__main__")
    assert capsys.readouterr().out.splitlines()[-2:] == ["  clear-only: one label only, no AUC (n=2)",
                                                         "  mixed: shipped AUC 1.000, candidate 1.000 (n=4)"]


def test_written_cues_counts_each_cue_among_each_label() -> None:
    """A vague turn alone in lower case, a clear one after a dialog over an untitled passage: each
    cue's value lands under its own label."""
    cue_table = runpy.run_path(str(SCRIPTS[0].with_name("written_cues.py")))["cue_table"]
    vague = {"id": "w-1-1", "source": "written", "setting": "pre", "documents": [], "kind": "ambiguous",
             "messages": [{"role": "user", "content": "when is it due"}], "clarification": "Which bill?"}
    clear = {"id": "w-1-2", "source": "written", "setting": "post", "kind": "clear", "clarification": None,
             "messages": [{"role": "user", "content": "I pay Orla 12 a month."},
                          {"role": "assistant", "content": "Noted."},
                          {"role": "user", "content": "When is the Orla bill due?"}],
             "documents": [{"id": "d1", "text": "Orla bills fall due on the 3rd."},
                           {"id": "d2", "title": "Orla", "text": "Orla is an energy firm."}]}
    rows = {name: (clarify, clear_) for name, clarify, clear_ in cue_table([vague, clear])}
    assert rows["judged turn starts lower case"] == ("100% of 1", "0% of 1")
    assert rows["judged turn ends with '?'"] == ("0% of 1", "100% of 1")
    assert rows["mean words, turn alone"] == ("4.0 (1)", "-")
    assert rows["mean words, turn after a dialog"] == ("-", "6.0 (1)")
    assert rows["post: untitled passages"] == ("-", "50% of 2")


def test_join_predictions_reports_the_file_from_the_parts_that_scored_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Four examples scored in two files (one of them also scoring an example the file no longer
    holds): the report counts the file's four, the last file's line winning; an example no file
    scored is refused."""
    examples = [example(i, "pre", "Which one?" if i < 2 else None, "ambiguous" if i < 2 else "clear")
                for i in range(4)]
    data = tmp_path / "test.jsonl"
    data.write_text("".join(json.dumps(ex) + "\n" for ex in examples), encoding="utf-8")

    def write(name: str, rows: list[tuple[int, float]]) -> str:
        (tmp_path / name).write_text("".join(
            json.dumps({"id": f"ex-{i}", "source": "test", "setting": "pre", "kind": "clear",
                        "label": i < 2, "score": s, "decision": s >= 0.5, "question": None,
                        "reference": None, "seconds": 0.1}) + "\n" for i, s in rows), encoding="utf-8")
        return str(tmp_path / name)

    old = write("old.pred.jsonl", [(0, 0.9), (1, 0.1), (2, 0.2), (9, 0.9)])  # ex-1 wrong, ex-9 gone
    new = write("new.pred.jsonl", [(1, 0.8), (3, 0.3)])  # ex-1 scored again, right this time
    script = str(SCRIPTS[0].with_name("join_predictions.py"))
    out_json = tmp_path / "report.json"
    joined = tmp_path / "joined.pred.jsonl"
    monkeypatch.setattr(sys, "argv", [script, str(data), old, new, "--threshold", "0.5", "--json", str(out_json),
                                      "--predictions", str(joined)])
    runpy.run_path(script, run_name="__main__")
    report = json.loads(out_json.read_text(encoding="utf-8"))
    assert (report["n"], report["accuracy"], report["auc"]) == (4, 1.0, 1.0)
    rows = [json.loads(line) for line in joined.read_text(encoding="utf-8").splitlines()]
    assert [(r["id"], r["score"]) for r in rows] == [("ex-0", 0.9), ("ex-1", 0.8), ("ex-2", 0.2), ("ex-3", 0.3)]
    assert "examples: 4 (2 need clarification)" in capsys.readouterr().out

    monkeypatch.setattr(sys, "argv", [script, str(data), old, "--threshold", "0.5"])  # ex-3 unscored
    with pytest.raises(SystemExit, match="1 examples of .* are in no predictions file, e.g. ex-3"):
        runpy.run_path(script, run_name="__main__")


def test_cell_figures_splits_each_setting_by_a_dialog_before_the_turn(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Six examples: `pre` turns alone ranked right and decided right, `pre` turns after a dialog
    ranked backwards, one `post` turn alone (one label: no AUC); a prediction of an example the file
    lacks is refused."""
    examples = [example(i, "post" if i == 5 else "pre", "Which one?" if i % 2 else None,
                        "ambiguous" if i % 2 else "clear") for i in range(6)]
    for ex in examples[2:4]:
        ex["messages"] = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
                          *ex["messages"]]
    data = tmp_path / "probe.jsonl"
    data.write_text("".join(json.dumps(ex) + "\n" for ex in examples), encoding="utf-8")
    scores = {0: 0.1, 1: 0.9, 2: 0.8, 3: 0.2, 4: 0.3, 5: 0.7}  # ex-4 pre alone, clear, kept right
    preds = tmp_path / "p.pred.jsonl"
    preds.write_text("".join(
        json.dumps({"id": f"ex-{i}", "setting": examples[i]["setting"], "label": bool(i % 2), "score": s,
                    "decision": s >= 0.5}) + "\n" for i, s in scores.items()), encoding="utf-8")
    script = str(SCRIPTS[0].with_name("cell_figures.py"))
    monkeypatch.setattr(sys, "argv", [script, str(data), str(preds)])
    runpy.run_path(script, run_name="__main__")
    assert capsys.readouterr().out == (f"{preds} pre/alone 100.0% / 1.000 (n=3) | pre/dialog 0.0% / 0.000 (n=2)"
                                       " | post/alone 100.0% / n/a (n=1)\n")

    data.write_text("".join(json.dumps(ex) + "\n" for ex in examples[:5]), encoding="utf-8")
    with pytest.raises(SystemExit, match="1 predictions of .* score examples .* lacks, e.g. ex-5"):
        runpy.run_path(script, run_name="__main__")
