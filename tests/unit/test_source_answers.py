"""`source_answers`: TREC iKAT's follow-ups over grounded answers as passages (`post`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from askbetter.clarifier import source_answers, source_rewrites
from askbetter.clarifier.examples import needs_clarification
from askbetter.clarifier.source_common import assistant, split_of, user

RAW = Path(__file__).parents[1] / "fixtures" / "raw"
SEED = 13
FILLER = " The model is a well documented subject with many sources to read." * 5


def _pair(i: int, kind: str) -> source_rewrites.RewritePair:
    """Topic `i` about Gadget{i}: its history names the gadget for "resolved", not for
    "unresolved"; "standalone" asks a question the rewrite leaves as it is. The response to the
    question is a paragraph naming the gadget, except for "asks-back", a question to the user."""
    said = f"Gadget{i} is a phone." if kind != "unresolved" else "The phone is new."
    history = [user("Which phone should I buy?"), assistant(said + FILLER)]
    question, rewrite = "How much does it cost?", f"How much does Gadget{i} cost?"
    if kind == "standalone":
        question = rewrite = f"Where is Gadget{i} sold?"
    answer = f"Gadget{i} costs 300 dollars." + FILLER
    if kind == "asks-back":
        answer = "Do you mean the new one or the old one?" + FILLER.replace(".", "?")
    return source_rewrites.RewritePair("trec-ikat", str(i), f"{i}-1-2", history, question,
                                       rewrite, answer=answer)


KINDS = ("resolved", "unresolved", "standalone", "asks-back")


@pytest.fixture
def pairs(monkeypatch: pytest.MonkeyPatch) -> list[source_rewrites.RewritePair]:
    made = [_pair(i, KINDS[i % 4]) for i in range(80)]
    made.append(source_rewrites.RewritePair(  # a CANARD dialog: a donor of histories only
        "canard", "c1", "3", [user("Who wrote it?"), assistant("Ann wrote the song.")],
        "When?", "When did Ann write the song?"))
    monkeypatch.setattr(source_rewrites, "rewrite_pairs", lambda raw_dir: made)
    return made


def _words(doc: dict) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", doc["text"].lower()))


def test_resolved_and_standalone_questions_come_over_their_answer_and_another(pairs):
    made = list(source_answers.convert(RAW, SEED))
    by_topic = {int(g.removeprefix("trec-ikat:")): ex for g, ex in made}
    # every resolved or standalone question with a grounded answer; none unresolved or asking back
    assert sorted(by_topic) == [i for i in range(80) if i % 4 in (0, 2)]
    orders = set()
    for i, ex in by_topic.items():
        kind = "hard-negative" if i % 4 == 0 else "clear"
        assert ex["id"] == f"trec-ikat-{i}-{i}-1-2{source_answers.SUFFIX}"
        assert (ex["source"], ex["setting"], ex["kind"]) == ("trec-ikat", "post", kind)
        assert not needs_clarification(ex)
        assert ex["messages"] == [*pairs[i].history, user(pairs[i].question)]
        ids = [d["id"] for d in ex["documents"]]
        assert len(ids) == 2 and f"trec-ikat-{i}-1-2" in ids
        orders.add(ids.index(f"trec-ikat-{i}-1-2"))
        other = next(d for d in ex["documents"] if d["id"] != f"trec-ikat-{i}-1-2")
        j = int(other["id"].removeprefix("trec-ikat-").split("-")[0])
        assert j != i and split_of(f"trec-ikat:{j}", SEED) == split_of(f"trec-ikat:{i}", SEED)
        assert f"gadget{i}" not in _words(other)
    assert orders == {0, 1}


def test_resolved_pronoun_questions_after_another_dialog_over_other_topics_ask(pairs):
    made = list(source_answers.convert_unresolved(RAW, SEED))
    assert made, "some resolved pronoun questions find a donor history and a third passage"
    for group, ex in made:
        i = int(group.removeprefix("trec-ikat:"))
        assert i % 4 == 0 and ex["id"].endswith(source_answers.OTHER_DIALOG_SUFFIX)
        assert (ex["setting"], ex["kind"]) == ("post", "underspecified")
        assert ex["clarification"] == source_rewrites.clarifying_question("it")
        assert ex["messages"][-1] == user("How much does it cost?")
        history = " ".join(m["content"] for m in ex["messages"][:-1]).lower()
        assert history and f"gadget{i}" not in history  # another dialog's
        # neither passage is the question's own answer, nor names its referent
        ids = {d["id"] for d in ex["documents"]}
        assert len(ids) == 2 and f"trec-ikat-{i}-1-2" not in ids
        assert not any(f"gadget{i}" in _words(d) for d in ex["documents"])
    # the clear twin over the own answer, one of the two passages, comes from `convert`
    clear = {ex["id"]: ex for _, ex in source_answers.convert(RAW, SEED)}
    for _, ex in made:
        twin = clear[ex["id"].replace(source_answers.OTHER_DIALOG_SUFFIX, source_answers.SUFFIX)]
        assert len({d["id"] for d in twin["documents"]} & {d["id"] for d in ex["documents"]}) == 1


@pytest.mark.parametrize(("answer", "expected"), [
    ("Gadget1 costs 300 dollars." + FILLER, True),
    ("Gadget1 costs 300 dollars.", False),  # a span, not a passage
    ("Would you rather buy a new one?" + FILLER.replace(".", "?"), False),  # asks back
])  # fmt: skip
def test_grounded_answers_are_long_and_not_a_question(answer, expected):
    assert source_answers.grounded(answer) is expected


def test_the_fixture_slice_gives_follow_ups_over_their_own_responses():
    """The real iKAT reader: each example's passages hold its turn's response, unchanged."""
    responses = {f"trec-ikat-{p.turn_id}": p.answer for p in source_rewrites.rewrite_pairs(RAW)
                 if p.dataset == "trec-ikat"}
    made = [ex for _, ex in source_answers.convert(RAW, SEED)]
    assert made
    for ex in made:
        # the id is "trec-ikat-{topic}-{turn}-over-[topic-]answers", its passage "trec-ikat-{turn}"
        turn = ex["id"].removeprefix("trec-ikat-").removesuffix(source_answers.TOPIC_SUFFIX)
        turn = turn.removesuffix(source_answers.SUFFIX)
        own = f"trec-ikat-{turn.split('-', 1)[1]}"
        docs = {d["id"]: d["text"] for d in ex["documents"]}
        assert docs[own] == responses[own] and source_answers.grounded(docs[own])
        assert ex["setting"] == "post" and not needs_clarification(ex)


def test_questions_also_come_over_their_topics_other_responses_not_in_their_history(monkeypatch):
    """Topic 0 has a resolved question at turns 2, 3 and 4 (each turn's history holds the turns
    before it); its other responses not in the history are passages beside its own."""
    def turn(t: int) -> source_rewrites.RewritePair:
        history = [user("Which phone should I buy?"), assistant("Gadget0 is a phone." + FILLER)]
        for k in range(2, t):
            history += [user(f"Question {k}?"), assistant(f"Answer {k}: Gadget0." + FILLER)]
        return source_rewrites.RewritePair(
            "trec-ikat", "0", f"0-1-{t}", history, "How much does it cost?",
            "How much does Gadget0 cost?", answer=f"Answer {t}: Gadget0." + FILLER)

    made_pairs = [turn(t) for t in (2, 3, 4)] + [_pair(i, "resolved") for i in range(1, 40)]
    monkeypatch.setattr(source_rewrites, "rewrite_pairs", lambda raw_dir: made_pairs)
    made = {ex["id"]: ex for _, ex in source_answers.convert(RAW, SEED)}
    for t, expected in ((2, (2, 3, 4)), (3, (3, 4))):
        ex = made[f"trec-ikat-0-0-1-{t}{source_answers.TOPIC_SUFFIX}"]
        # its own response and the topic's later ones; the earlier ones are in its history
        assert sorted(d["id"] for d in ex["documents"]) == [f"trec-ikat-0-1-{k}" for k in expected]
        twin = made[f"trec-ikat-0-0-1-{t}{source_answers.SUFFIX}"]
        assert (ex["kind"], ex["messages"]) == (twin["kind"], twin["messages"])
        assert ex["kind"] == "hard-negative" and not needs_clarification(ex)
    # turn 4's history holds every other response of its topic; other topics have one response
    assert [k for k in made if k.endswith(source_answers.TOPIC_SUFFIX)] == [
        f"trec-ikat-0-0-1-{t}{source_answers.TOPIC_SUFFIX}" for t in (2, 3)]
