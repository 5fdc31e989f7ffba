"""scripts/split_leaks.py: what dev and test share with train, and which of it is a leak."""

import importlib.util
from collections import Counter
from pathlib import Path

import pytest

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
    counts, leaks = split_leaks.find_leaks(folder(tmp_path, dev, []))
    assert counts[("s", "dev")] == Counter({"examples": 5, "turn shared": 4, "turn leaks": 2})
    assert [(what, i) for what, i, _ in leaks] == [("turn", "d1"), ("turn", "d4")]


def test_shared_passages_leak_unless_they_are_headings(tmp_path: Path) -> None:
    test = [ex("e1", [user("Am I eligible?")], (" ".join(RULE.split()), "Another rule.")),
            ex("e2", [user("Am I eligible?")], ("Cash Flows", "Another rule."))]
    counts, leaks = split_leaks.find_leaks(folder(tmp_path, [], test))
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
