"""The README's Python API example runs as written, with the real models over the bundled corpus."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

README = Path(__file__).resolve().parents[2] / "README.md"


def python_api_example() -> str:
    """The first python block under the README's "## Python API" heading."""
    section = README.read_text(encoding="utf-8").split("\n## Python API\n", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "no python block under ## Python API"
    return match.group(1)


def test_the_python_api_example_asks_resumes_and_answers(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("ASKBETTER_CHROMA_PATH", str(tmp_path / "chroma"))
    monkeypatch.delenv("ASKBETTER_CHROMA_HOST", raising=False)
    namespace: dict = {}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(python_api_example(), str(README), "exec"), namespace)  # noqa: S102
    question, answer = printed.getvalue().split("\n", 1)
    assert "'question': " in question and "'round': 1" in question, question
    assert "\n\nSources:\n[1] " in answer, answer
    assert namespace["graph"].get_state({"configurable": {"thread_id": "2"}}).values["messages"][-1].type == "ai"
