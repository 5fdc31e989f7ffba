"""scripts/*.py: each answers --help with its usage and refuses a wrong argument count."""

import ast
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

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
    every resample; files that score other examples are refused."""
    def write(name: str, scores: list[float], ids: range = range(8)) -> str:
        rows = [f'{{"id": "e{i}", "label": {int(i >= 4)}, "score": {s}, "decision": {str(s >= 0.5).lower()}}}\n'
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

    monkeypatch.setattr(sys, "argv", [script, shipped, shipped, "--resamples", "200"])  # the same scores
    runpy.run_path(script, run_name="__main__")
    assert "candidate - shipped AUC: +0.000, 95% interval [+0.000, +0.000]; candidate ahead in 0%" in capsys.readouterr().out

    monkeypatch.setattr(sys, "argv", [script, shipped, write("c.jsonl", rising, range(1, 9))])
    with pytest.raises(SystemExit, match="score other examples"):
        runpy.run_path(script, run_name="__main__")


def test_declarative_passages_rewrites_ambignq_readings_as_statements_and_nothing_else() -> None:
    """Each pattern's statement; a passage no pattern fits, a titled (Wikipedia) passage and
    another source's passages are left as they were."""
    module = runpy.run_path(str(SCRIPTS[0].with_name("declarative_passages.py")))
    as_statement, rewrite = module["as_statement"], module["rewrite"]
    assert as_statement("Who was the Indian Test Match captain in 2018", "Virat Kohli") == \
        "Virat Kohli was the Indian Test Match captain in 2018."
    assert as_statement("Where was the 2014 FIFA World Cup held?", "Brazil") == "The 2014 FIFA World Cup was held in Brazil."
    assert as_statement("When was the last time the cubs won", "2016") == "The last time the cubs won was in 2016."
    assert as_statement("When did the Chicago Fire Soccer Club start", "October 8, 1997.") == \
        "On October 8, 1997, the Chicago Fire Soccer Club start."
    assert as_statement("What is the name of the brightest star in lyra", "Vega") == \
        "The name of the brightest star in lyra is Vega."
    assert as_statement("How many teams qualify for the champions league", "four") == \
        "Four teams qualify for the champions league."
    assert as_statement("Name of the brightest star in lyra", "Vega") is None

    kept = [{"id": "p1", "text": "Name of the brightest star in lyra — Vega."},
            {"id": "p2", "title": "Grease", "text": "Who played rizzo — Stockard Channing."}]
    example = {"source": "ambignq", "documents": [{"id": "p0", "text": "Who played rizzo in grease — Stockard Channing."},
                                                  *[dict(d) for d in kept]]}
    assert rewrite(example) == (1, 1)
    assert example["documents"] == [{"id": "p0", "text": "Stockard Channing played rizzo in grease."}, *kept]
    other = {"source": "canard", "documents": [{"id": "p1", "text": "Who played rizzo in grease — Stockard Channing."}]}
    assert rewrite(other) == (0, 0) and other["documents"][0]["text"].endswith("— Stockard Channing.")


def test_declarative_passages_moves_a_leading_phrase_and_drops_the_inverted_auxiliary() -> None:
    as_statement = runpy.run_path(str(SCRIPTS[0].with_name("declarative_passages.py")))["as_statement"]
    assert as_statement("As of 2017, when was the last time the warriors won a championship", "2017") == \
        "As of 2017, the last time the warriors won a championship was in 2017."
    assert as_statement("In what city is the Orange Bowl held in 2016", "Miami Gardens") == \
        "In the city Miami Gardens, the Orange Bowl held in 2016."
    assert as_statement("What's the name of the cat with no hair", "Sphynx") == "The name of the cat with no hair is Sphynx."
    assert as_statement("Who did the Eagles play in the Superbowl", "Oakland Raiders") == \
        "Oakland Raiders is who the Eagles play in the Superbowl."
    assert as_statement("In 2017, who was the leader of the opposition", "Mallikarjun Kharge") == \
        "In 2017, Mallikarjun Kharge was the leader of the opposition."  # the answer's capital kept
    assert as_statement("When was the film released", "June 2016") == "The film was released in June 2016."
    assert as_statement("When was the film released", "June 5, 2016") == "The film was released on June 5, 2016."
    assert as_statement("What body of water do the tigris and euphrates flow into", "Arvand Rud") == \
        "In the body of water Arvand Rud, the tigris and euphrates flow into."
    assert as_statement("What happened to the titanic", "It sank") is None  # "happened" is no noun
