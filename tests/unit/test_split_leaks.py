"""scripts/split_leaks.py: what dev and test share with train, and which of it is a leak."""

import importlib.util
from collections import Counter
from pathlib import Path

import pytest

from askbetter.clarifier.evaluate import Prediction, write_predictions
from askbetter.clarifier.examples import Example, write_examples
from askbetter.clarifier.source_common import assistant, document, make_example, user

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "split_leaks.py"
spec = importlib.util.spec_from_file_location("split_leaks", SCRIPT)
split_leaks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(split_leaks)

ZAPPA = [user("Tell me about Frank Zappa."), assistant("He led the Mothers of Invention.")]
DAVIS = [user("Tell me about Miles Davis."), assistant("He played the trumpet.")]
ALBUMS = "Which albums were recorded at Van Gelder Studio in 1959?"
RULE = "## Age\n\nYou must be 18 or over to apply."


def ex(i: str, messages: list, passages: tuple[str, ...] = ()) -> Example:
    docs = [document(f"d{k}", text) for k, text in enumerate(passages)]
    return make_example(i, "s", "post" if docs else "pre", messages, None, "clear", docs)


def folder(tmp_path: Path, dev: list[Example], test: list[Example]) -> Path:
    train = [ex("t1", [user("Who played Rizzo in Grease?")]),
             ex("t2", [*ZAPPA, user("Did he win any awards?")]),
             ex("t3", [*ZAPPA, user(ALBUMS)]),
             ex("t4", [user("Can I apply?")], (RULE, "Cash Flows"))]
    for split, examples in (("train", train), ("dev", dev), ("test", test)):
        write_examples(tmp_path / f"{split}.jsonl", examples)
    return tmp_path


def test_shared_turns_leak_alone_or_after_the_same_history_unless_generic(tmp_path: Path) -> None:
    dev = [ex("d1", [user("who played rizzo in grease")]),  # the same question: a leak
           ex("d2", [user("Did he win any awards?")]),  # a pronoun question: generic
           ex("d3", [*DAVIS, user(ALBUMS)]),  # after another dialog: asks about something else
           ex("d4", [*ZAPPA, user(ALBUMS + "!")]),  # after the same dialog: a leak
           ex("d5", [user("Yes")])]  # short: generic
    counts, leaks = split_leaks.find_leaks(split_leaks.read_splits(folder(tmp_path, dev, [])))
    assert counts[("s", "dev")] == Counter({"examples": 5, "turn shared": 4, "turn leaks": 2})
    assert [(what, i) for what, i, _ in leaks] == [("turn", "d1"), ("turn", "d4")]


def test_shared_passages_leak_unless_they_are_headings(tmp_path: Path) -> None:
    test = [ex("e1", [user("Am I eligible?")], (" ".join(RULE.split()), "Another rule.")),
            ex("e2", [user("Am I eligible?")], ("Cash Flows", "Another rule."))]
    counts, leaks = split_leaks.find_leaks(split_leaks.read_splits(folder(tmp_path, [], test)))
    assert counts[("s", "test")] == Counter(
        {"examples": 2, "passage shared": 2, "passage leaks": 1}
    )
    assert leaks == [("passage", "e1", "## Age You must be 18 or over to apply.")]


