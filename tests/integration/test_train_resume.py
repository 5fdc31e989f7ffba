"""`askbetter train` on the real base model: a tiny run, then a resumed one, then the adapter loads."""

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

FIXTURE_RAW = Path(__file__).parent.parent / "fixtures" / "raw"


def test_train_writes_an_adapter_and_resumes_from_its_checkpoint(tmp_path: Path, recwarn: pytest.WarningsRecorder) -> None:
    from askbetter.clarifier.data_build import build_dataset
    from askbetter.clarifier.local import CLARIFIER_CONFIG, LocalClarifier
    from askbetter.clarifier.train import TrainConfig, train
    from askbetter.settings import Settings

    build_dataset(FIXTURE_RAW, tmp_path / "data", seed=13, progress=False, written=None)
    cfg = TrainConfig(data_dir=tmp_path / "data", out_dir=tmp_path / "run", max_examples=8,
                      dev_examples=4, max_input_tokens=64, batch_tokens=256, max_batch_size=2,
                      checkpoint_every=1, max_steps=1, contrast_pairs=True,
                      prompt_style="tuned-question-last", exclude=("ambignq:pre",))
    adapter = train(cfg)
    peft_config = json.loads((adapter / "adapter_config.json").read_text())
    assert peft_config["base_model_name_or_path"] == "HuggingFaceTB/SmolLM2-135M-Instruct"
    # saving does not look the base model up on the Hub (no network here)
    assert not [w for w in recwarn if "Could not find a config file" in str(w.message)]
    assert (adapter / "adapter_model.safetensors").is_file()
    meta = json.loads((adapter / CLARIFIER_CONFIG).read_text())
    assert 0.0 <= meta["threshold"] <= 1.0 and meta["training"]["steps"] == 1
    assert meta["prompt_style"] == "tuned-question-last"
    assert meta["training"]["config"]["exclude"] == ["ambignq:pre"]
    assert meta["calibration"]["threshold"] == meta["threshold"] and meta["calibration"]["n"] == 4
    assert meta["calibration"]["file"] == str(tmp_path / "data" / "dev.jsonl")
    assert meta["calibration"]["dtype"] == Settings.from_env().dtype
    # the checkpoint carries the same clarifier config, less the threshold, so it loads as trained
    checkpoint = tmp_path / "run" / "checkpoint"
    at_checkpoint = json.loads((checkpoint / CLARIFIER_CONFIG).read_text())
    assert at_checkpoint == {k: v for k, v in meta.items() if k not in ("threshold", "calibration")}
    assert at_checkpoint["training"]["steps"] == at_checkpoint["training"]["planned_steps"] == 1
    from_checkpoint = LocalClarifier.from_settings(Settings.from_env(), adapter=str(checkpoint))
    assert from_checkpoint.prompt_style == "tuned-question-last"
    assert from_checkpoint.max_input_tokens == 64 != Settings.from_env().max_input_tokens

    cfg.max_steps = 2
    train(cfg)  # resumes at step 1
    steps = [json.loads(line)["step"] for line in (tmp_path / "run" / "train_log.jsonl").open()]
    assert steps == [1, 2]
    meta = json.loads((adapter / CLARIFIER_CONFIG).read_text())
    assert meta["training"]["steps"] == 2

    clarifier = LocalClarifier.from_settings(Settings.from_env(), adapter=str(adapter))
    assert clarifier.loaded.has_adapter and clarifier.threshold == meta["threshold"]
    assert clarifier.prompt_style == "tuned-question-last"  # the style it was trained on
    decision = clarifier.check([{"role": "user", "content": "Who won the cup?"}])
    assert 0.0 <= decision.score <= 1.0


