"""A durable checkpointer: a thread paused on a clarification question in one process is resumed
by another graph in another process (as another worker would), through LangGraph's SqliteSaver."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver

from askbetter.graph.testing import ScriptedClarifier
from worker_graph import ANSWER, CONTEXT, QUESTION, graph_on


def sqlite_graph(db: str, clarifier: ScriptedClarifier):
    """A worker's graph over fakes whose checkpoints live in the SQLite file `db`."""
    return graph_on(SqliteSaver(sqlite3.connect(db, check_same_thread=False)), clarifier)


# the second worker: a fresh process, graph and connection; it resumes and prints the thread
RESUME = """
import json, sys
from langgraph.types import Command
from askbetter.graph.testing import ScriptedClarifier
sys.path[:0] = sys.argv[1:3]
from test_graph_sqlite import sqlite_graph
from worker_graph import CONTEXT

graph = sqlite_graph(sys.argv[3], ScriptedClarifier(pre=[None], post=[None]))
out = graph.invoke(Command(resume="Nimbus Desktop"), {"configurable": {"thread_id": "t1"}}, context=CONTEXT)
print(json.dumps([[type(m).__name__, m.text] for m in out["messages"]]))
"""


def test_a_thread_paused_in_one_process_is_resumed_by_another_graph_in_another(tmp_path) -> None:
    db = str(tmp_path / "threads.sqlite")
    config = {"configurable": {"thread_id": "t1"}}
    first = sqlite_graph(db, ScriptedClarifier(pre=[QUESTION], post=[]))
    out = first.invoke({"messages": [("user", "How do I turn on sync?")]}, config, context=CONTEXT)
    assert out["__interrupt__"][0].value["question"] == QUESTION
    first.checkpointer.conn.close()  # this worker is gone; only the file holds the thread

    here = Path(__file__)
    done = subprocess.run([sys.executable, "-c", RESUME, str(here.parent), str(here.parents[1]), db],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    messages = json.loads(done.stdout.strip().splitlines()[-1])
    assert messages[:3] == [["HumanMessage", "How do I turn on sync?"], ["AIMessage", QUESTION],
                            ["HumanMessage", "Nimbus Desktop"]]
    assert messages[3][0] == "AIMessage" and messages[3][1].startswith(ANSWER)

    again = sqlite_graph(db, ScriptedClarifier(pre=[], post=[]))  # the first process sees the resumed thread
    state = again.get_state(config)
    assert state.next == () and len(state.values["messages"]) == 4
    assert state.values["asked_questions"] == [QUESTION] and state.values["awaiting_reply"] is False
    again.checkpointer.conn.close()
