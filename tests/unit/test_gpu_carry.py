"""scripts/gpu_carry.py: the parts a GPU training run is carried in, and the runs coming back."""

import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from askbetter.clarifier.assets import ADAPTER_WEIGHTS

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gpu_carry.py"
spec = importlib.util.spec_from_file_location("gpu_carry", SCRIPT)
gpu_carry = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_carry)


@pytest.fixture
def splits(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    for split in gpu_carry.SPLITS:
        lines = [json.dumps({"id": f"{split}-{i}", "text": "word " * (i % 7)}) for i in range(300)]
        (data / split).write_text("\n".join(lines) + "\n")
    return data


def _receive(folders: list[Path], parts: Path) -> None:
    """What `gpu_train.sh receive` does over the calls: every part and a manifest in one folder."""
    parts.mkdir()
    for folder in folders:
        for f in folder.iterdir():
            (parts / f.name).write_bytes(f.read_bytes())


def test_parts_are_even_under_the_limit_and_join_back_to_the_splits_and_wheels(
        tmp_path: Path, splits: Path) -> None:
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    wheel.write_bytes(bytes(range(256)) * 40)
    blob = gpu_carry.build_blob(splits, [wheel])
    folders = gpu_carry.write_parts(blob, tmp_path / "out", part_bytes=len(blob) // 3 + 10)
    sizes = [(f / f"{gpu_carry.BLOB}.{k}").stat().st_size for k, f in enumerate(folders, 1)]
    assert len(folders) == 3 and max(sizes) <= len(blob) // 3 + 10 and max(sizes) - min(sizes) <= 2
    _receive(folders, tmp_path / "parts")
    gpu_carry.join_parts(tmp_path / "parts", tmp_path / "work")
    for split in gpu_carry.SPLITS:
        assert (tmp_path / "work" / "data" / split).read_bytes() == (splits / split).read_bytes()
    assert (tmp_path / "work" / "wheels" / wheel.name).read_bytes() == wheel.read_bytes()
    assert not list((tmp_path / "work" / "data").glob("*.xz"))


def test_packing_again_replaces_the_old_parts(tmp_path: Path, splits: Path) -> None:
    blob = gpu_carry.build_blob(splits, [])
    gpu_carry.write_parts(blob, tmp_path / "out", part_bytes=len(blob) // 4 + 1)
    assert [f.name for f in gpu_carry.write_parts(blob, tmp_path / "out", len(blob))] == ["part-1"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["part-1"]


def test_a_missing_or_altered_part_is_a_clear_error(tmp_path: Path, splits: Path) -> None:
    blob = gpu_carry.build_blob(splits, [])
    folders = gpu_carry.write_parts(blob, tmp_path / "out", part_bytes=len(blob) // 2 + 1)
    _receive(folders[:1], tmp_path / "parts")
    with pytest.raises(SystemExit, match=f"parts missing: {gpu_carry.BLOB}.2"):
        gpu_carry.join_parts(tmp_path / "parts", tmp_path / "work")
    second = tmp_path / "parts" / f"{gpu_carry.BLOB}.2"
    second.write_bytes(b"x" + (folders[1] / second.name).read_bytes()[1:])
    with pytest.raises(SystemExit, match="SHA-256"):
        gpu_carry.join_parts(tmp_path / "parts", tmp_path / "work")


def test_packing_without_built_splits_says_how_to_build_them(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="askbetter data build"):
        gpu_carry.build_blob(tmp_path, [])


def _run_tar(tmp_path: Path, weights: dict[str, torch.Tensor] | None,
             capsys: pytest.CaptureFixture[str]) -> Path:
    """A run as `gpu_train.sh` packs it: the job's adapter folder through `bf16` (no weights for
    `weights` None: a job that failed before its first checkpoint), records and log under NAME/
    in a tar."""
    adapter = tmp_path / "job" / "adapter"
    adapter.mkdir(parents=True)
    if weights is not None:
        save_file(weights, adapter / ADAPTER_WEIGHTS)
        (adapter / "adapter_config.json").write_text("{}")
        (adapter / "askbetter_clarifier.json").write_text(json.dumps({"training": {"steps": 3}}))
    run = tmp_path / "back" / "g2"
    gpu_carry.main(["bf16", str(adapter), str(run)])
    said = capsys.readouterr().out
    assert ("no adapter weights" in said) == (weights is None)
    if weights is not None:
        assert load_file(run / ADAPTER_WEIGHTS)["lora_A"].dtype == torch.bfloat16
    run.mkdir(parents=True, exist_ok=True)
    (run / "train_config.json").write_text("{}")
    (run / "train.log").write_text("log")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(run, arcname="g2")
    (tmp_path / "g2.tar").write_bytes(buf.getvalue())
    return tmp_path / "g2.tar"


def test_unpack_makes_a_run_folder_with_an_fp32_adapter_and_keeps_an_existing_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    weights = {"lora_A": torch.randn(4, 8), "lora_B": torch.randn(8, 4)}
    tar = _run_tar(tmp_path, weights, capsys)
    run = gpu_carry.unpack(tar, tmp_path / "runs")
    assert run == tmp_path / "runs" / "g2"
    assert sorted(p.name for p in (run / "adapter").iterdir()) == sorted(
        ["adapter_config.json", ADAPTER_WEIGHTS, "askbetter_clarifier.json"])
    assert (run / "train.log").read_text() == "log" and (run / "train_config.json").is_file()
    back = load_file(run / "adapter" / ADAPTER_WEIGHTS)
    for name, tensor in weights.items():
        assert back[name].dtype == torch.float32
        assert torch.equal(back[name], tensor.to(torch.bfloat16).to(torch.float32))
    with pytest.raises(SystemExit, match="exists"):
        gpu_carry.unpack(tar, tmp_path / "runs")
    assert torch.equal(load_file(run / "adapter" / ADAPTER_WEIGHTS)["lora_A"], back["lora_A"])


def test_unpacking_a_failed_job_keeps_its_log_and_makes_no_adapter_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tar = _run_tar(tmp_path, None, capsys)
    gpu_carry.main(["unpack", str(tar), "--runs", str(tmp_path / "runs")])
    run = tmp_path / "runs" / "g2"
    assert sorted(p.name for p in run.iterdir()) == ["train.log", "train_config.json"]
    assert "no adapter came back" in capsys.readouterr().out
    (run / "train.log").write_text("the first unpack's log, read since")
    with pytest.raises(SystemExit, match="train.log"):  # unpacking it again overwrites nothing
        gpu_carry.main(["unpack", str(tar), "--runs", str(tmp_path / "runs")])
    assert (run / "train.log").read_text() == "the first unpack's log, read since"


STAND_IN = """#!/bin/sh
# $PYTHON for gpu_train.sh: the real interpreter, but `pip install --target SITE` copies a stand-in
# askbetter there (its train prints a line and exits), with its console script, as pip would.
if [ "$1" = -m ] && [ "$2" = pip ]; then
    while [ "$1" != --target ]; do shift; done
    mkdir -p "$2" && cp -r "%s"/. "$2"/
    exit 0
fi
exec "%s" "$@"
"""
STAND_IN_FILES = {
    "askbetter/__init__.py": "",
    "askbetter/clarifier/__init__.py": "",
    "askbetter/clarifier/assets.py": 'ADAPTER_CONFIG = "adapter_config.json"\n'
                                     'ADAPTER_WEIGHTS = "adapter_model.safetensors"\n'
                                     'CLARIFIER_CONFIG = "askbetter_clarifier.json"\n',
    "askbetter/cli.py": 'import sys\n\n\ndef main():\n    print("installed askbetter:", *sys.argv[1:3])\n',
    "bin/askbetter": "from askbetter.cli import main\n\nmain()\n",
}


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None, reason="needs bash, timeout")
def test_gpu_train_runs_the_installed_askbetter_not_the_source_folder(tmp_path: Path, splits: Path) -> None:
    """The jobs run from the repository root, whose `askbetter/` folder lacks the subpackages
    setuptools maps into it: `python -m askbetter.cli` there imports that folder (the working
    directory comes first on sys.path), not the askbetter installed into $WORK/site."""
    root = SCRIPT.parents[1]
    gpu_carry.write_parts(gpu_carry.build_blob(splits, []), tmp_path / "pack", part_bytes=2**30)
    for name, text in STAND_IN_FILES.items():
        (tmp_path / "stand-in" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "stand-in" / name).write_text(text)
    python = tmp_path / "python"
    python.write_text(STAND_IN % (tmp_path / "stand-in", sys.executable))
    python.chmod(0o755)
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "PACK": str(tmp_path / "pack"), "WORK": str(tmp_path / "work"), "OUT": str(out),
           "PYTHON": str(python), "DEVICE": "cpu", "JOB_SECONDS": "60"}
    done = subprocess.run(["bash", "scripts/gpu_train.sh", "train", "g1", "--max-steps 1"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "g1: exit 0; installed askbetter: train --data-dir" in done.stdout
    with tarfile.open(out / "g1.tar") as tar:
        assert "installed askbetter" in tar.extractfile("g1/train.log").read().decode()


def test_the_default_job_time_leaves_a_device_call_its_allowance_to_install_join_and_pack() -> None:
    """A device call runs 600 s at most, and docs/training-on-a-gpu.md allows 150 s of it to install,
    join the parts and pack the runs: jobs stopped later than 450 s into it can be cut before the
    runs are packed, and a cut call brings back only what is already under $OUT."""
    script = (SCRIPT.parent / "gpu_train.sh").read_text()
    (default,) = re.findall(r"^JOB_SECONDS=\$\{JOB_SECONDS:-(\d+)\}$", script, flags=re.M)
    assert int(default) + 150 <= 600
    doc = (SCRIPT.parents[1] / "docs" / "training-on-a-gpu.md").read_text()
    assert f"`JOB_SECONDS`, {default} by default" in doc and f"at most {600 - 150}, and" in doc
