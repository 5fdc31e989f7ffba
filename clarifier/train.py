"""LoRA training of the clarifier: one adapter for both the pre- and post-retrieval checks.

A loop a reader can hold in their head (nanoGPT-style): every knob is a field of `TrainConfig`.
Examples are tokenised with the same prompt as inference (`askbetter.clarifier.prompt`), the loss
is on the answer tokens only (`CLEAR` or the reference question, then end-of-turn), and the first
answer token -- where the decision is read -- is weighted up. Batches are length-bucketed under a
token budget. A checkpoint (adapter, optimizer, scheduler, step, random state) is written every
few steps, and a run started again with the same config resumes from it as if it had not stopped.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
import shlex
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from tqdm import tqdm

from askbetter import torch_thread
from askbetter.clarifier.contrast import with_contrasts
from askbetter.clarifier.examples import (
    Example,
    ExampleFormatError,
    check_both_labels,
    check_documents,
    read_examples,
)
from askbetter.clarifier.prompt import CLEAR, clear_token_id, prompt_ids
from askbetter.clarifier.smalltalk import TRAIN_OPENINGS, pick, with_opening
from askbetter.clarifier.train_config import TrainConfig
from askbetter.settings import Settings

if TYPE_CHECKING:
    from peft import PeftModel
    from torch.optim.lr_scheduler import LRScheduler
    from transformers import PreTrainedTokenizerBase

log = logging.getLogger(__name__)

PAIR_MARGIN = 1.0  # nats of log P(CLEAR) between a contrast unit's clear and clarify members


@dataclass
class Encoded:
    input_ids: list[int]
    n_prompt: int
    setting: str = "pre"
    clear: bool = False  # the answer is CLEAR
    unit: int = -1  # the contrast unit it is batched with (-1: none)
    labels: list[int] = field(init=False)

    def __post_init__(self) -> None:
        self.labels = [-100] * self.n_prompt + self.input_ids[self.n_prompt:]


def encode(example: Example, tokenizer: PreTrainedTokenizerBase, cfg: TrainConfig, unit: int = -1) -> Encoded:
    """Prompt ids + answer ids (`CLEAR` or the reference question) + end of turn; `unit` numbers
    the contrast unit the example is batched with (-1: none)."""
    prompt = prompt_ids(example["messages"], check_documents(example), tokenizer,
                        cfg.max_input_tokens, cfg.prompt_style)
    answer = example["clarification"] if example["clarification"] is not None else CLEAR
    target = tokenizer(answer.strip(), add_special_tokens=False).input_ids[: cfg.max_target_tokens]
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    target = target + ([end] if isinstance(end, int) and end >= 0 else [tokenizer.eos_token_id])
    return Encoded(prompt + target, len(prompt), example["setting"], answer == CLEAR, unit)


def make_batches(items: list[Encoded], cfg: TrainConfig, rng: random.Random,
                 units: list[list[int]] | None = None) -> list[list[int]]:
    """Indices grouped by similar length so that padded tokens stay under `batch_tokens`. A unit
    (several indices, e.g. a contrast group) always lands in one batch; default: each item alone."""
    units = units if units is not None else [[i] for i in range(len(items))]
    width = [max(len(items[i].input_ids) for i in unit) for unit in units]
    batches: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for u in sorted(range(len(units)), key=lambda u: width[u]):
        grown = max(longest, width[u])
        if current and (grown * (len(current) + len(units[u])) > cfg.batch_tokens
                        or len(current) + len(units[u]) > cfg.max_batch_size):
            batches.append(current)
            current, grown = [], width[u]
        current += units[u]
        longest = grown
    if current:
        batches.append(current)
    rng.shuffle(batches)
    return batches


def collate(items: list[Encoded], pad_id: int, multiple: int = 32) -> dict[str, torch.Tensor]:
    """Right-padded tensors; the width is rounded up to `multiple` so that few distinct shapes
    reach the CPU kernels (oneDNN prepares each new shape once)."""
    width = -(-max(len(e.input_ids) for e in items) // multiple) * multiple
    ids = torch.full((len(items), width), pad_id, dtype=torch.long)
    labels = torch.full((len(items), width), -100, dtype=torch.long)
    mask = torch.zeros((len(items), width), dtype=torch.long)
    first = torch.zeros((len(items), width), dtype=torch.bool)
    units = torch.tensor([e.unit for e in items], dtype=torch.long)
    clear = torch.tensor([e.clear for e in items], dtype=torch.bool)
    for r, e in enumerate(items):
        n = len(e.input_ids)
        ids[r, :n] = torch.tensor(e.input_ids)
        labels[r, :n] = torch.tensor(e.labels)
        mask[r, :n] = 1
        first[r, e.n_prompt] = True
    return {"input_ids": ids, "labels": labels, "attention_mask": mask, "first": first,
            "unit": units, "clear": clear}


def with_smalltalk(units: list[list[Example]], share: float, seed: int) -> list[list[Example]]:
    """`units` with a greeting exchange before every member of a `share` of them, the same
    greeting within a unit (so a contrast pair still differs only in what tells it apart)."""
    rng = random.Random(f"smalltalk-{seed}")
    chosen = set(rng.sample(range(len(units)), round(share * len(units))))
    return [[with_opening(e, pick(f"{seed}:{unit[0]['id']}", TRAIN_OPENINGS)) for e in unit]
            if u in chosen else unit for u, unit in enumerate(units)]


@dataclass
class AnswerLogits:
    """The logits at the positions of a batch that predict an answer token, one row each."""

    logits: torch.Tensor  # (n, vocab)
    targets: torch.Tensor  # (n,): the answer token each position predicts
    first: torch.Tensor  # (n,): True where that is a first answer token, where the decision is read
    rows: torch.Tensor  # (n,): the batch row of each


def answer_logits(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> AnswerLogits:
    """Run the decoder over the batch, then the language-model head at the answer's positions only
    (the labels, shifted by one): the head over every position (49,152 logits a token for
    SmolLM2) computed logits the loss never reads, about 0.3 GiB of a CPU step's peak memory and
    2 to 11% of its time (`scripts/bench_train_step.py`, README "Training"). `check_head` makes sure the
    model computes its logits so."""
    lm = _causal_lm(model)
    hidden = lm.get_decoder()(input_ids=batch["input_ids"],
                              attention_mask=batch["attention_mask"]).last_hidden_state
    return at_answer_positions(hidden, batch, lm.get_output_embeddings())


def at_answer_positions(per_position: torch.Tensor, batch: dict[str, torch.Tensor],
                        head: Callable[[torch.Tensor], torch.Tensor] | None = None) -> AnswerLogits:
    """The rows of `per_position` (batch, width, ...: hidden states, or logits when `head` is None)
    at the positions that predict an answer token (the labels shifted by one), through `head`."""
    rows, cols = (batch["labels"][:, 1:] != -100).nonzero(as_tuple=True)
    picked = per_position[rows, cols]
    return AnswerLogits(picked if head is None else head(picked), batch["labels"][rows, cols + 1],
                        batch["first"][rows, cols + 1], rows)


class UnsupportedHead(ValueError):
    """A base model whose logits are not its output embeddings over its decoder's last hidden state."""


