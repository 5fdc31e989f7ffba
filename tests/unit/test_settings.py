"""Settings read from the environment: every out-of-range value is a ValueError naming it."""

import re
from pathlib import Path

import chromadb
import pytest
import torch

from askbetter.settings import ENV_VARS, MAX_TOP_K, Settings

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_and_overrides_from_the_environment() -> None:
    s = Settings.from_env({"ASKBETTER_TOP_K": "7", "ASKBETTER_DTYPE": "bf16", "ASKBETTER_PRE_CHECK": "off"})
    assert (s.top_k, s.dtype, s.pre_check, s.device) == (7, "bf16", False, "cpu")


@pytest.mark.parametrize(("variable", "value", "message"), [
    ("ASKBETTER_MAX_ANSWER_TOKENS", "-5", "max_answer_tokens (ASKBETTER_MAX_ANSWER_TOKENS) must be 1 or more, not -5"),
    ("ASKBETTER_MAX_QUESTION_TOKENS", "0", "max_question_tokens (ASKBETTER_MAX_QUESTION_TOKENS) must be 1 or more"),
    ("ASKBETTER_MAX_INPUT_TOKENS", "-1", "max_input_tokens (ASKBETTER_MAX_INPUT_TOKENS) must be 64 or more"),
    ("ASKBETTER_CHROMA_PORT", "99999", "chroma_port (ASKBETTER_CHROMA_PORT) must be between 1 and 65535"),
    ("ASKBETTER_TOP_K", str(MAX_TOP_K + 1), f"top_k (ASKBETTER_TOP_K) must be between 1 and {MAX_TOP_K}"),
    ("ASKBETTER_DTYPE", "int8", "dtype (ASKBETTER_DTYPE) must be one of auto, float32"),
    ("ASKBETTER_DEVICE", "gpu", "device (ASKBETTER_DEVICE) must be cpu, cuda, cuda:N or mps, not 'gpu'"),
    ("ASKBETTER_THRESHOLD", "abc", "ASKBETTER_THRESHOLD='abc' is not a valid value: expected a number"),
    ("ASKBETTER_THRESHOLD", "1.5", "threshold (ASKBETTER_THRESHOLD) must lie in [0, 1], not 1.5"),
    ("ASKBETTER_ASK_MODE", "pause", "ask_mode (ASKBETTER_ASK_MODE) must be 'interrupt' or 'message', not 'pause'"),
    ("ASKBETTER_CHUNK_OVERLAP", "900", "chunk_overlap (ASKBETTER_CHUNK_OVERLAP) must be 0 or more and smaller than "
     "chunk_size (ASKBETTER_CHUNK_SIZE), not 900 with chunk_size 800"),
    ("ASKBETTER_ANSWER_MODEL", "/nonexistent", "answer_model (ASKBETTER_ANSWER_MODEL) names the folder /nonexistent"),
    ("ASKBETTER_BASE_MODEL", "./no-such-model", "base_model (ASKBETTER_BASE_MODEL) names the folder ./no-such-model"),
    ("ASKBETTER_EMBEDDING_MODEL", "~/no-such-minilm",
     "embedding_model (ASKBETTER_EMBEDDING_MODEL) names the folder ~/no-such-minilm, which does not exist"),
    ("ASKBETTER_BASE_MODEL", "bundled:smollm2-360m", "base_model (ASKBETTER_BASE_MODEL) names no bundled model: "
     "'bundled:smollm2-360m'; the bundled one is 'bundled:smollm2-135m-instruct'"),
    ("ASKBETTER_ANSWER_MODEL", "bundled:", "answer_model (ASKBETTER_ANSWER_MODEL) names no bundled model: 'bundled:'"),
    ("ASKBETTER_EMBEDDING_MODEL", "bundled:bert", "embedding_model (ASKBETTER_EMBEDDING_MODEL) names no bundled "
     "model: 'bundled:bert'; the bundled one is 'bundled:all-minilm-l6-v2'"),
])
def test_out_of_range_values_name_the_setting_and_its_variable(variable: str, value: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        Settings.from_env({variable: value})


def test_a_device_torch_does_not_have_is_refused_before_any_model_loads(monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="'cuda:1', but this torch has no such device"):
        Settings.from_env({"ASKBETTER_DEVICE": "cuda:1"})


def test_a_model_folder_that_exists_or_a_hub_id_is_accepted(tmp_path) -> None:
    s = Settings.from_env({"ASKBETTER_ANSWER_MODEL": str(tmp_path), "ASKBETTER_BASE_MODEL": "org/model"})
    assert (s.answer_model, s.base_model) == (str(tmp_path), "org/model")


def test_a_cache_dir_that_is_a_file_or_under_one_is_refused_at_start(tmp_path) -> None:
    blocker = tmp_path / "cache"
    blocker.write_text("x")
    for path, where in ((blocker, "is a file"), (blocker / "sub" / "dir", f"lies under the file {blocker}")):
        with pytest.raises(ValueError) as caught:
            Settings.from_env({"ASKBETTER_CACHE_DIR": str(path)})
        assert str(caught.value) == f"cache_dir (ASKBETTER_CACHE_DIR) names {path}, which {where}: name a folder"
    assert Settings.from_env({"ASKBETTER_CACHE_DIR": str(tmp_path / "new" / "cache")}).cache_dir.parent.name == "new"


@pytest.mark.parametrize("host", ["http://localhost", "https://chroma.example.com/db", "localhost:8000", "::1",
                                  "[::1]:8000"])
def test_a_chroma_host_given_as_a_url_or_with_its_port_is_refused(host: str) -> None:
    """chromadb's HttpClient would ignore ASKBETTER_CHROMA_PORT for a URL (port 80) and misread a host:port."""
    with pytest.raises(ValueError) as caught:
        Settings.from_env({"ASKBETTER_CHROMA_HOST": host, "ASKBETTER_CHROMA_PORT": "8001"})
    assert str(caught.value) == (f"chroma_host (ASKBETTER_CHROMA_HOST) must be a host name or address alone, not "
                                 f"{host!r}: e.g. localhost or [::1], with the port in ASKBETTER_CHROMA_PORT")


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::1]", "chroma.example.com"])
def test_a_chroma_host_name_or_address_is_accepted(host: str) -> None:
    assert Settings.from_env({"ASKBETTER_CHROMA_HOST": host}).chroma_host == host