def test_train_refuses_to_resume_a_checkpoint_of_other_batches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Resuming with another seed, or on another train.jsonl, would continue the checkpoint on
    another sample: the CLI says so and leaves the run folder as it was."""
    from askbetter.cli import main
    from askbetter.clarifier.data_build import build_dataset

    build_dataset(FIXTURE_RAW, tmp_path / "data", seed=13, progress=False, written=None)
    run = tmp_path / "run"
    options = ["train", "--data-dir", str(tmp_path / "data"), "--out-dir", str(run),
               "--max-examples", "8", "--dev-examples", "0", "--max-input-tokens", "64",
               "--batch-tokens", "256", "--max-batch-size", "2", "--checkpoint-every", "1",
               "--max-steps", "2", "--contrast-pairs"]
    assert main(options) == 0
    kept = {f: (run / f).read_bytes() for f in ("train_config.json", "train_log.jsonl",
                                                "checkpoint/trainer_state.pt")}
    assert main([*options, "--seed", "14"]) == 1
    assert "--seed 13 now 14" in capsys.readouterr().err
    assert {f: (run / f).read_bytes() for f in kept} == kept
    train_file = tmp_path / "data" / "train.jsonl"
    lines = train_file.read_text().splitlines(keepends=True)
    train_file.write_text("".join(lines[1::2]))  # other data, the same options
    assert main(options) == 1
    assert "other training batches" in capsys.readouterr().err
    assert {f: (run / f).read_bytes() for f in kept} == kept
    train_file.write_text("".join(lines))
    assert main(options) == 0  # the same options still resume


def test_train_continues_an_existing_adapter(tmp_path: Path, recwarn: pytest.WarningsRecorder) -> None:
    """`init_adapter` starts from the given adapter's weights (not a fresh LoRA, whose B is zero)
    and keeps its LoRA shape, also when the run resumes from its checkpoint; the record of the
    earlier run is kept under `continued_from`."""
    from safetensors.torch import load_file

    from askbetter.clarifier.assets import BUNDLED_ADAPTER_DIR
    from askbetter.clarifier.data_build import build_dataset
    from askbetter.clarifier.local import CLARIFIER_CONFIG
    from askbetter.clarifier.train import TrainConfig, train

    build_dataset(FIXTURE_RAW, tmp_path / "data", seed=13, progress=False, written=None)
    cfg = TrainConfig(data_dir=tmp_path / "data", out_dir=tmp_path / "run", max_examples=4,
                      dev_examples=2, max_input_tokens=64, batch_tokens=256, max_batch_size=2,
                      max_steps=1, lr=1e-6, lora_r=4, lora_dropout=0.0, init_adapter="bundled")
    adapter = train(cfg)
    # its base is named as the bundled one's is, without PEFT's warning that the name changed
    assert json.loads((adapter / "adapter_config.json").read_text())["base_model_name_or_path"] == (
        "HuggingFaceTB/SmolLM2-135M-Instruct")
    assert not [w for w in recwarn if "was renamed" in str(w.message)]
    # the dropout is a training option, a continued adapter's too (the bundled one's is 0.05)
    assert json.loads((adapter / "adapter_config.json").read_text())["lora_dropout"] == 0.0
    before = load_file(BUNDLED_ADAPTER_DIR / "adapter_model.safetensors")
    after = load_file(adapter / "adapter_model.safetensors")
    assert before.keys() == after.keys()
    b_keys = [k for k in after if "lora_B" in k]
    assert b_keys and all(after[k].abs().sum() > 0 for k in b_keys)  # a fresh LoRA B is zero
    close = sum(bool((after[k].float() - before[k].float()).abs().max() < 1e-3) for k in after)
    assert close == len(after)  # one step at lr 1e-6 barely moves the bundled weights
    shipped = json.loads((BUNDLED_ADAPTER_DIR / CLARIFIER_CONFIG).read_text())
    meta = json.loads((adapter / CLARIFIER_CONFIG).read_text())
    assert meta["training"]["continued_from"] == shipped["training"]
    at_checkpoint = json.loads((tmp_path / "run" / "checkpoint" / CLARIFIER_CONFIG).read_text())
    assert at_checkpoint["training"]["continued_from"] == shipped["training"]

    cfg.max_steps = 2
    resumed = train(cfg)  # resumes at step 1 with the bundled adapter's shape (r 16, not lora_r 4)
    meta = json.loads((resumed / CLARIFIER_CONFIG).read_text())
    assert meta["training"]["steps"] == 2
    assert meta["training"]["continued_from"] == shipped["training"]
    resumed_weights = load_file(resumed / "adapter_model.safetensors")
    assert {k: v.shape for k, v in resumed_weights.items()} == {k: v.shape for k, v in before.items()}


def test_a_run_stopped_after_a_checkpoint_resumes_to_the_same_adapter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopped after its first checkpoint and started again, a run writes the adapter the
    uninterrupted run writes, bit for bit: same batches, same optimizer and schedule, and the same
    LoRA dropout masks (the random state is restored from the checkpoint)."""
    import torch
    from safetensors.torch import load_file

    import askbetter.clarifier.train as training
    from askbetter.clarifier.data_build import build_dataset

    build_dataset(FIXTURE_RAW, tmp_path / "data", seed=13, progress=False, written=None)

    def config(run: str) -> training.TrainConfig:
        return training.TrainConfig(
            data_dir=tmp_path / "data", out_dir=tmp_path / run, max_examples=6, dev_examples=0,
            max_input_tokens=64, batch_tokens=256, max_batch_size=2, checkpoint_every=1,
            max_steps=3, lora_dropout=0.5, threads=1)

    whole = load_file(training.train(config("whole")) / "adapter_model.safetensors")

    save = training._save_checkpoint

    def save_then_stop(*args, **kwargs) -> None:
        save(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(training, "_save_checkpoint", save_then_stop)
    with pytest.raises(KeyboardInterrupt):
        training.train(config("stopped"))
    monkeypatch.undo()
    resumed = load_file(training.train(config("stopped")) / "adapter_model.safetensors")
    assert all(torch.equal(whole[k], resumed[k]) for k in whole)