def check_head(model: torch.nn.Module, input_ids: list[int]) -> None:
    """UnsupportedHead when the model's own forward does not compute its logits as `answer_logits`
    does (its output embeddings over the decoder's last hidden state: a model that scales or caps
    its logits, as Gemma 2 or Cohere do); checked once, on `input_ids`, with dropout off."""
    lm = _causal_lm(model)
    ids = torch.tensor([input_ids], device=lm.device)
    training = model.training
    model.eval()
    try:
        with torch.no_grad():
            own = model(input_ids=ids).logits.float()
            ours = lm.get_output_embeddings()(lm.get_decoder()(input_ids=ids).last_hidden_state).float()
    finally:
        model.train(training)
    if not torch.allclose(own, ours, rtol=1e-3, atol=1e-3):
        raise UnsupportedHead(f"{type(lm).__name__} computes its logits otherwise than its output embeddings over "
                              "its decoder's last hidden state, which askbetter train reads at the answer's "
                              "positions: train another --base-model")


def _causal_lm(model: torch.nn.Module) -> Any:
    """The transformers model inside a PEFT wrapper (the LoRA layers are in its modules), or `model`."""
    get_base_model = getattr(model, "get_base_model", None)
    return get_base_model() if get_base_model is not None else model


def weighted_loss(answer: AnswerLogits, first_weight: float) -> torch.Tensor:
    """Cross-entropy on the answer tokens; the first answer token weighs `first_weight`."""
    per_token = torch.nn.functional.cross_entropy(answer.logits.float(), answer.targets, reduction="none")
    weights = torch.where(answer.first, first_weight, 1.0)
    return (per_token * weights).sum() / weights.sum()


