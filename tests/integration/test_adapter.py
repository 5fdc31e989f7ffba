"""The shipped adapter: it loads as the default, and makes its recorded decisions on test-split examples."""

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

RECORDED = Path(__file__).parent.parent / "fixtures" / "adapter_decisions.jsonl"


def test_the_bundled_adapter_is_the_default_and_complete() -> None:
    from askbetter.clarifier.assets import BUNDLED_ADAPTER_DIR, load_model
    from askbetter.clarifier.local import CLARIFIER_CONFIG

    for name in ("adapter_config.json", "adapter_model.safetensors", CLARIFIER_CONFIG, "README.md"):
        assert (BUNDLED_ADAPTER_DIR / name).is_file(), name
    loaded = load_model()
    assert loaded.has_adapter and loaded.adapter == BUNDLED_ADAPTER_DIR


def test_recorded_decisions_on_test_split_examples() -> None:
    from askbetter.clarifier.local import LocalClarifier

    rows = [json.loads(line) for line in RECORDED.read_text().splitlines()]
    assert len(rows) >= 6 and {r["setting"] for r in rows} == {"pre", "post"}
    clarifier = LocalClarifier.from_settings(adapter="bundled")
    for row in rows:
        decision = clarifier.check(row["messages"], row["documents"])
        assert decision.needs_clarification == row["recorded"]["needs_clarification"], row["id"]
        assert decision.score == pytest.approx(row["recorded"]["score"], abs=0.1), row["id"]
        assert (decision.question is not None) == decision.needs_clarification


def test_calibrate_stores_a_threshold_at_least_as_accurate_as_the_shipped_one(tmp_path: Path) -> None:
    import shutil

    from askbetter.cli import main
    from askbetter.clarifier.assets import BUNDLED_ADAPTER_DIR
    from askbetter.clarifier.local import CLARIFIER_CONFIG

    adapter = tmp_path / "adapter"
    shutil.copytree(BUNDLED_ADAPTER_DIR, adapter)
    rows = [json.loads(line) for line in RECORDED.read_text().splitlines()]
    shipped = sum(r["recorded"]["needs_clarification"] == (r["clarification"] is not None) for r in rows) / len(rows)
    predictions = tmp_path / "pred.jsonl"
    assert main(["calibrate", str(RECORDED), "--adapter", str(adapter), "--predictions", str(predictions)]) == 0
    config = json.loads((adapter / CLARIFIER_CONFIG).read_text())
    written = [json.loads(line) for line in predictions.read_text().splitlines()]
    assert [p["id"] for p in written] == [r["id"] for r in rows]
    for p, r in zip(written, rows, strict=True):
        assert p["score"] == pytest.approx(r["recorded"]["score"], abs=0.1), p["id"]
        assert p["decision"] == (p["score"] >= config["threshold"]) and p["question"] is None
    assert config["calibration"]["n"] == len(rows) and config["calibration"]["file"] == str(RECORDED)
    assert config["threshold"] == config["calibration"]["threshold"]
    assert config["calibration"]["accuracy"] >= shipped
    assert config["max_input_tokens"] == json.loads((BUNDLED_ADAPTER_DIR / CLARIFIER_CONFIG).read_text())["max_input_tokens"]
