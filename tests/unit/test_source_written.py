"""clarifier/source_written.py on a fixture folder, and the written turns the project ships."""

from __future__ import annotations

import json
import re
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from askbetter.clarifier import source_written
from askbetter.clarifier.examples import needs_clarification, read_examples
from askbetter.clarifier.source_common import RawDataError, split_of

QUESTION_ANSWER = re.compile(r"(who|what|when|where|which|how)\b[^.?]* — ", re.I)
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "written"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A copy of the fixture folder."""
    return Path(shutil.copytree(FIXTURE, tmp_path / "written"))


def test_each_example_is_grouped_by_its_scenario_and_keeps_its_label(folder: Path) -> None:
    pairs = list(source_written.convert(folder))
    assert [ex["id"] for _, ex in pairs] == [ex["id"] for ex in read_examples(folder / "turns.jsonl")]
    assert {g for g, _ in pairs} == {"written:written-z-001", "written:written-z-002"}
    assert all(ex["source"] == "written" for _, ex in pairs)
    by_id = {ex["id"]: ex for _, ex in pairs}
    assert needs_clarification(by_id["written-z-001-3"]) and by_id["written-z-001-3"]["kind"] == "ambiguous"
    assert not needs_clarification(by_id["written-z-001-2"]) and by_id["written-z-001-2"]["documents"] == []


def test_scenarios_that_share_a_passage_or_an_opening_turn_are_one_group(folder: Path) -> None:
    """Apart, a split could hold a passage or a whole question that another split has: z-003 takes
    a passage of z-002, z-004 an opening turn of z-003's group (in other words and case), so all
    three are z-002's group; z-001 stays its own."""
    lines = (folder / "turns.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    passage = next(d for r in records if r["id"].startswith("written-z-002") for d in r["documents"])
    opening = {"id": "written-z-003-1", "source": "written", "setting": "pre", "documents": [],
               "messages": [{"role": "user", "content": "When does the Harbour line run?"}],
               "clarification": None, "kind": "clear"}
    sharing = {"id": "written-z-003-2", "source": "written", "setting": "post", "kind": "clear",
               "messages": [{"role": "user", "content": "How late is it open?"}],
               "documents": [{"id": "d1", "text": "  " + passage["text"]}], "clarification": None}
    repeating = opening | {"id": "written-z-004-1",
                           "messages": [{"role": "user", "content": "when does the harbour line run"}]}
    extra = "".join(json.dumps(r) + "\n" for r in (opening, sharing, repeating))
    (folder / "turns.jsonl").write_text("\n".join(lines) + "\n" + extra, encoding="utf-8")
    group = {ex["id"]: g for g, ex in source_written.convert(folder)}
    assert {group[i] for i in ("written-z-003-1", "written-z-003-2", "written-z-004-1")} == {"written:written-z-002"}
    assert all(g == "written:written-z-002" for i, g in group.items() if i.startswith("written-z-002"))
    assert all(g == "written:written-z-001" for i, g in group.items() if i.startswith("written-z-001"))


def test_a_missing_folder_a_broken_line_or_an_id_without_its_variant_number_is_an_error(folder: Path) -> None:
    for nothing in (folder / "nope", Path(shutil.copytree(folder, folder.with_name("empty"), ignore=lambda *_: ["turns.jsonl"]))):
        with pytest.raises(FileNotFoundError, match="written turns folder not found, or without"):
            list(source_written.convert(nothing))
    path = folder / "turns.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([*lines[:2], "{not json", *lines[2:]]) + "\n", encoding="utf-8")
    with pytest.raises(RawDataError, match=r"turns\.jsonl:3"):
        list(source_written.convert(folder))
    record = json.loads(lines[0]) | {"id": "written-z-one"}
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(RawDataError, match="'written-z-one': its id is not <scenario>-<variant number>"):
        list(source_written.convert(folder))
    long = json.loads(lines[1])  # the build keeps the last 6 messages before the judged turn
    long["messages"] = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(8)] + long["messages"][-1:]
    path.write_text(json.dumps(long) + "\n", encoding="utf-8")
    with pytest.raises(RawDataError, match="'written-z-001-2': 8 messages before the judged turn, where the build keeps 6"):
        list(source_written.convert(folder))
    bare = json.loads(lines[2]) | {"documents": []}
    bare["setting"] = "post"
    path.write_text(json.dumps(bare) + "\n", encoding="utf-8")
    with pytest.raises(RawDataError, match=r"turns\.jsonl: example 'written-z-001-3': .*needs documents"):
        list(source_written.convert(folder))


# --- the project's written turns ----------------------------------------------------------------


@pytest.fixture(scope="module", params=[source_written.FOLDER, source_written.HELDOUT], ids=["built", "heldout"])
def shipped(request: pytest.FixtureRequest) -> list[dict]:
    """The turns the build reads, and the held-out ones it does not."""
    return [ex for _, ex in source_written.convert(request.param)]


def test_the_held_out_turns_stay_out_of_the_build() -> None:
    """No held-out scenario shares its name with a built one (the build reads the folder's own files)."""
    def scenarios(folder: Path) -> set[str]:
        return {source_written.ID.fullmatch(ex["id"])["scenario"] for _, ex in source_written.convert(folder)}

    held_out = scenarios(source_written.HELDOUT)
    assert held_out and not held_out & scenarios(source_written.FOLDER)


def test_the_shipped_turns_are_many_and_of_both_labels_in_both_settings(shipped: list[dict]) -> None:
    cells = {(ex["setting"], needs_clarification(ex)) for ex in shipped}
    assert len(shipped) >= 500 and cells == {("pre", True), ("pre", False), ("post", True), ("post", False)}
    assert len({ex["id"] for ex in shipped}) == len(shipped)


def test_the_shipped_turns_follow_the_writing_guide(shipped: list[dict]) -> None:
    """A clarification exactly for the clarify kinds; passages only after retrieval, two to five
    of them, none written as "question — answer"."""
    for ex in shipped:
        assert (ex["clarification"] is None) == (ex["kind"] in ("clear", "hard-negative")), ex["id"]
        docs = ex["documents"]
        assert len(docs) == 0 if ex["setting"] == "pre" else 2 <= len(docs) <= 5, ex["id"]
        assert not any(QUESTION_ANSWER.match(d["text"]) for d in docs), ex["id"]


def test_most_scenarios_hold_both_labels_and_the_scenarios_reach_every_split(shipped: list[dict]) -> None:
    labels: dict[str, set[bool]] = defaultdict(set)
    for ex in shipped:
        labels[source_written.ID.fullmatch(ex["id"])["scenario"]].add(needs_clarification(ex))
    assert sum(len(found) == 2 for found in labels.values()) >= 0.6 * len(labels)
    splits = {split_of(f"written:{scenario}", 13) for scenario in labels}
    assert splits == {"train", "dev", "test"}


def test_the_writers_cues_go_from_the_judged_turn_whatever_its_label(folder: Path) -> None:
    """The acknowledgement before the question goes ("Right to buy" is no acknowledgement), and
    the first letter's case is a hash of the id: half lower, half upper."""
    assert source_written.uncued("ok thanks. when is the next one due?", "x").lower() == "when is the next one due?"
    assert source_written.uncued("cool. and what does that relic do?", "x").lower() == "and what does that relic do?"
    assert source_written.uncued("Right to buy: who qualifies?", "x").lower() == "right to buy: who qualifies?"
    assert source_written.uncued("Right-to-buy: who qualifies?", "x").lower() == "right-to-buy: who qualifies?"
    assert source_written.uncued("ok", "x").lower() == "ok"  # nothing after it: kept
    lower = sum(source_written.uncued("How do I cancel it?", f"id-{i}")[0] == "h" for i in range(400))
    assert 160 < lower < 240
    raw = {ex["id"]: ex for ex in read_examples(folder / "turns.jsonl")}
    for _, ex in source_written.convert(folder):
        said = raw[ex["id"]]["messages"]
        assert ex["messages"] == [*said[:-1], {"role": "user", "content": source_written.uncued(said[-1]["content"], ex["id"])}]


def test_in_the_shipped_turns_the_case_of_the_first_letter_tells_nothing(shipped: list[dict]) -> None:
    """The writers began 76% of the vague turns in lower case and 50% of the others."""
    def lower_share(clarify: bool) -> float:
        turns = [ex["messages"][-1]["content"] for ex in shipped if needs_clarification(ex) == clarify]
        return sum(t[:1].islower() for t in turns) / len(turns)
    assert abs(lower_share(True) - lower_share(False)) < 0.08