def pair_margin_loss(answer: AnswerLogits, units: torch.Tensor, clear: torch.Tensor, clear_id: int,
                     margin: float = PAIR_MARGIN) -> torch.Tensor:
    """Mean over (clear, clarify) member pairs of one contrast unit (`units` >= 0) in the batch of
    max(0, margin - (log P(CLEAR) of the clear one - that of the clarify one)), read where the
    first answer token is predicted; 0 when the batch holds no such pair."""
    log_clear = answer.logits.new_zeros(units.size(0), dtype=torch.float32)
    log_clear[answer.rows[answer.first]] = torch.log_softmax(
        answer.logits[answer.first].float(), dim=-1)[:, clear_id]  # one first answer token per row
    same_unit = (units[:, None] == units[None, :]) & (units[:, None] >= 0)
    pairs = same_unit & clear[:, None] & ~clear[None, :]  # [i, j]: i clear, j clarify
    if not pairs.any():
        return answer.logits.new_zeros(())
    gaps = log_clear[:, None] - log_clear[None, :]
    return torch.relu(margin - gaps[pairs]).mean()


def plan_digests(batches: list[list[int]], examples: list[Example]) -> list[str]:
    """Digests of the example ids of `batches`, in order: element k stands for the first k
    batches, what the steps of a checkpoint at step k trained on, so that a resume can tell
    whether it would continue the same plan. One pass over the plan for every step's digest."""
    digest = hashlib.sha256()
    digests = [digest.hexdigest()]
    for batch in batches:
        digest.update(json.dumps([examples[i]["id"] for i in batch]).encode())
        digests.append(digest.hexdigest())
    return digests


class CheckpointMismatch(ValueError):
    """A checkpoint that a run with these data and options cannot continue."""


class CheckpointDamaged(ValueError):
    """A checkpoint whose files cannot be read (cut off, edited or missing): no run can resume it."""


def load_checkpoint(ckpt: Path) -> dict[str, Any]:
    """The trainer state of the checkpoint a run resumes (`trainer_state.pt`), read before the model
    loads, the adapter's files beside it checked too (`check_adapter_files`): CheckpointDamaged
    naming the file that cannot be read (torch and safetensors stopped the run with a traceback
    once the model had loaded)."""
    from askbetter.clarifier.assets import ModelNotFound, check_adapter_files

    then = f"the run cannot resume from {ckpt}: move it away, and the same command starts again from step 0"
    state = ckpt / "trainer_state.pt"
    if not state.is_file():  # removed by hand, or a folder the user put there
        raise CheckpointDamaged(f"{ckpt} has no trainer_state.pt (the optimizer's state and the step "
                                f"reached), so nothing in it is overwritten; {then}")
    try:
        check_adapter_files(ckpt)
        return torch.load(state, weights_only=False)
    except ModelNotFound as exc:
        raise CheckpointDamaged(f"{exc}; {then}") from exc
    except Exception as exc:  # the unpickler's or the zip reader's error, whatever the damage
        first_line = next(iter(str(exc).strip().splitlines()), type(exc).__name__)
        raise CheckpointDamaged(f"{state} is corrupt or truncated ({first_line}); {then}") from exc


class UnknownTargetModules(ValueError):
    """A LoRA target module (`--target-modules`) that names no layer of the base model."""


def check_target_modules(model: torch.nn.Module, targets: tuple[str, ...], base: str) -> None:
    """Raise UnknownTargetModules naming the `targets` that match no layer of `model`, `base`, that
    LoRA adapts, as PEFT matches them (the module's name or its last dot-separated parts), with the
    model's linear layers to choose from. PEFT itself stops with a traceback when no target
    matches or one matches another module (`self_attn`, a block of layers), and trains without a
    misspelt one when another matches."""
    from transformers.pytorch_utils import Conv1D

    adaptable = (torch.nn.Linear, torch.nn.Embedding, torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d,
                 torch.nn.MultiheadAttention, Conv1D)  # the layers PEFT's LoRA supports
    names = [name for name, module in model.named_modules() if isinstance(module, adaptable)]
    unknown = [t for t in targets if not any(n == t or n.endswith("." + t) for n in names)]
    if unknown:
        linear = sorted({name.rpartition(".")[2] for name, module in model.named_modules()
                         if isinstance(module, torch.nn.Linear)})
        raise UnknownTargetModules(f"--target-modules {' '.join(unknown)}: no layer of {base} has that name; "
                                   f"its linear layers are {' '.join(linear)}")


# the options a resumed run may change: where the files are, how long it runs, where and how
# fast; not what or how it trains
RESUMABLE_CHANGES = frozenset({"data_dir", "out_dir", "epochs", "max_steps", "checkpoint_every",
                               "threads", "device", "dev_examples"})


