"""Time a training step, the head at every position against at the answer's only.

`askbetter train` computes its loss from the logits at the positions that predict an answer token
(`clarifier.train.answer_logits`); before session 44 it ran the head over every position and read
those. This runs both on the same real batches, side by side in one process: the first
`--batches` batches `askbetter train` would plan from the first `--examples` examples of
`DATA_DIR/train.jsonl` (its defaults: length-bucketed under 2,048 padded tokens, bf16 autocast
where the CPU has it), a fresh LoRA of the default shape on the base model, dropout off. Each way
first runs every batch once (a warm-up, the answer's positions first, so that the process's peak
RSS after it is that way's own and after the other the larger of the two), then each batch's
forward and backward runs once per way, alternating: the table gives the median and min seconds
a step, the ratio, the peak RSS, and how far apart the two ways' losses and LoRA gradients are
(bf16 sums differ in their order).

    HF_HUB_OFFLINE=1 python scripts/bench_train_step.py data --threads 2
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import time
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data_dir", type=Path, help="the folder `askbetter data build` wrote (train.jsonl)")
    parser.add_argument("--examples", type=int, default=400, help="examples to plan batches from (default: 400)")
    parser.add_argument("--batches", type=int, default=8, help="batches timed, each both ways (default: 8)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default: 2)")
    args = parser.parse_args()

    from peft import LoraConfig, get_peft_model

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    settings, cfg = Settings.from_env(), TrainConfig(data_dir=args.data_dir)
    lm, tokenizer = load_base(settings.base_model, settings.cache_dir, settings.dtype, "cpu")
    model = get_peft_model(lm, LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=0.0,
                                          target_modules=list(cfg.target_modules), task_type="CAUSAL_LM"))
    model.train()
    autocast = resolve_dtype(settings.dtype, "cpu") == torch.bfloat16
    items = [encode(e, tokenizer, cfg) for e in read_examples(args.data_dir / "train.jsonl")[:args.examples]]
    plan = make_batches(items, cfg, random.Random(0))[:args.batches]
    batches = [collate([items[i] for i in b], pad_token_id(tokenizer)) for b in plan]

    ways = {"head at every position": every_position, "head at the answer's positions": answer_logits}
    seconds: dict[str, list[float]] = {name: [] for name in ways}
    peak_kib: dict[str, int] = {}
    loss_gap, grad_gap = 0.0, 0.0
    # each way over every batch once, the answer's positions first: the process's peak after those
    # is their own, and after the other way's the larger of the two
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
    print(f"ratio (answer's positions / every position), medians: "
          f"{statistics.median(seconds[second]) / statistics.median(seconds[first]):.2f}")
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
