"""Threshold calibration: picking on labelled examples and storing it with an adapter (no model)."""

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from askbetter.cli import main
from askbetter.clarifier import assets, evaluate
from askbetter.clarifier.calibrate import store_threshold, threshold_for, threshold_on
from askbetter.clarifier.local import CLARIFIER_CONFIG
from ctrl_c import ctrl_c_in, ctrl_c_once_moved_in, second_run_stopped
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
    assert seen_documents["query 1"] is None and seen_documents["query 2"] == [{"id": "d1", "text": "passage"}]


def test_a_score_that_cannot_separate_gives_the_best_accuracy_it_can() -> None:
    examples = [example(i, "pre", "Which?" if i < 2 else None, "ambiguous" if i < 2 else "clear") for i in range(4)]
    picked = threshold_on(examples, lambda messages, documents: 0.5, progress=False)
    assert picked["accuracy"] == 0.5


def test_a_score_on_the_threshold_counts_as_asking_in_the_figures() -> None:
    # 0.35 and 0.5 both separate the scores; 0.5 is closer to 0.5, and the score that lies on it
    # asks (score >= threshold), as the clarifier decides: the accuracy is 1, not 0.5
    assert threshold_for([True, False], [0.5, 0.2]) == {"threshold": 0.5, "n": 2, "accuracy": 1.0,
                                                        "auc": 1.0}


def test_no_examples_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least one"):
        threshold_on([], lambda messages, documents: 0.5)


def test_storing_keeps_the_other_fields(tmp_path: Path) -> None:
    (tmp_path / CLARIFIER_CONFIG).write_text(json.dumps({"threshold": 0.5, "max_input_tokens": 448}))
    stored = store_threshold(tmp_path, {"file": "dev.jsonl", "n": 4, "threshold": 0.31})
    config = json.loads((tmp_path / CLARIFIER_CONFIG).read_text())
    assert config == {"threshold": 0.31, "max_input_tokens": 448, "calibration": stored}
    assert stored == {"file": "dev.jsonl", "n": 4, "threshold": 0.31, "previous_threshold": 0.5}


def test_calibrate_needs_an_adapter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "dev.jsonl"
    path.write_text(json.dumps(example(1, "pre", None, "clear")) + "\n")
    assert main(["calibrate", str(path), "--adapter", "none"]) == 1
    assert "needs an adapter" in capsys.readouterr().err
    assert main(["calibrate", str(path), "--adapter", str(tmp_path / "missing")]) == 1
    assert "missing does not exist" in capsys.readouterr().err