def check_same_options(trained: dict, cfg: TrainConfig, ckpt: Path) -> None:
    """Raise CheckpointMismatch naming the options, other than `RESUMABLE_CHANGES`, whose values
    in `cfg` differ from `trained`, the config the checkpoint's steps ran with (`to_json`'s form;
    a field it lacks, from before the field existed, is not compared)."""
    now = cfg.to_json()
    changed = [f"--{name.replace('_', '-')} {trained[name]} now {now[name]}"
               for name in now if name not in RESUMABLE_CHANGES and name in trained
               and trained[name] != now[name]]
    if changed:
        raise CheckpointMismatch(
            f"{ckpt} was trained with other options ({'; '.join(changed)}); resume with the same "
            f"ones, train into a new --out-dir, or continue its weights there with --init-adapter {ckpt}")


def check_adapter_kept(cfg: TrainConfig, adapter: dict, ckpt: dict | None) -> None:
    """Raise CheckpointMismatch when this run would write `OUT_DIR/adapter` over one it would lose:
    with no checkpoint (`ckpt`, its clarifier config, is None) a run starts at step 0 and
    replaces the adapter (whose clarifier config is `adapter`) at its end; with the checkpoint
    that adapter was written from, and the same --epochs and --max-steps, the run is finished
    and would only write it again, its threshold picked anew over the one stored (which
    `askbetter calibrate` may have picked since). An adapter without a threshold is written
    again (a run stopped before its dev scoring)."""
    if not adapter:
        return
    out = cfg.out_dir
    if ckpt is None:
        raise CheckpointMismatch(
            f"{out / 'adapter'} is a run's adapter, and {out / 'checkpoint'} is missing: a run there "
            f"would start at step 0 and replace it; train into a new --out-dir (with --init-adapter "
            f"{out / 'adapter'} to continue that adapter)")
    done, trained = adapter.get("training", {}), adapter.get("training", {}).get("config", {})
    if (adapter.get("threshold") is not None
            and done.get("steps") == ckpt.get("training", {}).get("steps")
            and (trained.get("epochs"), trained.get("max_steps")) == (cfg.epochs, cfg.max_steps)):
        raise CheckpointMismatch(
            f"{out} holds this run, finished: its adapter (step {done.get('steps')}, threshold "
            f"{adapter['threshold']:.3f}) would be written again and its threshold picked anew; give "
            f"a larger --epochs or --max-steps to go on, run `askbetter calibrate` to pick the "
            f"threshold again, or train into a new --out-dir")


def check_resumable(saved: dict, digests: list[str], ckpt: Path) -> None:
    """Raise CheckpointMismatch when the checkpoint's steps trained on other batches than the first
    `saved["step"]` of this run's plan (whose `plan_digests` are `digests`): other data, sample or
    seed; or when it is past the plan's end. Checkpoints written before the digest was recorded
    are taken as they are."""
    if saved["step"] >= len(digests):
        raise CheckpointMismatch(
            f"{ckpt} is at step {saved['step']}, past the {len(digests) - 1} steps of this run "
            f"(fewer --epochs or --max-steps, or a smaller train.jsonl); resume with the same data and options, "
            f"or train into a new --out-dir")
    done = digests[saved["step"]]
    if saved.get("plan_digest", done) != done:
        raise CheckpointMismatch(
            f"{ckpt} was written by a run on other training batches (train.jsonl, --max-examples, "
            f"--seed or the sampling options differ); resume with the same data and options, or "
            f"train into a new --out-dir")


def clarifier_meta(cfg: TrainConfig, state: dict, n_train: int, planned_steps: int,
                   continued: dict | None) -> dict:
    """The clarifier config written beside the adapter, at each checkpoint and at the end: the
    prompt style and input budget it was trained with (what inference must use) and the training
    record so far (its peak memory the one measured at the last checkpoint: the final adapter's is
    the last checkpoint's), with `continued`, the training record of the adapter this run
    continued, under `continued_from`. No threshold: until `askbetter calibrate` picks one, the
    default applies."""
    training = {"steps": state["step"], "planned_steps": planned_steps, "train_examples": n_train,
                "tokens_seen": state["tokens"], "train_seconds": round(state["seconds"], 1),
                **(state.get("peak_mb") or peak_memory_mb(cfg.device)), "config": cfg.to_json()}
    if continued:
        training["continued_from"] = continued
    return {"prompt_style": cfg.prompt_style, "max_input_tokens": cfg.max_input_tokens,
            "training": training}