def test_main_exits_1_on_a_leak_and_0_without(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    clean = folder(tmp_path / "clean", [ex("d1", [user("Who played Danny in Grease?")])], [])
    assert split_leaks.main(str(clean)) == 0
    assert "turn leaks: 0 texts in 0 examples" in capsys.readouterr().out
    leaking = folder(tmp_path / "leaking", [ex("d1", [user("Who played Rizzo in Grease?")])], [])
    assert split_leaks.main(str(leaking)) == 1
    out = capsys.readouterr().out
    assert "turn leaks: 1 texts in 1 examples:" in out and "who played rizzo in grease" in out


def predictions(path: Path, rows: list[tuple[str, str, str, bool, float, bool]]) -> str:
    """A `--predictions` file of (id, source, setting, label, score, decision) rows."""
    write_predictions(path, [Prediction(i, source, setting, "clear", label, score, decision,
                                        None, None, 0.1)
                             for i, source, setting, label, score, decision in rows])
    return str(path)


# e1 leaks (the train rule); each row decides at its `decision`, not at a threshold on its score
LEAK_TEST = [ex("e1", [user("Am I eligible?")], (RULE,)),
             *(ex(f"e{k}", [user(f"Question {k} about something else?")]) for k in (2, 3, 4))]
LEAK_PREDICTIONS = [("e1", "a", "post", True, 0.9, False),  # wrong at its own decision
                    ("e2", "b", "pre", True, 0.8, True),
                    ("e3", "b", "pre", False, 0.1, False),
                    ("e4", "c", "post", False, 0.3, True)]  # wrong


def test_predictions_are_scored_apart_for_leaking_examples_and_the_others(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = folder(tmp_path, [], LEAK_TEST)
    assert split_leaks.main(str(data), predictions(tmp_path / "test.pred.jsonl", LEAK_PREDICTIONS)) == 1
    out = capsys.readouterr().out
    assert "test predictions (" in out and "4 examples), at their own decisions:" in out
    table = {line.split("  ")[0].strip(): line.split()[-2:] for line in out.splitlines()
             if line.startswith(("examples", "accuracy", "F1-clarify", "AUC"))}
    assert table == {"examples": ["1", "3"], "accuracy": ["0.0%", "66.7%"],
                     "F1-clarify": ["0.000", "0.667"], "AUC": ["n/a", "1.000"]}
    # the leaking example's cell first, then the others' by size
    cells = {line[:20].strip(): (line[20:44].strip(), line[44:].strip())
             for line in out.splitlines() if line.startswith(("a ", "b ", "c "))}
    assert list(cells) == ["a post", "b pre", "c post"]
    assert cells["a post"] == ("0.0% / n/a (n=1)", "")
    assert cells["b pre"] == ("", "100.0% / 1.000 (n=2)")


def test_biggest_cells_keeps_cells_most_leaking_examples_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [dict(zip(("id", "source", "setting", "label", "score", "decision"), r))
            for r in LEAK_PREDICTIONS]
    monkeypatch.setattr(split_leaks, "CELLS", 2)
    assert split_leaks.biggest_cells(split_leaks.leak_figures(rows, {"e4"})) == [
        ("c", "post"), ("b", "pre")]


def test_predictions_of_no_held_out_split_exit_2(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    data = folder(tmp_path, [ex("d1", [user("Who played Danny in Grease?")])], LEAK_TEST)
    dev = predictions(tmp_path / "dev.pred.jsonl", [("d1", "s", "pre", False, 0.1, False)])
    assert split_leaks.main(str(data), dev) == 1
    assert "dev predictions (" in capsys.readouterr().out
    mixed = predictions(tmp_path / "mixed.pred.jsonl", [("d1", "s", "pre", False, 0.1, False),
                                                   ("e2", "s", "pre", False, 0.1, False)])
    empty = predictions(tmp_path / "empty.pred.jsonl", [])
    for wrong in (mixed, empty):
        assert split_leaks.main(str(data), wrong) == 2
        assert "not examples of one held-out split" in capsys.readouterr().err


def test_main_reads_each_split_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = folder(tmp_path, [], LEAK_TEST)
    read, read_examples = [], split_leaks.read_examples
    monkeypatch.setattr(split_leaks, "read_examples", lambda path: read.append(path.name) or read_examples(path))
    assert split_leaks.main(str(data), predictions(tmp_path / "test.pred.jsonl", LEAK_PREDICTIONS)) == 1
    assert sorted(read) == ["dev.jsonl", "test.jsonl", "train.jsonl"]
