"""Many graph workers on one Postgres (the design's scaling path): a thread paused on a clarification
question by one worker is resumed by another worker's graph, through LangGraph's `PostgresSaver` in
another process and its `AsyncPostgresSaver` under `astream`. A real PostgreSQL server, pgserver's
binaries, in a temporary folder."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.types import Command

from askbetter.graph.testing import ScriptedClarifier
from worker_graph import ANSWER, ASKED, CONTEXT, QUESTION, graph_on

# the test extra installs pgserver where it has a wheel (pyproject.toml): CPython <= 3.12, not Linux on ARM
pgserver = pytest.importorskip("pgserver", reason="pgserver (the test extra's PostgreSQL) has no wheel here")

TIMEOUT = 60  # seconds: a lock between workers fails the test instead of hanging it
DATABASES = itertools.count()


@pytest.fixture(scope="session")
def postgres() -> Iterator[str]:
    """The URI of a PostgreSQL server listening on a socket in a temporary folder; stopped and
    removed after the session. Postgres refuses to run as root, so as root its commands run as
    `nobody` (pgserver's own server would add a system user and open every folder above its data)."""
    folder = Path(tempfile.mkdtemp(prefix="askbetter-pg-"))
    user = "nobody" if os.geteuid() == 0 else None
    if user:
        shutil.chown(folder, user)
    data = folder / "data"
    try:
        # a socket in the folder, no TCP port; no fsync, and stopped without a checkpoint: the data goes
        pgserver.initdb(["--auth=trust", "--encoding=utf8", "--no-sync", "-U", "postgres"], pgdata=data, user=user)
        pgserver.pg_ctl(["-w", "-o", f"-h '' -k {folder} -F", "-l", str(folder / "log"), "start"],
                        pgdata=data, user=user, timeout=TIMEOUT)
    except Exception as exc:  # the machine, not askbetter: say why (e.g. `nobody` cannot reach the venv)
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(f"PostgreSQL did not start here: {exc}")
    yield f"postgresql://postgres@/postgres?host={folder}"
    pgserver.pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=data, user=user, timeout=TIMEOUT)
    shutil.rmtree(folder)


def new_database(server: str, name: str) -> str:
    """The URI of a new, empty database `name` on `server`, with LangGraph's checkpoint tables."""
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    uri = server.replace("/postgres?", f"/{name}?")
    with PostgresSaver.from_conn_string(uri) as saver:
        saver.setup()
    return uri


@pytest.fixture
def database(postgres: str) -> str:
    """A database of this test's own, so that no test sees another's threads."""
    return new_database(postgres, f"test{next(DATABASES)}")


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


# the second worker: a fresh process, graph and connection; it resumes and prints the thread
RESUME = """
import json, sys
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.types import Command
from askbetter.graph.testing import ScriptedClarifier
sys.path.insert(0, sys.argv[1])
from worker_graph import ASKED, CONTEXT, graph_on

with PostgresSaver.from_conn_string(sys.argv[2]) as saver:
    graph = graph_on(saver, ScriptedClarifier(pre=[None], post=[None]))
    out = graph.invoke(Command(resume=ASKED[2]), {"configurable": {"thread_id": "t1"}}, context=CONTEXT)
print(json.dumps([[type(m).__name__, m.text] for m in out["messages"]]))
"""


def resume_in_another_process(uri: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", RESUME, str(Path(__file__).parents[1]), uri],
                          capture_output=True, text=True, timeout=120)


def test_a_thread_paused_by_one_worker_is_resumed_by_another_workers_graph_in_another_process(database) -> None:
    with PostgresSaver.from_conn_string(database) as saver:
        first = graph_on(saver, ScriptedClarifier(pre=[QUESTION], post=[]))
        out = first.invoke({"messages": [("user", ASKED[0])]}, thread("t1"), context=CONTEXT)
    assert out["__interrupt__"][0].value["question"] == QUESTION  # this worker is gone; the database holds the thread

    done = resume_in_another_process(database)
    assert done.returncode == 0, done.stderr
    messages = json.loads(done.stdout.strip().splitlines()[-1])
    assert messages[:3] == [["HumanMessage", ASKED[0]], ["AIMessage", QUESTION], ["HumanMessage", ASKED[2]]]
    assert messages[3][0] == "AIMessage" and messages[3][1].startswith(ANSWER)

    with PostgresSaver.from_conn_string(database) as saver:  # the first worker sees the resumed thread
        state = graph_on(saver, ScriptedClarifier()).get_state(thread("t1"))
    assert state.next == () and [m.text for m in state.values["messages"]] == [*ASKED, messages[3][1]]
    assert state.values["asked_questions"] == [QUESTION] and state.values["awaiting_reply"] is False


def test_a_worker_on_another_database_does_not_see_the_thread(postgres, database) -> None:
    """The control for the test above: the thread is in the database, not in the worker's process."""
    with PostgresSaver.from_conn_string(database) as saver:
        graph_on(saver, ScriptedClarifier(pre=[QUESTION])).invoke(
            {"messages": [("user", ASKED[0])]}, thread("t1"), context=CONTEXT)

    done = resume_in_another_process(new_database(postgres, "elsewhere"))
    assert done.returncode != 0 and "none is waiting" in done.stderr, done.stderr  # nothing to resume there
    with PostgresSaver.from_conn_string(database) as saver:
        assert graph_on(saver, ScriptedClarifier()).get_state(thread("t1")).next == ("await_reply",)


async def astream_turn(graph, turn: dict[str, Any] | Command, name: str) -> list[dict[str, Any]]:
    """A turn through `astream` (as a server runs it): its updates."""
    return [update async for update in graph.astream(turn, thread(name), context=CONTEXT, stream_mode="updates")]


def test_two_async_workers_take_turns_on_each_others_threads(database) -> None:
    """Two workers, each its own graph and `AsyncPostgresSaver` connection, pause a thread each at
    once; then each resumes the other's thread, at once."""
    answers = {"a": ANSWER, "b": "Choose Preferences, then Sync [1]."}

    async def workers() -> tuple[list[list[dict[str, Any]]], dict[str, Any]]:
        async with (AsyncPostgresSaver.from_conn_string(database) as saver_a,
                    AsyncPostgresSaver.from_conn_string(database) as saver_b):
            a = graph_on(saver_a, ScriptedClarifier(pre=[QUESTION, None], post=[None]), answers["a"])
            b = graph_on(saver_b, ScriptedClarifier(pre=[QUESTION, None], post=[None]), answers["b"])
            paused = await asyncio.gather(astream_turn(a, {"messages": [("user", ASKED[0])]}, "on-a"),
                                          astream_turn(b, {"messages": [("user", ASKED[0])]}, "on-b"))
            await asyncio.gather(astream_turn(b, Command(resume=ASKED[2]), "on-a"),
                                 astream_turn(a, Command(resume=ASKED[2]), "on-b"))
            states = {name: await a.aget_state(thread(name)) for name in ("on-a", "on-b")}
        return paused, states

    paused, states = asyncio.run(asyncio.wait_for(workers(), TIMEOUT))
    for updates in paused:
        assert updates[-1]["__interrupt__"][0].value["question"] == QUESTION
    texts = {name: [m.text for m in state.values["messages"]] for name, state in states.items()}
    assert texts["on-a"][:3] == ASKED and texts["on-a"][3].startswith(answers["b"])  # b resumed a's thread
    assert texts["on-b"][:3] == ASKED and texts["on-b"][3].startswith(answers["a"])
    assert all(len(t) == 4 for t in texts.values()) and all(s.next == () for s in states.values())
