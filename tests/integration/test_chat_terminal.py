"""`askbetter chat` in a terminal (a pseudo-terminal, pexpect) over the real models and a real
Chroma store: Ctrl-C while the answer streams stops that turn and the chat goes on; Ctrl-C at
the prompt leaves it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

pytestmark = pytest.mark.slow


def _has_pseudo_terminals() -> bool:
    try:
        ends = os.openpty()
    except OSError:
        return False
    for end in ends:
        os.close(end)
    return True


if not _has_pseudo_terminals():  # a container without /dev/pts: a machine's limit, not askbetter's
    pytest.skip("no pseudo-terminals here", allow_module_level=True)

TIMEOUT = 600  # seconds: a first turn loads the models; a hang fails instead of waiting for ever


def test_ctrl_c_stops_the_streaming_answer_and_the_chat_goes_on(tmp_path: Path):
    askbetter = Path(sys.executable).with_name("askbetter")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ASKBETTER_CHROMA_PATH": str(tmp_path / "chroma")}
    corpus = Path(__file__).parents[2] / "askbetter" / "corpus"
    ingested = subprocess.run([str(askbetter), "ingest", str(corpus)], env=env, capture_output=True, text=True,
                              timeout=TIMEOUT)
    assert ingested.returncode == 0, ingested.stderr[-2000:]

    chat = pexpect.spawn(str(askbetter), ["chat", "--no-pre-check", "--no-post-check"], env=env,
                         encoding="utf-8", timeout=TIMEOUT)
    chat.expect("Ctrl-C stops a turn, /quit leaves")
    chat.expect("you> ")
    chat.sendline("how do I turn on sync in Nimbus Desktop")
    chat.expect("askbetter: ")  # the answer has begun to stream
    chat.sendintr()
    chat.expect(r"\(stopped\)\r\n")
    stopped_turn = chat.before
    chat.expect("you> ")
    chat.sendline("where can I park at the Boston office")
    chat.expect("Sources:")
    chat.expect("you> ")
    sources = chat.before
    chat.sendintr()
    chat.expect(pexpect.EOF)
    chat.close()
    assert "Sources:" not in stopped_turn  # the stopped answer never finished
    assert "\n[1] " in sources  # the next turn answered in full
    assert chat.exitstatus == 130 and "interrupted" in chat.before
