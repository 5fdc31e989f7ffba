"""Time a training step two ways: the head's positions, or the LoRA dropout.

`askbetter train` computes its loss from the logits at the positions that predict an answer token
(`clarifier.train.answer_logits`); before session 44 it ran the head over every position and read
those. `--compare head` (the default) runs both on the same real batches, side by side in one
process, a fresh LoRA of the default shape with dropout off; `--compare dropout` runs the way
training does with the default LoRA dropout (0.05) against the same LoRA with its dropout modules
swapped for identities (as PEFT builds a LoRA of dropout 0: `askbetter train --lora-dropout 0`).
The batches: the first `--batches` that `askbetter train` would plan from the first `--examples`
examples of `DATA_DIR/train.jsonl` (its defaults: length-bucketed under 2,048 padded tokens, bf16
autocast where the CPU has it). Each way first runs every batch once (a warm-up, the second way
first, so that the process's peak RSS after it is that way's own and after the other the larger
of the two), then each batch's forward and backward runs once per way, alternating: the table
gives the median and min seconds a step, the ratio, the peak RSS, and with `--compare head` how
far apart the two ways' losses and LoRA gradients are (bf16 sums differ in their order).

    HF_HUB_OFFLINE=1 python scripts/bench_train_step.py data --threads 2
    HF_HUB_OFFLINE=1 python scripts/bench_train_step.py data --threads 2 --compare dropout
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

from askbetter.clarifier.assets import load_base, pad_token_id, resolve_dtype
from askbetter.clarifier.examples import read_examples
from askbetter.clarifier.train import (
    AnswerLogits,
    TrainConfig,
    answer_logits,
    at_answer_positions,
    collate,
    encode,
    make_batches,
    weighted_loss,
)
from askbetter.settings import Settings


def every_position(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> AnswerLogits:
    """The way before: the model's own forward (the head over every position), then the answer's
    positions read from its logits."""
    return at_answer_positions(model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits,
                               batch)


def dropout_way(model: torch.nn.Module, *, on: bool) -> Callable[[torch.nn.Module, dict[str, torch.Tensor]], AnswerLogits]:
    """The way `askbetter train` runs (the head at the answer's positions) with the LoRA dropout
    modules as built (`on`) or each swapped for an identity, as PEFT builds a LoRA of dropout 0."""
    from peft.tuners.lora import LoraLayer

    built = {layer: layer.lora_dropout["default"] for layer in model.modules() if isinstance(layer, LoraLayer)}

    def way(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> AnswerLogits:
        for layer, dropout in built.items():
            layer.lora_dropout["default"] = dropout if on else torch.nn.Identity()
        return answer_logits(model, batch)

    return way


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data_dir", type=Path, help="the folder `askbetter data build` wrote (train.jsonl)")
    parser.add_argument("--examples", type=int, default=400, help="examples to plan batches from (default: 400)")
    parser.add_argument("--batches", type=int, default=8, help="batches timed, each both ways (default: 8)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default: 2)")
    parser.add_argument("--compare", choices=("head", "dropout"), default="head",
                        help="what the two ways differ in: where the head runs (default), or the LoRA "
                             "dropout (0.05 against off; the head at the answer's positions)")
    args = parser.parse_args()

    from peft import LoraConfig, get_peft_model

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    settings, cfg = Settings.from_env(), TrainConfig(data_dir=args.data_dir)
    lm, tokenizer = load_base(settings.base_model, settings.cache_dir, settings.dtype, "cpu")
    dropout = cfg.lora_dropout if args.compare == "dropout" else 0.0
    model = get_peft_model(lm, LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=dropout,
                                          target_modules=list(cfg.target_modules), task_type="CAUSAL_LM"))
    model.train()
    autocast = resolve_dtype(settings.dtype, "cpu") == torch.bfloat16
    items = [encode(e, tokenizer, cfg) for e in read_examples(args.data_dir / "train.jsonl")[:args.examples]]
    plan = make_batches(items, cfg, random.Random(0))[:args.batches]
    batches = [collate([items[i] for i in b], pad_token_id(tokenizer)) for b in plan]

    ways = ({"head at every position": every_position, "head at the answer's positions": answer_logits}
            if args.compare == "head" else
            {f"LoRA dropout {dropout}": dropout_way(model, on=True), "LoRA dropout off": dropout_way(model, on=False)})
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    peak_kib: dict[str, int] = {}
    loss_gap, grad_gap = 0.0, 0.0
    # each way over every batch once, the second first: the process's peak after those is its own,
    # and after the first way's the larger of the two
    for name in reversed(ways):
        for batch in batches:
            _step(model, ways[name], batch, autocast)
        peak_kib[name] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for k, batch in enumerate(batches, 1):
        print(f"batch {k}/{args.batches}: {tuple(batch['input_ids'].shape)}", flush=True)
        results = {}
        for name, way in ways.items():
            started = time.perf_counter()
            results[name] = _step(model, way, batch, autocast)
            seconds[name].append(time.perf_counter() - started)
        (loss_a, grads_a), (loss_b, grads_b) = results.values()
        loss_gap = max(loss_gap, abs(loss_a - loss_b) / abs(loss_a))
        grad_gap = max(grad_gap, float((grads_a - grads_b).norm() / grads_a.norm()))

    first, second = ways
    print(f"\n{'per training step':32s} {'median s':>9s} {'min s':>7s} {'peak RSS GiB':>13s}")
    for name in ways:
        print(f"{name:32s} {statistics.median(seconds[name]):9.2f} {min(seconds[name]):7.2f} "
              f"{peak_kib[name] / 2**20:13.2f}")
    print(f"ratio ({second} / {first}), medians: "
          f"{statistics.median(seconds[second]) / statistics.median(seconds[first]):.2f}")
    if args.compare == "head":  # the same loss both ways (dropout's random masks make the losses differ)
        print(f"largest relative gap between the two ways: loss {loss_gap:.1e}, LoRA gradient {grad_gap:.1e}")


def _step(model: torch.nn.Module, way: object, batch: dict[str, torch.Tensor],
          autocast: bool) -> tuple[float, torch.Tensor]:
    """One forward and backward; the loss and the LoRA gradients, flattened."""
    model.zero_grad(set_to_none=True)
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=autocast):
        answer = way(model, batch)  # type: ignore[operator]
    loss = weighted_loss(answer, TrainConfig().first_token_weight)
    loss.backward()
    grads = torch.cat([p.grad.flatten().float() for p in model.parameters() if p.grad is not None])
    return loss.item(), grads


if __name__ == "__main__":
    main()
