"""`crowding`: AmbigNQ's `post` examples among other retrieved passages."""

from __future__ import annotations

from pathlib import Path

import pytest

from askbetter.clarifier import crowding, data_build
from askbetter.clarifier.source_common import document, make_example, user
from askbetter.clarifier.words import content_words

RAW = Path(__file__).parents[1] / "fixtures" / "raw"
SEED = 13
POOL = [
    document(f"canard-g{i}", f"Band{i}: Career\nBand{i} toured Europe. They sold records. "
             "The tour ended in Rome.")
    for i in range(30)
] + [document("canard-lakers", "The Lakers won the title in 2010. They won again later.",
              "Lakers: History")]


def _ambignq(i: int, setting: str = "post", source: str = "ambignq"):
    docs = [document("p1", f"Who won the title in 2010 {i} — A."),
            document("p2", f"Who won the title in 2011 {i} — B.")] if setting == "post" else []
    return make_example(f"ambignq-{i}-{setting}", source, setting, [user("Who won the title?")],
                        "Do you mean 2010 or 2011?", "ambiguous", docs)


def test_crowded_examples_keep_their_label_and_passages_in_order(monkeypatch):
    monkeypatch.setattr(crowding, "SHARE", 1.0)
    sizes, places = set(), set()
    for i in range(40):
        ex = _ambignq(i)
        out = crowding.crowd(ex, POOL, SEED)
        assert out["id"] == ex["id"] + crowding.SUFFIX
        for key in ("source", "setting", "messages", "clarification", "kind"):
            assert out[key] == ex[key]
        texts = [d["text"] for d in out["documents"]]
        own = [texts.index(d["text"]) for d in ex["documents"]]
        assert own == sorted(own)  # the AmbigNQ pair keeps its order
        places.add(tuple(own))
        assert [d["id"] for d in out["documents"]] == [f"p{k}" for k in range(1, len(texts) + 1)]
        extra = [d for d in out["documents"] if d["text"] not in {e["text"] for e in ex["documents"]}]
        sizes.add(len(extra))
        for d in extra:  # none names a word of the question: the Lakers passage never comes
            assert not content_words(f"{d.get('title', '')} {d['text']}") & {"title", "won"}
            assert len(d["text"]) <= len("Band10: Career\n") + crowding.WINDOW_CHARS
    assert min(sizes) >= crowding.EXTRA_MIN and max(sizes) <= crowding.EXTRA_MAX and len(sizes) > 1
    assert len(places) > 1  # the pair lies at hashed places, not always first (a layout shortcut)


@pytest.mark.parametrize(
    ("ex", "pool"),
    [(_ambignq(1, "pre"), POOL), (_ambignq(1, source="pacific"), POOL), (_ambignq(1), [])],
    ids=["pre", "another source", "no pool"],
)
def test_other_examples_stay_as_they_are(ex, pool, monkeypatch):
    monkeypatch.setattr(crowding, "SHARE", 1.0)
    assert crowding.crowd(ex, pool, SEED) is ex


def test_only_a_share_is_crowded():
    crowded = sum(crowding.crowd(_ambignq(i), POOL, SEED) != _ambignq(i) for i in range(400))
    assert 0.5 * crowding.SHARE * 400 < crowded < 1.5 * crowding.SHARE * 400


def test_a_window_starts_at_a_sentence_and_keeps_the_title_line():
    text = "Title: Section\nFirst one. Second one. Third one."
    assert crowding.window(text, 0.0) == text
    assert crowding.window(text, 0.5) == "Title: Section\nSecond one. Third one."
    assert crowding.window("One. Two.", 0.9) == "Two."


def test_the_build_crowds_in_place_so_counts_stay(tmp_path, monkeypatch):
    plain = data_build.build_dataset(RAW, tmp_path / "plain", SEED, progress=False)
    monkeypatch.setattr(crowding, "SHARE", 1.0)
    crowded = data_build.build_dataset(RAW, tmp_path / "crowded", SEED, progress=False)
    assert crowded.counts == plain.counts
    lines = "".join((tmp_path / "crowded" / f"{s}.jsonl").read_text() for s in ("train", "dev", "test"))
    assert crowding.SUFFIX in lines
