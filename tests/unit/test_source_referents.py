"""`source_referents`: CANARD's pronoun questions over passages naming one referent or two."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from askbetter.clarifier import source_referents, source_rewrites
from askbetter.clarifier.examples import Example, needs_clarification
from askbetter.clarifier.source_common import split_of
from example_factory import canard_pair

RAW = Path(__file__).parents[1] / "fixtures" / "raw"
SEED = 13


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Example]]:
    pairs = [canard_pair(i, "he", resolved=i % 2 == 0) for i in range(40)]
    pairs += [canard_pair(i, "she", resolved=False) for i in range(40, 80)]
    monkeypatch.setattr(source_rewrites, "rewrite_pairs", lambda raw_dir: pairs)
    monkeypatch.setattr(source_referents, "SHARE", 1.0)
    return list(source_referents.convert(RAW, SEED))


def _title(doc: dict) -> str:
    """A passage's title: its field, or else its text's first line."""
    return doc.get("title") or doc["text"].split("\n")[0]


def _index(ex: Example) -> int:
    return int(ex["id"].split("-")[1].removeprefix("g"))


def _gender(i: int) -> str:
    return "he" if i < 40 else "she"


def _split(i: int) -> str:
    return split_of(f"canard:g{i}", SEED)


def _has_partner(i: int, gender: str) -> bool:
    return any(j != i and _split(j) == _split(i) and _gender(j) == gender for j in range(80))


def test_every_question_asks_over_two_referents_of_its_class_from_its_split(made):
    asked = [(g, ex) for g, ex in made if ex["id"].endswith(source_referents.TWO)]
    # every question with another of its pronoun class in its split
    expected = [i for i in range(80) if _has_partner(i, _gender(i))]
    assert sorted(_index(ex) for _, ex in asked) == expected
    histories = Counter(len(ex["messages"]) > 1 for _, ex in asked)
    assert histories[True] >= 20 and histories[False] >= 20  # alone and after another dialog
    for group, ex in asked:
        i = _index(ex)
        assert group == f"canard:g{i}" and needs_clarification(ex)
        assert (ex["setting"], ex["kind"], ex["source"]) == ("post", "ambiguous", "canard")
        own, partner = sorted(ex["documents"], key=lambda d: d["id"] != f"canard-g{i}")
        assert own["id"] == f"canard-g{i}" and _title(own) == f"Person{i} Smith{i}: Career"
        j = int(partner["id"].removeprefix("canard-g"))
        assert j != i and _gender(j) == _gender(i) and _split(j) == _split(i)
        # the reference names both, in the order of the passages
        names = [_title(d).split(":")[0] for d in ex["documents"]]
        assert ex["clarification"].index(names[0]) < ex["clarification"].index(names[1])
        # another dialog's history names neither referent nor holds a pronoun of the class
        history = _words(" ".join(m["content"] for m in ex["messages"][:-1]))
        assert not history & (_words(names[0]) | _words(names[1]) | {_gender(i)})
        assert ex["messages"][-1]["content"] == f"When was {_gender(i)} born?"
        assert "I don't know" not in own["text"] and "joined a band" in own["text"].lower()


def test_half_the_passages_carry_their_title_as_the_first_line_of_their_text(made):
    passages = {d["id"]: d for _, ex in made for d in ex["documents"]}
    in_text = [d for d in passages.values() if "title" not in d]
    assert 0.3 < len(in_text) / len(passages) < 0.7
    for d in passages.values():
        first, *rest = d["text"].split("\n")
        i = int(d["id"].removeprefix("canard-g"))
        assert _title(d) == f"Person{i} Smith{i}: Career" and bool(rest) == ("title" not in d)


def test_the_clear_twin_is_the_question_after_the_history_that_names_the_referent(made):
    asked = {ex["id"].removesuffix(source_referents.TWO): ex for _, ex in made
             if ex["id"].endswith(source_referents.TWO)}  # fmt: skip
    clear = [ex for _, ex in made if ex["id"].endswith(source_referents.RESOLVED)]
    # one per asked question whose own history names the referent (the even "he" dialogs)
    expected = [i for i in map(_index, asked.values()) if i < 40 and i % 2 == 0]
    assert sorted(map(_index, clear)) == sorted(expected) and expected
    for ex in clear:
        i = _index(ex)
        assert not needs_clarification(ex) and ex["id"].endswith(source_referents.RESOLVED)
        assert (ex["kind"], ex["setting"]) == ("hard-negative", "post")
        twin = asked[ex["id"].removesuffix(source_referents.RESOLVED)]
        assert ex["documents"] == twin["documents"]
        assert f"Person{i} Smith{i}" in ex["messages"][1]["content"]
        assert ex["messages"][-1] == twin["messages"][-1]


def test_asked_after_another_dialog_the_rewrite_gives_a_clear_twin(made):
    asked = {ex["id"].removesuffix(source_referents.TWO): ex for _, ex in made
             if ex["id"].endswith(source_referents.TWO)}  # fmt: skip
    named = [(g, ex) for g, ex in made if ex["id"].endswith(source_referents.NAMED)]
    # one per asked question with a history before it (another dialog's)
    assert sorted(ex["id"].removesuffix(source_referents.NAMED) for _, ex in named) == sorted(
        base for base, ex in asked.items() if len(ex["messages"]) > 1
    )
    assert named
    for group, ex in named:
        i = _index(ex)
        twin = asked[ex["id"].removesuffix(source_referents.NAMED)]
        assert group == f"canard:g{i}" and not needs_clarification(ex)
        assert (ex["kind"], ex["setting"], ex["source"]) == ("clear", "post", "canard")
        assert ex["documents"] == twin["documents"]
        assert ex["messages"][:-1] == twin["messages"][:-1]
        assert ex["messages"][-1]["content"] == f"When was Person{i} Smith{i} born?"


def test_the_share_keeps_whole_questions(monkeypatch):
    pairs = [canard_pair(i, "he", resolved=True) for i in range(60)]
    monkeypatch.setattr(source_rewrites, "rewrite_pairs", lambda raw_dir: pairs)

    def made(share: float) -> set[str]:
        monkeypatch.setattr(source_referents, "SHARE", share)
        return {ex["id"] for _, ex in source_referents.convert(RAW, SEED)}

    half, every = made(0.5), made(1.0)
    assert half < every and 0.2 < len(half) / len(every) < 0.8
    bases = Counter(i.removesuffix(source_referents.TWO).removesuffix(source_referents.RESOLVED)
                    .removesuffix(source_referents.NAMED) for i in half)  # fmt: skip
    assert set(bases.values()) <= {2, 3} and 2 in set(bases.values())


@pytest.mark.parametrize(
    ("question", "rewrite", "pronoun", "name"),
    [
        ("why did he think the band lacked effort?", "why did Frank Zappa think the band lacked effort?",
         "he", "Frank Zappa"),
        ("Who were his parents?", "Who were Tori Amos's parents?", "his", "Tori Amos"),
        ("Was it successful?", "Was Woodstock successful?", "it", "Woodstock"),
        ("Who was his father?", "Who was Sammy Davis Jr.'s father?", "his", "Sammy Davis Jr"),
        ("Did she tour?", "Did him tour?", "she", None),  # the replacement is itself a pronoun
        ("Was his band good?", "Was the Mothers of Invention good?", "his", None),  # more than "his"
        ("When was he born?", "When was he born in 1950?", "he", None),  # nothing replaces it
    ],
)  # fmt: skip
def test_referent_name_is_what_replaces_the_pronoun(question, rewrite, pronoun, name):
    assert source_referents.referent_name(question, rewrite, pronoun) == name


def test_the_fixture_slice_pairs_two_canard_dialogs_by_their_articles(monkeypatch):
    monkeypatch.setattr(source_referents, "SHARE", 1.0)
    asked = {ex["id"]: ex for _, ex in source_referents.convert(RAW, SEED)}
    zappa = asked["canard-C_2d211835213b45588ad5ca868ce7fabd_0-6" + source_referents.TWO]
    titles = sorted(map(_title, zappa["documents"]))
    assert titles[0] == "Frank Zappa: Disbandment" and titles[1].startswith("Walter Scott: ")
    assert "Frank Zappa" in zappa["clarification"] and "Walter Scott" in zappa["clarification"]
    assert zappa["messages"][-1]["content"] == "why did he think the band lacked effort?"
    scott = [ex for i, ex in asked.items()
             if "C_11d26dd9b54845759b10bef5895fc901_1" in i and i.endswith(source_referents.TWO)]
    assert scott and all("Frank Zappa" in ex["clarification"] for ex in scott)
