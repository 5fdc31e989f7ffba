"""`askbetter train` on the real base model: a tiny run, then a resumed one, then the adapter loads."""

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

FIXTURE_RAW = Path(__file__).parent.parent / "fixtures" / "raw"


def test_train_writes_an_adapter_and_resumes_from_its_checkpoint(tmp_path: Path) -> None:
    from askbetter.clarifier.data_build import build_dataset
    from askbetter.clarifier.local import CLARIFIER_CONFIG, LocalClarifier
    from askbetter.clarifier.train import TrainConfig, train
    from askbetter.settings import Settings

    build_dataset(FIXTURE_RAW, tmp_path / "data", seed=13, progress=False)
    cfg = TrainConfig(data_dir=tmp_path / "data", out_dir=tmp_path / "run", max_examples=8,
                      dev_examples=4, max_input_tokens=64, batch_tokens=256, max_batch_size=2,
                      checkpoint_every=1, max_steps=1)
    adapter = train(cfg)
    assert (adapter / "adapter_config.json").is_file()
    assert (adapter / "adapter_model.safetensors").is_file()
    meta = json.loads((adapter / CLARIFIER_CONFIG).read_text())
    assert 0.0 <= meta["threshold"] <= 1.0 and meta["training"]["steps"] == 1

    cfg.max_steps = 2
    train(cfg)  # resumes at step 1
    steps = [json.loads(line)["step"] for line in (tmp_path / "run" / "train_log.jsonl").open()]
    assert steps == [1, 2]
    meta = json.loads((adapter / CLARIFIER_CONFIG).read_text())
    assert meta["training"]["steps"] == 2

    clarifier = LocalClarifier.from_settings(Settings.from_env(), adapter=str(adapter))
    assert clarifier.loaded.has_adapter and clarifier.threshold == meta["threshold"]
    decision = clarifier.check([{"role": "user", "content": "Who won the cup?"}])
    assert 0.0 <= decision.score <= 1.0
