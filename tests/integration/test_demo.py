"""`askbetter demo` as a user runs it: a subprocess over the real models."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_demo_prints_the_scripted_conversation():
    askbetter = Path(sys.executable).with_name("askbetter")
    proc = subprocess.run(
        [str(askbetter), "demo"], capture_output=True, text=True, timeout=900,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},  # float32 (tests/conftest.py)
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "30/30 files ingested" in out
    turn1, turn2 = out.split("== Turn 2")
    assert "user: How do I turn on sync?" in turn1 and "pre_check   score " in turn1
    if "askbetter asks (" in turn1:  # asked: the scripted reply follows, then the answer
        assert "user: Nimbus Desktop" in turn1 and 'got the reply "Nimbus Desktop"' in turn1
    else:
        assert "The clarifier did not ask" in turn1
    assert "\nSources:\n[1] " in turn1 and "nimbus-desktop-sync.md" in turn1
    assert "user: How much can I spend per attendee on a client dinner?" in turn2
    assert "\nSources:\n[1] Expense policy (expense-policy.md)" in turn2
    assert "== Done in " in turn2
