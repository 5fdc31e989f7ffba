"""`source_followups`: CANARD's follow-ups their dialog settles, over passages (`post`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from askbetter.clarifier import source_followups, source_rewrites
from askbetter.clarifier.examples import needs_clarification
from askbetter.clarifier.source_common import assistant, split_of, user

RAW = Path(__file__).parents[1] / "fixtures" / "raw"
SEED = 13


def _pair(i: int, resolved: bool, dataset: str = "canard") -> source_rewrites.RewritePair:
    """Dialog `i` about Band{i}; its history names the band only when `resolved`, and names
    Band{i+1} always (so dialog i-1's passage names Band{i})."""
    answer = f"Band{i} toured Europe" if resolved else "They toured Europe"
    answer += f" with Band{i + 1}."
    history = [user("What happened in 1990?"), assistant(answer)]
    return source_rewrites.RewritePair(dataset, f"g{i}", "2", history, "Did they win awards?",
                                       f"Did Band{i} win awards?", f"Band{i}: Career")


@pytest.fixture
def pairs(monkeypatch: pytest.MonkeyPatch) -> list[source_rewrites.RewritePair]:
    made = [_pair(i, resolved=i % 3 != 0) for i in range(60)]
    made.append(_pair(99, resolved=True, dataset="trec-ikat"))
    monkeypatch.setattr(source_rewrites, "rewrite_pairs", lambda raw_dir: made)
    return made


def test_each_resolved_canard_question_comes_over_its_own_and_another_passage(pairs, monkeypatch):
    monkeypatch.setattr(source_followups, "SHARE", 1.0)
    monkeypatch.setattr(source_followups, "CHUNKED_SHARE", 0.0)
    made = list(source_followups.convert(RAW, SEED))
    # every CANARD question its history resolves; none of TREC iKAT (no passages)
    assert sorted(int(g.removeprefix("canard:g")) for g, _ in made) == [
        i for i in range(60) if i % 3 != 0
    ]
    orders = set()
    for group, ex in made:
        i = int(group.removeprefix("canard:g"))
        assert ex["id"] == f"canard-g{i}-2{source_followups.SUFFIX}" and not needs_clarification(ex)
        assert (ex["source"], ex["setting"], ex["kind"]) == ("canard", "post", "hard-negative")
        assert ex["messages"] == [*pairs[i].history, user("Did they win awards?")]
        ids = [d["id"] for d in ex["documents"]]
        assert len(ids) == 2 and f"canard-g{i}" in ids
        orders.add(ids.index(f"canard-g{i}"))
        (other,) = [int(d.removeprefix("canard-g")) for d in ids if d != f"canard-g{i}"]
        assert other != i and split_of(f"canard:g{other}", SEED) == split_of(group, SEED)
        # the other passage does not name what the history supplies
        other_doc = next(d for d in ex["documents"] if d["id"] != f"canard-g{i}")
        words = re.findall(r"[a-z0-9]+", f"{other_doc.get('title', '')} {other_doc['text']}".lower())
        assert f"band{i}" not in words and other != i - 1
    assert orders == {0, 1}  # the own passage comes first or second


def test_the_share_samples_the_questions(pairs, monkeypatch):
    def made(share: float) -> set[str]:
        monkeypatch.setattr(source_followups, "SHARE", share)
        monkeypatch.setattr(source_followups, "CHUNKED_SHARE", 0.0)
        return {ex["id"] for _, ex in source_followups.convert(RAW, SEED)}

    half, every = made(0.5), made(1.0)
    assert half < every and 0.2 < len(half) / len(every) < 0.8


def test_the_chunked_share_comes_over_windows_of_its_own_passage_and_another(pairs, monkeypatch):
    monkeypatch.setattr(source_followups, "SHARE", 0.0)
    monkeypatch.setattr(source_followups, "CHUNKED_SHARE", 1.0)
    made = list(source_followups.convert(RAW, SEED))
    assert len(made) == 40  # the resolved ones of 60
    for group, ex in made:
        i = int(group.removeprefix("canard:g"))
        assert ex["id"] == f"canard-g{i}-2{source_followups.CHUNKED_SUFFIX}"
        assert (ex["kind"], ex["messages"][-1]) == ("hard-negative", user("Did they win awards?"))
        own = [d for d in ex["documents"] if d["id"].startswith(f"canard-g{i}-w")]
        # the short passage's windows may coincide: at least one, and one other passage
        assert 1 <= len(own) <= source_followups.CHUNKS_MAX and len(ex["documents"]) == len(own) + 1
        passage_text = " ".join(m["content"] for m in pairs[i].history if m["role"] == "assistant")
        assert all(d["text"].split("\n")[-1] in passage_text for d in own)


def test_among_chunks_gives_distinct_windows_of_a_long_passage_and_the_other():
    text = " ".join(f"Sentence {k} tells of Band1 and its tour number {k}." for k in range(40))
    own = {"id": "canard-g1", "text": text, "title": "Band1: Career"}
    other = {"id": "canard-g7", "text": "Band7 split up."}
    seen_orders = set()
    for key in range(20):
        docs = source_followups.among_chunks(own, other, SEED, str(key))
        windows = [d for d in docs if d["id"] != "canard-g7"]
        assert source_followups.CHUNKS_MIN <= len(windows) <= source_followups.CHUNKS_MAX
        assert len({d["text"] for d in windows}) == len(windows)
        assert all(d["title"] == "Band1: Career" and d["text"].rstrip("…") in text
                   for d in windows)
        assert other in docs
        seen_orders.add(docs.index(other))
    assert len(seen_orders) > 1  # the other passage is not always in one place
