"""Average LoRA adapters of one base model in weight space.

The adapter whose update is the weighted sum of theirs, made by PEFT's `add_weighted_adapter`.

Interpolating a fine-tuned model with the weights its fine-tuning started from keeps much of
what the run gained while holding on to what the start did better off its data (WiSE-FT:
Wortsman et al., "Robust fine-tuning of zero-shot models", CVPR 2022). Stage 36n is the even
mix of run s57 and stage 36l, the adapter s57 continued (clarifier/adapter/TRAINING_LOG.md):

    python scripts/average_adapters.py runs/s57/adapter=0.5 runs/eval/36l=0.5 --out runs/s58/adapter

`svd` (the default) keeps the adapters' rank: each module's summed update cut to its leading
singular vectors (the share of the update's energy that the cut drops is printed; near zero
where the adapters are close, as a run and its start are); `cat` is exact at the sum of the
ranks. The folder gets PEFT's adapter files and an `askbetter_clarifier.json` with the adapters'
shared prompt style and input budget, the training records of both under `training.averaged`
(one that the other's holds as a JSON Reference to it),
and no threshold: pick it with `askbetter calibrate` (or `scripts/judge_adapter.sh`).
"""

import argparse
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import cast

import torch

from askbetter.clarifier.assets import ModelNotFound, load_base, peft_quietly, require_adapter
from askbetter.clarifier.local import CLARIFIER_CONFIG, adapter_config, write_clarifier_config
from askbetter.clarifier.train import card_front_matter
from askbetter.settings import Settings

SHARED = ("prompt_style", "max_input_tokens")  # how the prompt is built: the same for every adapter


def parse_weighted(spec: str) -> tuple[Path, float]:
    """`FOLDER=WEIGHT` as a folder and a number."""
    folder, sep, weight = spec.rpartition("=")
    try:
        if not sep:
            raise ValueError
        return require_adapter(folder, "averaging"), float(weight)
    except (ValueError, ModelNotFound) as exc:
        raise SystemExit(f"{spec!r}: give ADAPTER_FOLDER=WEIGHT, e.g. runs/s57/adapter=0.5 ({exc})") from exc


def shared_settings(folders: list[Path], configs: list[dict]) -> dict:
    """The prompt settings every adapter was trained with (`configs`: their clarifier configs, in
    the folders' order); they must agree."""
    first, *others = [{key: config.get(key) for key in SHARED} for config in configs]
    for folder, these in zip(folders[1:], others):
        if these != first:
            raise SystemExit(f"{folder} was trained with other prompt settings than {folders[0]}: "
                             f"{these} against {first}")
    return {key: value for key, value in first.items() if value is not None}


def dropped_share(model: torch.nn.Module, names: list[str], weights: list[float], merged: str) -> float:
    """The share of the weighted sum of the updates' energy (squared Frobenius norm, over every
    module) that the merged adapter misses."""
    from peft.tuners.lora import LoraLayer

    missed = total = 0.0
    for module in model.modules():
        if not isinstance(module, LoraLayer) or merged not in module.lora_A:
            continue
        # each of PEFT's LoRA layer classes defines it, but their base LoraLayer does not declare it
        # (so mypy reads torch's `Module.__getattr__`: a tensor or a module)
        delta_weight = cast(Callable[[str], torch.Tensor], module.get_delta_weight)
        wanted = torch.stack([w * delta_weight(n) for n, w in zip(names, weights)]).sum(0)
        missed += float((wanted - delta_weight(merged)).pow(2).sum())
        total += float(wanted.pow(2).sum())
    return missed / total


def pointer_to(record: object, wanted: dict, at: str) -> str | None:
    """The JSON Pointer (RFC 6901), from `at`, of the first part of `record` equal to `wanted`."""
    if record == wanted:
        return at
    items = record.items() if isinstance(record, dict) else enumerate(record) if isinstance(record, list) else ()
    for key, value in items:
        found = pointer_to(value, wanted, f"{at}/{str(key).replace('~', '~0').replace('/', '~1')}")
        if found is not None:
            return found
    return None


def training_records(folders: list[Path], weights: list[float], configs: list[dict]) -> list[dict]:
    """Each adapter's weight, folder and training record; a record that another adapter's holds
    already (a run averaged with the adapter it continued from) is written once, the other a JSON
    Reference (`{"$ref": "#/training/averaged/0/training/continued_from"}`) to it."""
    records = [{"weight": w, "adapter": str(f), "training": config.get("training")}
               for f, w, config in zip(folders, weights, configs)]
    for record in records:
        if not isinstance(record["training"], dict):
            continue
        for j, other in enumerate(records):
            held = other["training"]
            if other is record or not isinstance(held, dict) or "$ref" in held:
                continue
            found = pointer_to(held, record["training"], f"#/training/averaged/{j}/training")
            if found is not None:
                record["training"] = {"$ref": found}
                break
    return records


def card(base_model: str | None, specs: list[str]) -> str:
    """The averaged adapter's README.md, in place of PEFT's template."""
    return card_front_matter(base_model) + f"""
# askbetter clarifier adapter, averaged

A LoRA adapter of {base_model} for askbetter's clarification checks: the weighted average of
{", ".join(specs)} in weight space, made by

    python scripts/average_adapters.py {" ".join(sys.argv[1:])}

`askbetter_clarifier.json` holds the prompt style and input budget, the adapters' training records
and, once `askbetter calibrate` has picked it, the decision threshold.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("adapters", nargs="+", metavar="FOLDER=WEIGHT", help="PEFT adapter folders and their weights")
    parser.add_argument("--out", required=True, type=Path, help="the averaged adapter's folder (must not exist)")
    parser.add_argument("--combination", choices=("svd", "cat"), default="svd")
    args = parser.parse_args()
    if len(args.adapters) < 2:
        parser.error("give two adapters or more")
    if args.out.exists():
        parser.error(f"{args.out} exists: name a new folder")
    parsed = [parse_weighted(spec) for spec in args.adapters]
    folders, weights = [folder for folder, _ in parsed], [weight for _, weight in parsed]
    configs = [adapter_config(folder) for folder in folders]
    settings = shared_settings(folders, configs)

    from peft import PeftModel

    config = Settings.from_env()
    base, _ = load_base(config.base_model, config.cache_dir, "float32", "cpu")
    names = [f"a{i}" for i in range(len(folders))]
    with peft_quietly():
        model = PeftModel.from_pretrained(base, str(folders[0]), adapter_name=names[0])
        for name, folder in zip(names[1:], folders[1:]):
            model.load_adapter(str(folder), adapter_name=name)
        model.add_weighted_adapter(names, weights, "averaged", combination_type=args.combination)
    print(f"{args.combination}: {dropped_share(model, names, weights, 'averaged'):.2e} of the "
          "weighted update's energy dropped", file=sys.stderr)
    for name in names:
        model.delete_adapter(name)
    partial = args.out.with_name(args.out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)  # an interrupted run's
    model.save_pretrained(str(partial), selected_adapters=["averaged"], save_embedding_layers=False)
    saved = partial / "averaged"  # PEFT saves an adapter not named "default" in a folder of its name
    record = {"averaged": training_records(folders, weights, configs), "combination": args.combination}
    write_clarifier_config(saved / CLARIFIER_CONFIG, {**settings, "training": record})
    (saved / "README.md").write_text(card(model.peft_config["averaged"].base_model_name_or_path, args.adapters))
    saved.rename(args.out)
    (partial / "README.md").unlink(missing_ok=True)  # PEFT's template, naming the base by its local folder
    partial.rmdir()
    print(args.out)


if __name__ == "__main__":
    main()
