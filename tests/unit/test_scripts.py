"""scripts/*.py: each answers --help with its usage and refuses a wrong argument count."""

import ast
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = sorted((Path(__file__).resolve().parents[2] / "scripts").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda s: s.name)
def test_help_prints_the_usage_and_no_arguments_are_a_usage_error(
        script: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    summary = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8"))).splitlines()[0]
    shown = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True,
                           timeout=60, check=False)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"usage: {script.name}") and summary in shown.stdout
    # in this process, whose imports (sklearn, torch) are loaded once: a second start per script
    # would double the test's time
    monkeypatch.setattr(sys, "argv", [str(script)])
    with pytest.raises(SystemExit) as refused:
        runpy.run_path(str(script), run_name="__main__")
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: {script.name}") and "error:" in err