def train_command(config: dict) -> str:
    """The `askbetter train` command line of a run's config (`TrainConfig.to_json`'s form): the
    options whose values differ from the defaults."""
    default = TrainConfig().to_json()
    words = ["askbetter", "train"]
    for name, value in config.items():
        if name not in default or value == default[name]:
            continue
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            words.append(flag if value else f"--no-{flag[2:]}")
        else:
            words += [flag, *map(str, value if isinstance(value, list) else [value])]
    return shlex.join(words)


def card_front_matter(base_model: str | None) -> str:
    """The Hugging Face model-card metadata of an askbetter adapter's README.md (PEFT's template
    names the base model by the local folder it was loaded from; this, by its id)."""
    return f"""---
base_model: {json.dumps(base_model)}
library_name: peft
tags: [lora, query-clarification, rag]
---
"""


def model_card(base_model: str | None, meta: dict) -> str:
    """The README.md of a run's adapter or checkpoint (whose clarifier config is `meta`), in place
    of PEFT's template: the base model's id, the command that trained it and where its record is."""
    training = meta["training"]
    return card_front_matter(base_model) + f"""
# askbetter clarifier adapter, step {training["steps"]} of {training["planned_steps"]}

A LoRA adapter of {base_model} for askbetter's clarification checks, trained by

    {train_command(training["config"])}

`askbetter_clarifier.json` holds the prompt style and input budget it was trained with, the
training record (config, steps, tokens, time, peak memory) and, once `askbetter train` or
`askbetter calibrate` has picked it, the decision threshold. Use it with `--adapter FOLDER` or
`ASKBETTER_ADAPTER=FOLDER`; the shipped adapter's card (`clarifier/adapter/README.md` in
askbetter) describes the model, its data and its figures.
"""


def _save_adapter(model: PeftModel, folder: Path, meta: dict) -> None:
    """Write the adapter into `folder` with its clarifier config `meta` and its `model_card`."""
    from askbetter.clarifier.local import CLARIFIER_CONFIG, write_clarifier_config

    # the LoRA leaves the embeddings alone; PEFT's check for resized ones would look the base
    # model up on the Hub by its name
    model.save_pretrained(str(folder), save_embedding_layers=False)
    write_clarifier_config(folder / CLARIFIER_CONFIG, meta)
    base = model.peft_config["default"].base_model_name_or_path
    (folder / "README.md").write_text(model_card(base, meta))


def _save_checkpoint(model: PeftModel, optimizer: torch.optim.Optimizer, scheduler: LRScheduler,
                     state: dict, ckpt: Path, meta: dict) -> None:
    """Write the checkpoint whole or not at all (into a temporary folder, then renamed); with its
    clarifier config beside the adapter, so that `askbetter calibrate --adapter RUN/checkpoint`
    and the graph load it with the prompt it was trained on. The one it replaces is moved aside
    before the new one moves in, so that a kill between the two renames leaves both whole
    (`_recover_checkpoint` takes the new one)."""
    tmp, old = ckpt.with_name(ckpt.name + ".tmp"), ckpt.with_name(ckpt.name + ".old")
    shutil.rmtree(tmp, ignore_errors=True)
    _save_adapter(model, tmp, meta)
    torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                **state}, tmp / "trainer_state.pt")
    shutil.rmtree(old, ignore_errors=True)
    if ckpt.exists():
        ckpt.rename(old)
    tmp.rename(ckpt)
    shutil.rmtree(old, ignore_errors=True)


def _recover_checkpoint(ckpt: Path) -> None:
    """Put back the checkpoint of a run killed between `_save_checkpoint`'s two renames: the
    replaced one is aside (`.old`) and the new one, whole (it moves only once written), is still
    the temporary folder. A run killed after the second rename left only the replaced one aside."""
    tmp, old = ckpt.with_name(ckpt.name + ".tmp"), ckpt.with_name(ckpt.name + ".old")
    if not ckpt.exists() and old.is_dir() and tmp.is_dir():
        tmp.rename(ckpt)
    if ckpt.exists():
        shutil.rmtree(old, ignore_errors=True)


def resume_hint(out_dir: Path) -> str:
    """What a run stopped in `out_dir` left and how to go on, for `askbetter train`'s message when
    interrupted: the step of its checkpoint (put back first, were it stopped while replacing it)."""
    from askbetter.clarifier.local import adapter_config

    ckpt = out_dir / "checkpoint"
    _recover_checkpoint(ckpt)
    if not (ckpt / "trainer_state.pt").is_file():
        return "it wrote no checkpoint: the same command starts it again from step 0"
    training = adapter_config(ckpt).get("training", {})  # none in checkpoints before session 30
    at = (f" at step {training['steps']} of {training['planned_steps']}"
          if {"steps", "planned_steps"} <= training.keys() else "")
    return f"its checkpoint{at} ({ckpt}) is kept: run the same command again to go on from there"


