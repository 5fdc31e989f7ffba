"""Turn the tars that `scripts/gpu_train.sh train` left under the device's $OUT into run folders.

Each NAME.tar becomes `RUNS/NAME/` with `adapter/` (the adapter cast back to fp32, as the CPU path
and the shipped adapter keep it), `train_config.json`, `train_log.jsonl` and `train.log`; it
then calibrates like any run: `askbetter calibrate data/dev.jsonl --adapter RUNS/NAME/adapter`.

    python scripts/gpu_unpack.py /work/.device/.../g2.tar --runs runs
"""

from __future__ import annotations

import argparse
import json
import shutil
import tarfile
import tempfile
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors", "askbetter_clarifier.json")


def unpack(tar_path: Path, runs: Path) -> Path:
    """Extract one run's tar into `runs/NAME` and return the run folder."""
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(tar_path) as tar:
        tar.extractall(tmp, filter="data")
        (src,) = Path(tmp).iterdir()
        run = runs / src.name
        adapter = run / "adapter"
        if adapter.exists():
            raise SystemExit(f"{adapter} exists: move it away or pick another --runs folder")
        adapter.mkdir(parents=True)
        for f in src.iterdir():
            if f.name == "adapter_model.safetensors":
                weights = {k: v.to(torch.float32) for k, v in load_file(f).items()}
                save_file(weights, adapter / f.name, metadata={"format": "pt"})
            elif f.name in ADAPTER_FILES:
                shutil.copy(f, adapter / f.name)
            else:
                shutil.copy(f, run / f.name)
    return run


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tars", nargs="+", type=Path)
    parser.add_argument("--runs", type=Path, default=Path("runs"), help="default: runs")
    args = parser.parse_args(argv)
    for tar_path in args.tars:
        run = unpack(tar_path, args.runs)
        meta = run / "adapter" / "askbetter_clarifier.json"
        if not meta.is_file():
            print(f"{run}: no adapter came back; see {run / 'train.log'}")
            continue
        record = json.loads(meta.read_text()).get("training", {})
        print(f"{run}: {(run / 'FROM').read_text().strip()}, {record.get('steps')} steps, "
              f"{record.get('tokens_seen')} tokens, {record.get('train_seconds')} s")


if __name__ == "__main__":
    main()