def test_an_override_is_named_as_given_and_the_environment_by_its_variable() -> None:
    environ = {"ASKBETTER_TOP_K": "0", "ASKBETTER_MAX_ROUNDS": "-1"}
    with pytest.raises(ValueError, match=r"^top_k must be between 1 and 20, not 0$"):
        Settings.from_env({}, top_k=0)
    with pytest.raises(ValueError, match=r"^--max-rounds must be 0 or more, not -2$"):
        Settings.from_env(environ, option_label=lambda name: "--max-rounds", top_k=3, max_rounds=-2)
    with pytest.raises(ValueError, match=r"^max_rounds \(ASKBETTER_MAX_ROUNDS\) must be 0 or more, not -1$"):
        Settings.from_env(environ, option_label=lambda name: "--top-k", top_k=3)


COLLECTION_RULE = ("collection (ASKBETTER_COLLECTION) must be 3 to 512 characters from a-z, A-Z, 0-9, '.', '_' and "
                   "'-', start and end with a letter or digit, hold no '..' and not be an IPv4 address, not ")


@pytest.mark.parametrize("name", ["t1", "-ab", "ab-", "a b", "ab\u00e9", "a..b", "1.2.3.4", "a" * 513])
def test_a_collection_name_chroma_refuses_is_refused_by_the_settings(name: str) -> None:
    with pytest.raises(ValueError) as caught:
        Settings.from_env({"ASKBETTER_COLLECTION": name})
    assert str(caught.value) == COLLECTION_RULE + repr(name)


@pytest.mark.parametrize("name", ["t1", "-ab", "a b", "a..b", "1.2.3.4", "a" * 513,  # refused
                                  "abc", "a.-_b", "A-9", "999.1.2.3", "01.2.3.4", "1.2.3.4.5", "a" * 512])
def test_the_settings_refuse_a_collection_name_when_chroma_does(name: str) -> None:
    try:
        chromadb.EphemeralClient().get_or_create_collection(name, embedding_function=None)
        chroma_refuses = False
    except chromadb.errors.InvalidArgumentError:
        chroma_refuses = True
    try:
        Settings.from_env({"ASKBETTER_COLLECTION": name})
        settings_refuse = False
    except ValueError:
        settings_refuse = True
    assert settings_refuse == chroma_refuses


def test_the_readme_settings_table_names_every_variable_and_no_other() -> None:
    readme = (ROOT / "README.md").read_text()
    table = readme.split("## Settings", 1)[1].split("\n\n| setting |", 1)[1].split("\n\n", 1)[0]
    assert set(re.findall(r"ASKBETTER_[A-Z_]+", table)) == set(ENV_VARS.values())
    assert set(re.findall(r"ASKBETTER_[A-Z_]+", readme)) <= set(ENV_VARS.values())