def peak_memory_mb(device: str,
                   earlier: dict[str, int | None] | None = None) -> dict[str, int | None]:
    """Peak resident memory and, on CUDA, the peak memory torch allocated, over this process and
    the `earlier` peaks (those of the processes before a resume, kept in the checkpoint). A peak
    no process measured is None: the resident memory where the `resource` module is missing."""
    rss_kib = _peak_rss_kib()
    peak = {"peak_rss_mb": None if rss_kib is None else round(rss_kib / 1024)}
    if device.startswith("cuda"):
        peak["peak_gpu_mb"] = round(torch.cuda.max_memory_allocated(device) / 2**20)
    earlier = earlier or {}
    return {key: max((v for v in (value, earlier.get(key)) if v is not None), default=None)
            for key, value in peak.items()}


def _peak_rss_kib() -> int | None:
    """This process's peak resident memory, in KiB on Linux; None without the `resource` module,
    which is Unix only (on Windows)."""
    try:
        import resource
    except ImportError:
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def rng_state(device: str) -> dict[str, torch.Tensor]:
    """torch's random state, which LoRA dropout draws from: the CPU's, and `device`'s on CUDA."""
    state = {"cpu": torch.get_rng_state()}
    if device.startswith("cuda"):
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def set_rng_state(state: dict[str, torch.Tensor], device: str) -> None:
    """Restore what `rng_state` returned, so that a resumed run draws the dropout masks that the
    run it continues would have drawn."""
    torch.set_rng_state(state["cpu"])
    if "cuda" in state and device.startswith("cuda"):
        torch.cuda.set_rng_state(state["cuda"], device)


