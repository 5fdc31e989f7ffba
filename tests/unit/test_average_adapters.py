"""scripts/average_adapters.py: the averaged adapter's update is the weighted sum of the adapters'."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from askbetter.clarifier.assets import CLARIFIER_CONFIG
from tiny_model import tiny_llama, tiny_tokenizer

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "average_adapters.py"
TARGETS = ["q_proj", "v_proj", "down_proj"]


@pytest.fixture
def base(tmp_path: Path) -> Path:
    folder = tmp_path / "base"
    tiny_llama().save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    return folder


def _adapter(base: Path, folder: Path, seed: int, clarifier: dict, like: Path | None = None,
             training: dict | None = None) -> Path:
    """A LoRA of the tiny base with random weights (both factors: PEFT's default zeroes B), or
    `like`'s weights times three (the same rank-2 subspace) when given; its training record
    `training`, by default `{"steps": seed}`."""
    from peft import LoraConfig, get_peft_model, set_peft_model_state_dict
    from safetensors.torch import load_file

    torch.manual_seed(seed)
    config = LoraConfig(r=2, lora_alpha=4, target_modules=TARGETS, init_lora_weights=False)
    model = get_peft_model(tiny_llama(), config)
    if like is not None:
        weights = load_file(like / "adapter_model.safetensors")
        set_peft_model_state_dict(model, {k: 3 * v if "lora_B" in k else v for k, v in weights.items()})
    model.save_pretrained(folder)
    (folder / CLARIFIER_CONFIG).write_text(json.dumps({**clarifier, "training": training or {"steps": seed}}))
    return folder


def _deltas(base: Path, adapter: Path) -> dict[str, torch.Tensor]:
    """Each adapted module's update, by module name."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base), str(adapter))
    return {name: module.get_delta_weight("default") for name, module in model.named_modules()
            if hasattr(module, "get_delta_weight") and "default" in module.lora_A}


def _average(base: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ASKBETTER_BASE_MODEL": str(base), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, str(SCRIPT), *args], env=env, capture_output=True, text=True)


SETTINGS = {"prompt_style": "tuned", "max_input_tokens": 448}


@pytest.mark.parametrize("combination", ["cat", "svd"])
def test_the_averaged_update_is_the_weighted_sum(tmp_path: Path, base: Path, combination: str) -> None:
    a = _adapter(base, tmp_path / "a", 1, {**SETTINGS, "threshold": 0.4})
    # svd keeps rank 2: exact for adapters in one subspace; cat is exact for any two
    b = _adapter(base, tmp_path / "b", 2, SETTINGS, like=a if combination == "svd" else None)
    out = tmp_path / "out"
    done = _average(base, f"{a}=0.25", f"{b}=0.75", "--out", str(out), "--combination", combination)
    assert done.returncode == 0, done.stderr
    da, db, averaged = _deltas(base, a), _deltas(base, b), _deltas(base, out)
    assert len(averaged) == len(TARGETS) and averaged.keys() == da.keys()
    for name, delta in averaged.items():
        torch.testing.assert_close(delta, 0.25 * da[name] + 0.75 * db[name], atol=1e-5, rtol=1e-4)
    meta = json.loads((out / CLARIFIER_CONFIG).read_text())
    # the prompt settings carried, no threshold (calibrate picks it), both records kept
    assert {k: meta[k] for k in SETTINGS} == SETTINGS and "threshold" not in meta
    assert [(r["weight"], r["training"]) for r in meta["training"]["averaged"]] == [(0.25, {"steps": 1}), (0.75, {"steps": 2})]
    assert {p.name for p in out.iterdir()} == {"README.md", CLARIFIER_CONFIG, "adapter_config.json",
                                               "adapter_model.safetensors"}
    assert not (tmp_path / "out.partial").exists()


def test_a_record_another_adapter_holds_is_written_once_as_a_reference(tmp_path: Path, base: Path) -> None:
    start = {"steps": 1, "continued_from": {"steps": 7}}
    a = _adapter(base, tmp_path / "a", 1, SETTINGS, training=start)
    continued = {"steps": 2, "continued_from": start}  # a run that continued a
    b = _adapter(base, tmp_path / "b", 2, SETTINGS, training=continued)
    out = tmp_path / "out"
    done = _average(base, f"{a}=0.5", f"{b}=0.5", "--out", str(out), "--combination", "cat")
    assert done.returncode == 0, done.stderr
    meta = json.loads((out / CLARIFIER_CONFIG).read_text())
    first, second = meta["training"]["averaged"]
    assert first["training"] == {"$ref": "#/training/averaged/1/training/continued_from"}
    assert second["training"] == continued
    target = meta  # the reference resolves to a's record
    for key in first["training"]["$ref"].removeprefix("#/").split("/"):
        target = target[int(key)] if isinstance(target, list) else target[key]
    assert target == start


def test_adapters_of_other_prompt_settings_are_refused(tmp_path: Path, base: Path) -> None:
    a = _adapter(base, tmp_path / "a", 1, SETTINGS)
    b = _adapter(base, tmp_path / "b", 2, {**SETTINGS, "max_input_tokens": 320})
    done = _average(base, f"{a}=0.5", f"{b}=0.5", "--out", str(tmp_path / "out"))
    assert done.returncode != 0 and "other prompt settings" in done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("spec", ["{a}", "{a}=half", "{a}/missing=0.5"])
def test_a_spec_without_a_weight_or_an_adapter_is_a_clear_error(tmp_path: Path, base: Path, spec: str) -> None:
    a = _adapter(base, tmp_path / "a", 1, SETTINGS)
    done = _average(base, spec.format(a=a), f"{a}=0.5", "--out", str(tmp_path / "out"))
    assert done.returncode != 0 and "ADAPTER_FOLDER=WEIGHT" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()
