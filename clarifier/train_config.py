"""One training run's options, `TrainConfig`: each field an `askbetter train` option, checked
when the config is made. Apart from `askbetter.clarifier.train` (which imports torch), so that the
command line builds its parser without the model libraries."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from askbetter.clarifier.prompt import TUNED_STYLES, PromptStyle
from askbetter.settings import MIN_INPUT_TOKENS, device_problem


@dataclass(frozen=True)
class _Range:
    """The values a numeric TrainConfig field may take: `low` up to `high`, each bound itself
    allowed unless open."""

    low: float
    high: float = math.inf
    low_open: bool = False
    high_open: bool = False

    def admits(self, value: float) -> bool:
        above = value > self.low if self.low_open else value >= self.low
        below = value < self.high if self.high_open else value <= self.high
        return above and below  # also False for NaN

    def rule(self) -> str:
        """What a value must do, for a message: "be 1 or more", "be above 0", "lie in [0, 1)"."""
        if self.high == math.inf:
            return f"be above {self.low}" if self.low_open else f"be {self.low} or more"
        return (f"lie in {'(' if self.low_open else '['}{self.low}, "
                f"{self.high}{')' if self.high_open else ']'}")


# each numeric TrainConfig field that has bounds (a low bound of 0 where 0 means "none" or "all")
_RANGES: dict[str, _Range] = {
    "max_examples": _Range(0), "stratum_power": _Range(0), "pair_margin_weight": _Range(0),
    "smalltalk_share": _Range(0, 1), "dev_examples": _Range(0),
    "max_input_tokens": _Range(MIN_INPUT_TOKENS), "max_target_tokens": _Range(1),
    "epochs": _Range(1), "batch_tokens": _Range(1), "max_batch_size": _Range(1),
    "lr": _Range(0, low_open=True), "warmup_share": _Range(0, 1, high_open=True),
    "lora_r": _Range(1), "lora_alpha": _Range(0, low_open=True),
    "lora_dropout": _Range(0, 1, high_open=True), "first_token_weight": _Range(0),
    "checkpoint_every": _Range(1), "threads": _Range(0), "max_steps": _Range(0),
    "seed": _Range(-(2**63), 2**64 - 1),  # what torch.manual_seed takes
}


def _option(default: object, help: str) -> Any:
    """A TrainConfig field: its default and its `askbetter train --help` text (the field's doc)."""
    return field(default=default, metadata={"help": help})


@dataclass
class TrainConfig:
    """One training run's options; each field is an `askbetter train` option of the same name."""

    data_dir: Path = _option(Path("data"), "the folder holding train.jsonl and dev.jsonl (askbetter data build)")
    out_dir: Path = _option(Path("runs/clarifier"), "the run's folder: checkpoint, log, adapter")
    base_model: str | None = _option(None, "a Hugging Face id or folder (default: ASKBETTER_BASE_MODEL, "
                                           "the bundled SmolLM2)")
    exclude: tuple[str, ...] = _option((), "sources (ambignq) or sources and settings (ambignq:pre) left out "
                                           "of train.jsonl, before the sample and as contrast partners")
    max_examples: int = _option(3000, "the size of the stratified sample of train.jsonl (0: all)")
    stratum_power: float = _option(1.0, "each (source, setting, label, has a history) stratum's share of "
                                        "the sample grows with its size to this power: 1 proportional, "
                                        "0.5 more of the small strata, 0 equal")
    source_weight: tuple[str, ...] = _option((), "SOURCE=WEIGHT pairs (written=3): that source's strata "
                                                 "get WEIGHT times the share of the sample that "
                                                 "--stratum-power gives them")
    stratum_by_kind: bool = _option(False, "split each label's strata by kind (clear apart from hard-negative)")
    contrast_pairs: bool = _option(False, "add each sampled example's contrast group (same question, other "
                                          "label) from train.jsonl and batch the group together")
    pair_margin_weight: float = _option(0.0, "with --contrast-pairs: the weight of a hinge term asking each "
                                             "clear member's log P(CLEAR) at the first answer position to "
                                             "exceed each clarify member's by a margin")
    smalltalk_share: float = _option(0.0, "this share of the units gets a greeting exchange before the "
                                          "conversation (a label-preserving change, chosen by the seed)")
    dev_examples: int = _option(400, "dev examples scored at the end to pick the threshold (0: none; the "
                                     "threshold stays 0.5 until askbetter calibrate)")
    max_input_tokens: int = _option(320, "the prompt's content budget in tokens (conversation and passages)")
    prompt_style: PromptStyle = _option("tuned", "tuned, or tuned-question-last: the judged turn once more "
                                                 "after the passages")
    max_target_tokens: int = _option(48, "the longest answer trained on, in tokens (a longer question is cut)")
    epochs: int = _option(1, "passes over the sample")
    batch_tokens: int = _option(2048, "padded tokens per batch (batches are bucketed by length)")
    max_batch_size: int = _option(16, "examples per batch at most")
    lr: float = _option(3e-4, "the peak learning rate (linear warm-up, then linear decay to 0)")
    warmup_share: float = _option(0.05, "the share of the steps spent warming up")
    lora_r: int = _option(16, "the LoRA rank (a fresh LoRA only)")
    lora_alpha: int = _option(32, "the LoRA alpha (a fresh LoRA only)")
    lora_dropout: float = _option(0.05, "the LoRA dropout while training, a continued adapter's too (0: "
                                        "off, a CPU step about 0.6x as long: scripts/bench_train_step.py "
                                        "--compare dropout)")
    target_modules: tuple[str, ...] = _option(
        ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
        "the modules the LoRA adapts (a fresh LoRA only)")
    first_token_weight: float = _option(3.0, "the loss weight of the first answer token (CLEAR or the "
                                             "question's first), the one the decision score reads")
    checkpoint_every: int = _option(20, "steps between checkpoints")
    seed: int = _option(13, "the seed of the train and dev samples, the batch order and a fresh LoRA")
    threads: int = _option(0, "torch's CPU threads (0: torch's default)")
    device: str = _option("cpu", "cpu, cuda, cuda:N or mps")
    max_steps: int = _option(0, "stop after this many steps (0: no limit; for smoke tests)")
    init_adapter: str = _option("", "continue training this adapter (bundled, or a PEFT folder) instead of "
                                    "a fresh LoRA, keeping its LoRA shape (--lora-r, --lora-alpha and "
                                    "--target-modules are then ignored); empty: a fresh LoRA")

    def __post_init__(self) -> None:
        for f in fields(self):  # an infinite lr or weight trains the adapter to NaN
            value = getattr(self, f.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"{f.name} must be a finite number, not {value}")
        for name, allowed in _RANGES.items():
            if not allowed.admits(getattr(self, name)):
                raise ValueError(f"{name} must {allowed.rule()}, not {getattr(self, name)}")
        problem = device_problem(self.device)
        if problem:
            raise ValueError(f"device {problem}")
        if self.pair_margin_weight and not self.contrast_pairs:
            raise ValueError("pair_margin_weight needs contrast_pairs (the units it compares)")
        for group in self.exclude:
            source, colon, setting = group.partition(":")
            if not source or (colon and setting not in ("pre", "post")):
                raise ValueError(f"exclude takes SOURCE or SOURCE:pre or SOURCE:post, not {group!r}")
        if self.source_weights() and not self.max_examples:
            raise ValueError("source_weight needs max_examples (the sample it weights; 0 takes all)")
        if self.prompt_style not in TUNED_STYLES:
            raise ValueError(f"prompt_style must be one of {TUNED_STYLES}, not {self.prompt_style!r}")

    def source_weights(self) -> dict[str, float]:
        """`source_weight` as a mapping, or ValueError naming a pair that is not SOURCE=WEIGHT
        with a finite WEIGHT above 0, or a source named twice."""
        weights: dict[str, float] = {}
        for pair in self.source_weight:
            source, _, text = pair.partition("=")
            try:
                weight = float(text)
            except ValueError:
                weight = math.nan
            if not source or not (0 < weight < math.inf):
                raise ValueError(f"source_weight takes SOURCE=WEIGHT with a finite weight above 0, not {pair!r}")
            if source in weights:
                raise ValueError(f"source_weight names {source} twice")
            weights[source] = weight
        return weights

    def data_files(self) -> tuple[Path, Path]:
        """The train and dev files in `data_dir`, or FileNotFoundError saying how to build them
        when one is missing."""
        files = self.data_dir / "train.jsonl", self.data_dir / "dev.jsonl"
        for f in files:
            if not f.is_file():
                raise FileNotFoundError(
                    f"{f} not found: run `askbetter data build RAW_DIR --out {self.data_dir}` first")
        return files

    def to_json(self) -> dict:
        d = asdict(self)
        d["data_dir"], d["out_dir"] = str(self.data_dir), str(self.out_dir)
        d["target_modules"], d["exclude"] = list(self.target_modules), list(self.exclude)
        d["source_weight"] = list(self.source_weight)
        return d
