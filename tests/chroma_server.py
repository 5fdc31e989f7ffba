"""A real `chroma run` server for tests: `start_chroma_server`, and the `chroma_server` fixture
(registered in `tests/unit/conftest.py`); `free_port` for any server a test starts."""

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from askbetter.retrieval import RetrievalError, make_client
from askbetter.settings import Settings


def start_chroma_server(settings: Settings) -> subprocess.Popen:
    """`chroma run` on `settings.chroma_path` and `settings.chroma_port`, once it answers."""
    command = [str(Path(sys.executable).parent / "chroma"), "run", "--path", str(settings.chroma_path),
               "--port", str(settings.chroma_port)]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            make_client(settings)
            return server
        except RetrievalError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                raise
            time.sleep(0.1)


def free_port() -> int:
    """A local TCP port no one listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def chroma_server(tmp_path):
    """(settings reaching a fresh `chroma run` server on a free port, the server's process)."""
    settings = Settings(chroma_host="127.0.0.1", chroma_port=free_port(), chroma_path=tmp_path / "served",
                        collection="served")
    server = start_chroma_server(settings)
    yield settings, server
    server.kill()
    server.wait()
