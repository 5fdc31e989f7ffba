"""`langgraph dev` serving the graph that `langgraph.json` names, over the real models and a real
Chroma store of the bundled corpus, checked through `langgraph_sdk` by `scripts/serve_check.py`'s
checks (docs/serving-with-langgraph.md): one server for the module."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from chroma_server import free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "serve_check.py"
spec = importlib.util.spec_from_file_location("serve_check", SCRIPT)
serve_check = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = serve_check  # its dataclass looks its module up there (the annotations are strings)
spec.loader.exec_module(serve_check)

START_TIMEOUT = 120  # seconds for `/ok` to answer (2 to 3.5 s on an idle machine)
TIMEOUT = 600  # seconds: a first turn loads the models; a hang fails instead of waiting for ever


def wait_until_up(url: str, server: subprocess.Popen, log: Path) -> None:
    """Return once the server answers `/ok`; raise with its log if it stops or takes too long."""
    deadline = time.monotonic() + START_TIMEOUT
    while server.poll() is None and time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    state = f"exited with {server.returncode}" if server.poll() is not None else f"not up in {START_TIMEOUT} s"
    raise RuntimeError(f"langgraph dev {state}; its log:\n{log.read_text()[-5000:]}")


def stop(server: subprocess.Popen) -> None:
    """Stop the server's process group: SIGTERM, and SIGKILL if the server is still there 30 s on."""
    try:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    except ProcessLookupError:  # it had stopped already
        pass
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
    server.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """(the URL of `langgraph dev` serving the repository's graph over a store of the bundled corpus,
    its log). It runs in a folder of links to the repository's files, so that the `.langgraph_api/`
    it writes stays out of the repository, and is stopped with its process group."""
    askbetter = Path(sys.executable).with_name("askbetter")
    # offline: no model hub, no CLI analytics, no check for a newer langgraph-api
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGGRAPH_NO_VERSION_CHECK": "1",
           "ASKBETTER_CHROMA_PATH": str(tmp_path_factory.mktemp("chroma"))}
    ingested = subprocess.run([str(askbetter), "ingest", str(ROOT / "askbetter" / "corpus")], env=env,
                              capture_output=True, text=True, timeout=TIMEOUT)
    assert ingested.returncode == 0, ingested.stderr[-2000:]

    workdir = tmp_path_factory.mktemp("served")
    for entry in ROOT.iterdir():
        if not entry.name.startswith("."):
            (workdir / entry.name).symlink_to(entry)
    log, port = workdir / "langgraph-dev.log", free_port()
    command = [str(askbetter.with_name("langgraph")), "dev", "--no-browser", "--no-reload", "--port", str(port)]
    with log.open("w") as out:
        server = subprocess.Popen(command, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_up(url, server, log)
        yield url, log
    finally:
        stop(server)


@pytest.mark.parametrize("check", list(serve_check.CHECKS))
def test_the_served_graph_passes_the_check(server: tuple[str, Path], check: str) -> None:
    # each check prints what it saw ("ok" or "FAIL", its name, the detail): pytest shows it on failure
    url, log = server
    passed = asyncio.run(asyncio.wait_for(serve_check.run_checks(url, [check]), TIMEOUT))
    assert passed, f"the check {check} failed (its line above); the server's log:\n{log.read_text()[-3000:]}"