def train(cfg: TrainConfig, settings: Settings | None = None) -> Path:
    """Train (or resume) and write the adapter with its threshold and metrics to `out_dir/adapter`."""
    from peft import LoraConfig, get_peft_model, set_peft_model_state_dict
    from safetensors.torch import load_file
    from transformers import get_linear_schedule_with_warmup

    from askbetter.clarifier.assets import (
        ADAPTER_WEIGHTS,
        base_model_name,
        load_base,
        loading_adapter,
        pad_token_id,
        peft_quietly,
        resolve_adapter,
        resolve_dtype,
    )
    from askbetter.clarifier.data_build import UnknownGroup, balanced_sample, leave_out
    from askbetter.clarifier.local import adapter_config

    settings = settings or Settings.from_env()
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    train_file, dev_file = cfg.data_files()
    # the data is read before the model loads: a run that could not train, or not pick its
    # threshold, stops now rather than after its steps
    in_file = read_examples(train_file)
    if not in_file:
        raise ExampleFormatError(f"{train_file} holds no examples: run `askbetter data build RAW_DIR "
                                 f"--out {cfg.data_dir}` again")
    pool = leave_out(in_file, cfg.exclude)
    if not pool:
        raise UnknownGroup(f"--exclude {' '.join(cfg.exclude)} leaves out every example of {train_file}")
    dev: list[Example] = []  # the examples `finish` scores
    if cfg.dev_examples:
        dev = balanced_sample(read_examples(dev_file), cfg.dev_examples, cfg.seed)
        then = "build the data again, or train with --dev-examples 0 and run `askbetter calibrate` later"
        if not dev:
            raise ExampleFormatError(f"{dev_file} holds no examples to pick the threshold on: {then}")
        check_both_labels(dev, f"those are --dev-examples {cfg.dev_examples} of {dev_file}: {then}")
    if cfg.exclude:
        log.warning("Left out %s: %d examples of %s kept", " ".join(cfg.exclude), len(pool), train_file)
    source_weights = cfg.source_weights()
    if unknown := sorted(set(source_weights) - {ex["source"] for ex in pool}):
        raise UnknownGroup(f"--source-weight {', '.join(unknown)}: no such source in the training pool; "
                           f"there are {', '.join(sorted({ex['source'] for ex in pool}))}")
    init = resolve_adapter(cfg.init_adapter)
    continued = adapter_config(init).get("training")  # read once; written with every checkpoint
    ckpt = cfg.out_dir / "checkpoint"
    _recover_checkpoint(ckpt)
    # anything there but an empty folder is a checkpoint to resume, or one that cannot be (refused)
    resuming = ckpt.exists() and (not ckpt.is_dir() or any(ckpt.iterdir()))
    saved = adapter_config(ckpt) if resuming else None  # read once, for both checks
    if saved is not None:
        check_same_options(saved.get("training", {}).get("config", {}), cfg, ckpt)
    check_adapter_kept(cfg, adapter_config(cfg.out_dir / "adapter"), saved)
    trainer_state = load_checkpoint(ckpt) if resuming else None

    base = cfg.base_model or settings.base_model
    lm, tokenizer = load_base(base, settings.cache_dir, settings.dtype, cfg.device)
    if not init:  # a continued adapter brings its own target modules
        check_target_modules(lm, cfg.target_modules, base_model_name(base))
    use_autocast = resolve_dtype(settings.dtype, cfg.device) == torch.bfloat16
    # the LoRA shape comes from the continued adapter, else from cfg; the weights from the
    # checkpoint when resuming, else from the continued adapter, else a fresh LoRA
    with loading_adapter(init):
        lora = LoraConfig.from_pretrained(str(init)) if init else LoraConfig(
            r=cfg.lora_r, lora_alpha=cfg.lora_alpha, target_modules=list(cfg.target_modules), task_type="CAUSAL_LM")
        lora.inference_mode = False  # a saved adapter's config says True
        lora.lora_dropout = cfg.lora_dropout  # a training option, a continued adapter's too
        # named below; a saved Hub id here makes PEFT warn that it "was renamed" to the local base
        lora.base_model_name_or_path = None
        with peft_quietly():
            model = get_peft_model(lm, lora)
    model.peft_config["default"].base_model_name_or_path = base_model_name(base)
    weights = ckpt if resuming else init
    if weights:
        with loading_adapter(weights):
            set_peft_model_state_dict(model, load_file(weights / ADAPTER_WEIGHTS))

    examples = (balanced_sample(pool, cfg.max_examples, cfg.seed, cfg.stratum_power,
                                cfg.stratum_by_kind, source_weights)
                if cfg.max_examples else pool)
    grouped = with_contrasts(examples, pool) if cfg.contrast_pairs else [[e] for e in examples]
    if cfg.smalltalk_share:
        grouped = with_smalltalk(grouped, cfg.smalltalk_share, cfg.seed)
    examples = [e for unit in grouped for e in unit]
    items: list[Encoded] = []
    units: list[list[int]] = []  # the positions in `items` of each unit of `grouped`
    with tqdm(total=len(examples), desc="tokenising", leave=False) as bar:
        for u, unit in enumerate(grouped):
            units.append(list(range(len(items), len(items) + len(unit))))
            items += [encode(e, tokenizer, cfg, u if len(unit) > 1 else -1) for e in unit]
            bar.update(len(unit))
    rng = random.Random(cfg.seed)
    plan = [b for _ in range(cfg.epochs) for b in make_batches(items, cfg, rng, units)]
    digests = plan_digests(plan, examples)
    total = min(len(plan), cfg.max_steps) if cfg.max_steps else len(plan)
    check_head(model, items[0].input_ids[:16])

    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.0)
    scheduler = get_linear_schedule_with_warmup(optimizer, math.ceil(total * cfg.warmup_share), total)
    state: dict[str, Any] = {"step": 0, "tokens": 0, "seconds": 0.0, "loss_ema": None}
    if trainer_state is not None:
        check_resumable(trainer_state, digests, ckpt)
        optimizer.load_state_dict(trainer_state.pop("optimizer"))
        scheduler.load_state_dict(trainer_state.pop("scheduler"))
        if "rng" in trainer_state:  # checkpoints written before it was kept have none
            set_rng_state(trainer_state["rng"], cfg.device)
        state.update(trainer_state)
        log.warning("Resuming from %s at step %d/%d", ckpt, state["step"], total)
    cfg.out_dir.mkdir(parents=True, exist_ok=True)  # only now: a run refused above writes nothing
    (cfg.out_dir / "train_config.json").write_text(json.dumps(cfg.to_json(), indent=2))
    log_path = cfg.out_dir / "train_log.jsonl"
    _truncate_log(log_path, state["step"])

    pad_id, clear_id = pad_token_id(tokenizer), clear_token_id(tokenizer)
    model.train()
    # closed on the way out too, so that a stopped run's bar is drawn before the message
    with log_path.open("a") as log_file, tqdm(total=total, initial=state["step"], desc="training",
                                               unit="step") as bar:
        while state["step"] < total:
            started = time.perf_counter()
            batch = {k: v.to(cfg.device) for k, v in
                     collate([items[i] for i in plan[state["step"]]], pad_id).items()}
            with torch.autocast(device_type=cfg.device.split(":")[0], dtype=torch.bfloat16,
                                enabled=use_autocast):
                answer = answer_logits(model, batch)
            loss = weighted_loss(answer, cfg.first_token_weight)
            pair = (pair_margin_loss(answer, batch["unit"], batch["clear"], clear_id)
                    if cfg.pair_margin_weight else None)
            (loss if pair is None else loss + cfg.pair_margin_weight * pair).backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            state["step"] += 1
            state["tokens"] += int(batch["attention_mask"].sum())
            state["seconds"] += time.perf_counter() - started
            ema = state["loss_ema"]
            state["loss_ema"] = loss.item() if ema is None else 0.95 * ema + 0.05 * loss.item()
            # "loss": the answer tokens' cross-entropy; "pair_loss": the hinge before its weight
            log_file.write(json.dumps({"step": state["step"], "loss": round(loss.item(), 4),
                                       "lr": scheduler.get_last_lr()[0], "tokens": state["tokens"],
                                       "seconds": round(state["seconds"], 1),
                                       **({"pair_loss": round(pair.item(), 4)} if pair is not None
                                          else {})}) + "\n")
            log_file.flush()
            # the loss's moving average (train_log.jsonl has each step's), tokens per second of steps
            bar.set_postfix(loss_ema=f"{state['loss_ema']:.3f}", tok_s=f"{state['tokens'] / state['seconds']:.0f}")
            bar.update(1)
            if state["step"] % cfg.checkpoint_every == 0 or state["step"] == total:
                state["peak_mb"] = peak_memory_mb(cfg.device, state.get("peak_mb"))
                state["plan_digest"] = digests[state["step"]]
                state["rng"] = rng_state(cfg.device)
                _save_checkpoint(model, optimizer, scheduler, state, ckpt,
                                 clarifier_meta(cfg, state, len(items), total, continued))
    return finish(model, tokenizer, cfg, clarifier_meta(cfg, state, len(items), total, continued),
                  dev_file, dev, settings.dtype)


