"""`source_named_pair`: CANARD's pronoun questions after an opening naming one candidate or two."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import pytest

from askbetter.clarifier import source_named_pair, source_rewrites
from askbetter.clarifier.examples import Example, needs_clarification
from askbetter.clarifier.source_common import split_of
from example_factory import canard_pair

RAW = Path(__file__).parents[1] / "fixtures" / "raw"
SEED = 13
PRONOUNS = {**dict.fromkeys(range(40), "he"), **dict.fromkeys(range(40, 70), "it"),
            **dict.fromkeys(range(70, 90), "they")}  # fmt: skip


def _made(monkeypatch: pytest.MonkeyPatch, seed: int = SEED) -> list[tuple[str, Example]]:
    pairs = [canard_pair(i, pronoun, resolved=True) for i, pronoun in PRONOUNS.items()]
    monkeypatch.setattr(source_rewrites, "rewrite_pairs", lambda raw_dir: pairs)
    return list(source_named_pair.convert(RAW, seed))


def _index(example_id: str) -> int:
    return int(example_id.split("-")[1].removeprefix("g"))


def _base(example_id: str) -> str:
    suffix = next(s for s in (source_named_pair.REWRITE, source_named_pair.TWO, source_named_pair.ONE)
                  if example_id.endswith(s))
    return example_id.removesuffix(suffix)


def _named(ex: Example) -> set[int]:
    """The dialogs whose Person{i} Smith{i} the history (the opening) names."""
    opening = " ".join(m["content"] for m in ex["messages"][:-1]) or ex["messages"][0]["content"]
    return {i for i in PRONOUNS if f"Person{i} Smith{i} " in opening.replace(".", " ")}


def test_each_question_gives_three_pre_twins_that_differ_in_the_names_or_the_pronoun(monkeypatch):
    made = _made(monkeypatch)
    by_base: dict[str, dict[str, tuple[str, Example]]] = {}
    for group, ex in made:
        base = _base(ex["id"])
        by_base.setdefault(base, {})[ex["id"].removeprefix(base)] = (group, ex)
    # every "he" and "it" question with a partner of its class in its split; none for "they"
    indices = sorted(_index(base) for base in by_base)
    assert indices and all(PRONOUNS[i] != "they" for i in indices)
    assert {PRONOUNS[i] for i in indices} == {"he", "it"}
    for base, twins in by_base.items():
        i = _index(base)
        assert set(twins) == {source_named_pair.TWO, source_named_pair.REWRITE, source_named_pair.ONE}
        (g2, two), (_, rewrite), (_, one) = (twins[s] for s in (
            source_named_pair.TWO, source_named_pair.REWRITE, source_named_pair.ONE))
        assert g2 == f"canard:g{i}" and all(g == g2 for g, _ in twins.values())
        assert all(ex["setting"] == "pre" and ex["source"] == "canard" and not ex["documents"]
                   for _, ex in twins.values())  # fmt: skip
        # ambiguous: two of the question's class from its split named, the reference names both
        assert needs_clarification(two) and two["kind"] == "ambiguous"
        (j,) = _named(two) - {i}
        assert i in _named(two) and PRONOUNS[j] == PRONOUNS[i] and split_of(
            f"canard:g{j}", SEED) == split_of(f"canard:g{i}", SEED)
        assert f"Person{i} Smith{i}" in two["clarification"]
        assert f"Person{j} Smith{j}" in two["clarification"]
        # clear: the same opening and the rewrite; hard negative: the opening with one name
        assert not needs_clarification(rewrite) and rewrite["kind"] == "clear"
        assert rewrite["messages"][:-1] == two["messages"][:-1]
        assert rewrite["messages"][-1]["content"].endswith(f"When was Person{i} Smith{i} born?")
        assert not needs_clarification(one) and one["kind"] == "hard-negative"
        assert _named(one) == {i} and one["messages"][-1]["content"].lower().endswith(
            f"when was {PRONOUNS[i]} born?")


def test_openings_come_in_the_question_s_message_or_before_an_acknowledgement(monkeypatch):
    asked = [ex for _, ex in _made(monkeypatch) if ex["id"].endswith(source_named_pair.TWO)]
    shapes = Counter(len(ex["messages"]) for ex in asked)
    assert set(shapes) == {1, 3} and min(shapes.values()) >= 5
    for ex in asked:
        if len(ex["messages"]) == 3:
            assert [m["role"] for m in ex["messages"]] == ["user", "assistant", "user"]
            assert ex["messages"][1]["content"] in source_named_pair.ACKNOWLEDGEMENTS
        else:  # the opening, then the question with a capital
            assert ex["messages"][0]["content"].endswith(f"When was {PRONOUNS[_index(ex['id'])]} born?")


def test_a_question_whose_rewrite_adds_more_than_the_name_is_left_out(monkeypatch):
    pairs = [canard_pair(i, "he", resolved=True) for i in range(20)]
    pairs[0] = dataclasses.replace(pairs[0], rewrite="When was Person0 Smith0 born in Ohio?")
    monkeypatch.setattr(source_rewrites, "rewrite_pairs", lambda raw_dir: pairs)
    made = {_index(ex["id"]) for _, ex in source_named_pair.convert(RAW, SEED)}
    assert 0 not in made and made


def test_the_same_seed_gives_the_same_examples_and_another_seed_other_wordings(monkeypatch):
    made = _made(monkeypatch)
    assert made == _made(monkeypatch)
    other = {ex["id"]: ex for _, ex in _made(monkeypatch, seed=SEED + 1)}
    assert any(ex["messages"] != other[ex["id"]]["messages"] for _, ex in made if ex["id"] in other)
