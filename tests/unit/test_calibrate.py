"""Threshold calibration: picking on labelled examples and storing it with an adapter (no model)."""

import json
from pathlib import Path

import pytest

from askbetter.cli import main
from askbetter.clarifier.calibrate import MIN_SETTING_EXAMPLES, store_calibration, threshold_on
from askbetter.clarifier.local import CLARIFIER_CONFIG
from example_factory import example


def test_the_threshold_separates_the_scores_and_pre_examples_get_no_documents() -> None:
    examples = [example(1, "pre", "Which one?", "ambiguous"), example(2, "post", None, "clear"),
                example(3, "post", "Which year?", "ambiguous"), example(4, "pre", None, "hard-negative")]
    scores = {"query 1": 0.7, "query 2": 0.2, "query 3": 0.6, "query 4": 0.4}
    seen_documents = {}

    def score(messages: list, documents: list | None) -> float:
        seen_documents[messages[-1]["content"]] = documents
        return scores[messages[-1]["content"]]

    picked = threshold_on(examples, score, progress=False)
    assert 0.4 < picked["threshold"] <= 0.6
    assert picked["accuracy"] == 1.0 and picked["auc"] == 1.0 and picked["n"] == 4
    assert picked["thresholds"] == {}  # too few examples per setting for their own thresholds
    assert seen_documents["query 1"] is None and seen_documents["query 2"] == [{"id": "d1", "text": "passage"}]


def test_a_score_that_cannot_separate_gives_the_best_accuracy_it_can() -> None:
    examples = [example(i, "pre", "Which?" if i < 2 else None, "ambiguous" if i < 2 else "clear") for i in range(4)]
    picked = threshold_on(examples, lambda messages, documents: 0.5, progress=False)
    assert picked["accuracy"] == 0.5


def test_each_setting_with_enough_examples_of_both_labels_gets_its_own_threshold() -> None:
    # pre scores separate at 0.3, post scores at 0.7: one threshold cannot get both right
    n = MIN_SETTING_EXAMPLES // 2
    examples, scores = [], {}
    for i in range(2 * n):
        for setting, low, high in (("pre", 0.2, 0.4), ("post", 0.6, 0.8)):
            ex = example(len(examples), setting, "Which?" if i % 2 else None, "ambiguous" if i % 2 else "clear")
            examples.append(ex)
            scores[ex["messages"][-1]["content"]] = high if i % 2 else low
    picked = threshold_on(examples, lambda messages, documents: scores[messages[-1]["content"]], progress=False)
    assert 0.2 < picked["thresholds"]["pre"] <= 0.4 and 0.6 < picked["thresholds"]["post"] <= 0.8
    assert picked["accuracy"] == 1.0
    right_with_one = [(scores[ex["messages"][-1]["content"]] >= picked["threshold"]) == (ex["clarification"] is not None)
                      for ex in examples]
    assert sum(right_with_one) == 3 * len(examples) // 4


def test_a_setting_with_one_label_keeps_the_overall_threshold() -> None:
    examples = [example(i, "post", None, "clear") for i in range(MIN_SETTING_EXAMPLES)]
    examples += [example(MIN_SETTING_EXAMPLES + i, "pre", "Which?" if i % 2 else None, "ambiguous" if i % 2 else "clear")
                 for i in range(4)]
    picked = threshold_on(examples, lambda messages, documents: 0.3, progress=False)
    assert picked["thresholds"] == {}


def test_no_examples_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least one"):
        threshold_on([], lambda messages, documents: 0.5)


def test_storing_keeps_the_other_fields(tmp_path: Path) -> None:
    (tmp_path / CLARIFIER_CONFIG).write_text(json.dumps({"threshold": 0.5, "max_input_tokens": 448}))
    record = {"file": "dev.jsonl", "n": 4, "threshold": 0.31, "thresholds": {"post": 0.4}}
    store_calibration(tmp_path, record)
    config = json.loads((tmp_path / CLARIFIER_CONFIG).read_text())
    assert config == {"threshold": 0.31, "thresholds": {"post": 0.4}, "max_input_tokens": 448,
                      "calibration": record}


def test_calibrate_needs_an_adapter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "dev.jsonl"
    path.write_text(json.dumps(example(1, "pre", None, "clear")) + "\n")
    assert main(["calibrate", str(path), "--adapter", "none"]) == 1
    assert "needs an adapter" in capsys.readouterr().err
    assert main(["calibrate", str(path), "--adapter", str(tmp_path / "missing")]) == 1
    assert "not a PEFT adapter folder" in capsys.readouterr().err
