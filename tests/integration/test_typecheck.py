"""mypy finds no error in the package nor in scripts/*.py, with the options of pyproject.toml's
[tool.mypy]."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

# about 45 s without a cache (the types of torch, transformers, chromadb...), 2 s with one
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _source_dir(package: str, package_dir: dict[str, str]) -> Path:
    """The folder setuptools installs `package` from: its own entry in `package_dir`, else its
    nearest parent's folder with the rest of its name below it."""
    parts = package.split(".")
    for n in range(len(parts), 0, -1):
        mapped = package_dir.get(".".join(parts[:n]))
        if mapped is not None:
            return ROOT / mapped / Path(*parts[n:])
    return ROOT / Path(*parts)


def installed_layout(into: Path) -> None:
    """The package's modules linked under `into` as an install lays them out: clarifier/, graph/,
    nodes/ and retrieval/ inside askbetter/ (which mypy, reading the sources where they are,
    would not find; an editable install maps them with an import hook it does not run)."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    for package in setuptools["packages"]:
        target = into / Path(*package.split("."))
        target.mkdir(parents=True, exist_ok=True)
        for module in _source_dir(package, setuptools["package-dir"]).glob("*.py"):
            (target / module.name).symlink_to(module)


def test_mypy_finds_no_error_in_the_package_and_scripts(tmp_path) -> None:
    installed_layout(tmp_path)
    # the scripts beside the installed package, the `files` of [tool.mypy]: mypy puts scripts/ on its
    # search path and names each script after its file, as `python scripts/NAME.py` runs it (one
    # folder: no two scripts can share a name); their `askbetter` imports find the layout
    (tmp_path / "scripts").symlink_to(ROOT / "scripts", target_is_directory=True)
    # the cache (the third-party packages' types, mostly) outside tmp_path, kept between runs
    done = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                           "--cache-dir", str(ROOT / ".mypy_cache")],
                          cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