def _truncate_log(path: Path, step: int) -> None:
    """Keep only the log lines up to `step`: a run killed between checkpoints repeats the steps
    after the last checkpoint when it resumes, and they must not be logged twice. A line cut off
    by the kill, or damaged (bytes that are not UTF-8), is dropped too."""
    if not path.is_file():
        return
    kept = []
    for line in path.read_text(errors="replace").splitlines():  # a damaged line is dropped below
        try:
            if json.loads(line)["step"] <= step:
                kept.append(line)
        except (ValueError, KeyError, TypeError):
            continue
    path.write_text("".join(line + "\n" for line in kept))


def finish(model: PeftModel, tokenizer: PreTrainedTokenizerBase, cfg: TrainConfig, meta: dict, dev_file: Path,
           dev: list[Example], dtype: str = "auto") -> Path:
    """Write the adapter, its clarifier config `meta` (from `clarifier_meta`) and its card, then
    pick the threshold on `dev` (the sample of `dev_file` `train` drew) and store it (recording
    the device and `dtype`, the setting the model was loaded with, as `askbetter calibrate`
    does). The adapter is usable before the dev scoring: a run stopped there keeps it, and
    `askbetter calibrate` picks the threshold later."""
    from askbetter.clarifier.assets import LoadedModel
    from askbetter.clarifier.local import DEFAULT_THRESHOLD, LocalClarifier

    model.eval()
    out = cfg.out_dir / "adapter"
    _save_adapter(model, out, meta)
    if cfg.dev_examples:
        # only here: the metrics need scikit-learn, which a lent GPU machine may lack
        from askbetter.clarifier.calibrate import store_threshold, threshold_on

        clarifier = LocalClarifier(LoadedModel(model, tokenizer, out), max_input_tokens=cfg.max_input_tokens,
                                   prompt_style=cfg.prompt_style)
        with torch_thread.in_this_thread():  # the thread that trained: one OpenMP team
            scored = threshold_on(dev, clarifier.score)
        record = {"file": str(dev_file), **scored, "device": cfg.device, "dtype": dtype}
        store_threshold(out, record)
        log.warning("Adapter written to %s (threshold %.3f)", out, record["threshold"])
    else:
        log.warning("Adapter written to %s (no dev examples: threshold %.1f until `askbetter calibrate`)",
                    out, DEFAULT_THRESHOLD)
    return out