def test_calibrate_names_a_missing_bundled_adapter(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A package without the bundled adapter: calibrate says so (it read "not bundled")."""
    monkeypatch.setattr(assets, "BUNDLED_ADAPTER_DIR", tmp_path / "adapter")
    path = tmp_path / "dev.jsonl"
    path.write_text(json.dumps(example(1, "pre", None, "clear")) + "\n")
    assert main(["calibrate", str(path), "--adapter", "bundled"]) == 1
    assert capsys.readouterr().err.endswith(f"not the bundled one: there is none in {tmp_path / 'adapter'}\n")


class _ScoreByQuery:
    """Scores 0.9 a query that contains "which", else 0.1; its own threshold, 0.95, reads both
    as clear (so decisions at a newly picked threshold differ from its own)."""

    threshold = 0.95

    def score(self, messages: list, documents: list | None) -> float:
        return 0.9 if "which" in messages[-1]["content"] else 0.1


def _adapter_folder(tmp_path: Path, threshold: float) -> Path:
    folder = tmp_path / "adapter"
    folder.mkdir()
    (folder / "adapter_config.json").write_text("{}")
    save_file({"w": torch.zeros(1)}, folder / "adapter_model.safetensors")
    (folder / CLARIFIER_CONFIG).write_text(json.dumps({"threshold": threshold}))
    return folder


def _write(path: Path, examples: list) -> Path:
    path.write_text("".join(json.dumps(ex) + "\n" for ex in examples))
    return path


def test_calibrate_stores_the_new_threshold_with_the_one_it_replaces(
    tmp_path: Path, monkeypatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(evaluate, "local_clarifier", lambda settings, adapter, prompt_style: _ScoreByQuery())
    folder = _adapter_folder(tmp_path, 0.241)
    path = _write(tmp_path / "dev.jsonl", [example(1, "pre", "Which one?", "ambiguous", "which one"),
                                           example(2, "pre", None, "clear", "the capital of France")])
    assert main(["calibrate", str(path), "--adapter", str(folder), "--predictions", str(tmp_path / "p.jsonl")]) == 0
    config = json.loads((folder / CLARIFIER_CONFIG).read_text())
    assert 0.1 < config["threshold"] <= 0.9 and config["calibration"]["previous_threshold"] == 0.241
    # the decisions written are those at the new threshold, not at the clarifier's own (all clear)
    assert [json.loads(line)["decision"] for line in (tmp_path / "p.jsonl").read_text().splitlines()] == [True, False]
    assert "A threshold picked on 2 examples is noisy" in caplog.text


def test_calibrate_refuses_one_label_and_an_unwritable_output_and_keeps_the_threshold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    monkeypatch.setattr(evaluate, "local_clarifier", lambda settings, adapter, prompt_style: _ScoreByQuery())
    folder = _adapter_folder(tmp_path, 0.241)
    before = (folder / CLARIFIER_CONFIG).read_text()
    clear = _write(tmp_path / "clear.jsonl", [example(i, "pre", None, "clear") for i in range(3)])
    assert main(["calibrate", str(clear), "--adapter", str(folder)]) == 1
    assert "needs examples of both labels: all 3 are clear; the stored threshold is kept" in capsys.readouterr().err
    mixed = _write(tmp_path / "mixed.jsonl", [example(1, "pre", "Which one?", "ambiguous", "which one"),
                                              example(2, "pre", None, "clear")])
    assert main(["calibrate", str(mixed), "--adapter", str(folder), "--predictions", str(tmp_path)]) == 1
    assert "--predictions" in capsys.readouterr().err
    assert (folder / CLARIFIER_CONFIG).read_text() == before


@pytest.fixture
def mixed(tmp_path: Path, monkeypatch) -> Path:
    """Examples of both labels; a model loaded with them fails the test (a refusal comes first)."""
    def no_model(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(evaluate, "local_clarifier", no_model)
    return _write(tmp_path / "mixed.jsonl", [example(1, "pre", "Which one?", "ambiguous", "which one"),
                                             example(2, "pre", None, "clear")])


def test_calibrate_refuses_an_adapter_config_it_could_not_write_or_predictions_over_it_before_scoring(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch, mixed: Path
) -> None:
    """The threshold is stored in the adapter's config, an output like `--predictions`: predictions
    named as that file were lost under the config with no word, and an adapter folder the user may
    not write failed once every example was scored."""
    import os

    folder = _adapter_folder(tmp_path, 0.241)
    before = (folder / CLARIFIER_CONFIG).read_text()
    config = folder / CLARIFIER_CONFIG
    assert main(["calibrate", str(mixed), "--adapter", str(folder), "--predictions", str(config)]) == 1
    assert (f"--predictions {config} is the file of --adapter, which it would overwrite"
            in capsys.readouterr().err)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: real_access(path, mode) and not (
        Path(path).resolve() == folder.resolve() and mode & os.W_OK))
    assert main(["calibrate", str(mixed), "--adapter", str(folder)]) == 1
    assert f"--adapter {config}: no permission to write there" in capsys.readouterr().err
    assert config.read_text() == before


@pytest.mark.parametrize("command, option", [("calibrate", "--predictions"), ("eval", "--json"),
                                             ("eval", "--predictions")])
@pytest.mark.parametrize("name", ["adapter_config.json", "adapter_model.safetensors"])
def test_an_output_naming_one_of_the_adapters_files_is_refused_before_scoring(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mixed: Path, command, option, name
) -> None:
    """An output written over the adapter's config or weights broke the adapter it scored with."""
    folder = _adapter_folder(tmp_path, 0.241)
    before = (folder / name).read_bytes()
    assert main([command, str(mixed), "--adapter", str(folder), option, str(folder / name)]) == 1
    assert f"{option} {folder / name} is a file of the adapter, which it would overwrite" in capsys.readouterr().err
    assert (folder / name).read_bytes() == before


@pytest.mark.parametrize("when", ["while the adapter's config is read", "between the two files' renames"])
def test_calibrate_stopped_leaves_threshold_and_predictions_of_one_run(tmp_path: Path, monkeypatch, when) -> None:
    """A Ctrl-C once the predictions were written left them beside the last run's threshold:
    stopped before the files move in, both are the last run's; between the renames, the Ctrl-C
    waits until both are the new run's."""
    import signal

    from askbetter.clarifier import calibrate

    monkeypatch.setattr(evaluate, "local_clarifier", lambda settings, adapter, prompt_style: _ScoreByQuery())
    folder = _adapter_folder(tmp_path, 0.241)
    path = _write(tmp_path / "dev.jsonl", [example(i, "pre", "Which one?", "ambiguous", "which one") if i % 2 else
                                           example(i, "pre", None, "clear") for i in range(4)])
    preds = tmp_path / "p.jsonl"

    def run(limit: int) -> None:
        calibrate.run_calibrate(path, adapter=str(folder), limit=limit, predictions_out=preds)

    second_run_stopped(run, lambda: ctrl_c_in(monkeypatch, calibrate, "adapter_config")
                       if when == "while the adapter's config is read" else ctrl_c_once_moved_in(monkeypatch, "p.jsonl"))
    n = 2 if when == "while the adapter's config is read" else 4
    config = json.loads((folder / CLARIFIER_CONFIG).read_text())
    assert config["calibration"]["n"] == n and len(evaluate.read_predictions(preds)) == n
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adapter", "dev.jsonl", "p.jsonl"]
    assert sorted(p.name for p in folder.iterdir()) == ["adapter_config.json", "adapter_model.safetensors",
                                                        CLARIFIER_CONFIG]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
