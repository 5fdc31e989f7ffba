"""Greeting exchanges: training's label-preserving change and the script that measures it."""

import importlib.util
import json
import re
from pathlib import Path

import pytest

from askbetter.clarifier.examples import needs_clarification
from askbetter.clarifier.smalltalk import PROBE_OPENINGS, TRAIN_OPENINGS, pick, with_opening
from askbetter.clarifier.train import TrainConfig, with_smalltalk
from example_factory import example

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "smalltalk_prefix.py"
spec = importlib.util.spec_from_file_location("smalltalk_prefix", SCRIPT)
smalltalk_prefix = importlib.util.module_from_spec(spec)
spec.loader.exec_module(smalltalk_prefix)


def _units(n: int) -> list[list]:
    """n units; every third a contrast pair (a clarify and a clear member)."""
    return [[example(2 * i, "post", "Which one?", "ambiguous"), example(2 * i + 1, "post", None, "hard-negative")]
            if i % 3 == 0 else [example(2 * i, "pre", None, "clear")] for i in range(n)]


def test_a_share_of_the_units_gets_one_greeting_for_all_its_members():
    units = _units(12)
    greeted = with_smalltalk(units, 0.5, seed=7)
    changed = [u for u, (old, new) in enumerate(zip(units, greeted, strict=True)) if old != new]
    assert len(changed) == 6
    for u in changed:
        openings = {tuple(m["content"] for m in e["messages"][:2]) for e in greeted[u]}
        assert len(openings) == 1 and openings <= set(TRAIN_OPENINGS)
        for old, new in zip(units[u], greeted[u], strict=True):
            assert new["messages"][2:] == old["messages"] and [m["role"] for m in new["messages"][:2]] == ["user", "assistant"]
            assert needs_clarification(new) == needs_clarification(old) and new["id"] == old["id"]
    assert with_smalltalk(units, 0.5, seed=7) == greeted
    assert with_smalltalk(units, 0.5, seed=8) != greeted
    assert all(len(e["messages"]) == 3 for unit in with_smalltalk(units, 1.0, seed=7) for e in unit)
    assert units == _units(12)  # the input is not changed


@pytest.mark.parametrize("share", [-0.1, 1.5])
def test_a_share_outside_zero_to_one_is_refused(share):
    with pytest.raises(ValueError, match=re.escape(f"smalltalk_share must lie in [0, 1], not {share}")):
        TrainConfig(smalltalk_share=share)
    assert TrainConfig(smalltalk_share=1.0).smalltalk_share == 1.0  # a closed range: 1 is allowed


def test_the_probe_measures_greetings_training_never_used():
    assert not set(PROBE_OPENINGS) & set(TRAIN_OPENINGS)
    ex = example(1, "pre", None, "clear")
    assert with_opening(ex, pick(ex["id"], PROBE_OPENINGS))["messages"][0]["content"] in {u for u, _ in PROBE_OPENINGS}


def _pred(i: str, label: bool, score: float, threshold: float = 0.5) -> dict:
    return {"id": i, "source": "s", "setting": "pre", "kind": "clear", "label": label, "score": score,
            "decision": score >= threshold, "question": None, "reference": None, "seconds": 0.1}


def test_flips_counts_changed_decisions_and_the_score_drift(tmp_path):
    plain, greeted = tmp_path / "plain.jsonl", tmp_path / "greet.jsonl"
    plain.write_text("".join(json.dumps(p) + "\n" for p in
                             [_pred("a", True, 0.9), _pred("b", False, 0.2), _pred("c", True, 0.7), _pred("d", False, 0.1)]))
    greeted.write_text("".join(json.dumps(p) + "\n" for p in
                               [_pred("a", True, 0.3), _pred("b", False, 0.6), _pred("c", True, 0.8), _pred("d", False, 0.1)]))
    report = smalltalk_prefix.flips(plain, greeted)
    assert "accuracy 100.0% plain, 50.0% with an opening greeting" in report
    assert "decisions changed: 2 (50.0%): 1 from clarify to clear, 1 from clear to clarify" in report
    assert "mean |score change| 0.275" in report
    assert report.endswith("changed per source and setting: s pre 2 of 4")


def test_flips_refuses_predictions_of_other_examples(tmp_path):
    plain, greeted = tmp_path / "plain.jsonl", tmp_path / "greet.jsonl"
    plain.write_text(json.dumps(_pred("a", True, 0.9)) + "\n")
    greeted.write_text(json.dumps(_pred("z", True, 0.9)) + "\n")
    with pytest.raises(SystemExit, match="1 of 1 ids"):
        smalltalk_prefix.flips(plain, greeted)
