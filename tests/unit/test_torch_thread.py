"""The models' thread: every model call runs there, whichever thread makes it (one OpenMP team)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from langchain_core.messages import HumanMessage

from askbetter import torch_thread
from askbetter.clarifier.assets import LoadedModel
from askbetter.clarifier.local import LocalClarifier
from askbetter.nodes.chat_model import LocalChatModel
from tiny_model import tiny_llama, tiny_tokenizer

TURN = [{"role": "user", "content": "how do i turn on sync"}]


def test_jobs_from_any_thread_run_on_one_thread_and_return_or_raise_there() -> None:
    with ThreadPoolExecutor(3) as callers:
        names = set(callers.map(lambda _: torch_thread.submit(lambda: threading.current_thread()).result(), range(6)))
    assert len(names) == 1 and names.pop().name == "askbetter-torch"
    with pytest.raises(ZeroDivisionError):
        torch_thread.submit(lambda: 1 / 0).result()


def test_a_job_that_waits_for_another_job_does_not_wait_for_ever() -> None:
    def outer() -> int:
        return torch_thread.submit(lambda: 41).result() + 1  # queued behind itself, it would hang

    assert torch_thread.submit(outer).result(timeout=10) == 42


def test_arun_awaits_the_job_on_the_models_thread_and_a_cancelled_one_drops_it_while_queued() -> None:
    assert asyncio.run(torch_thread.arun(threading.current_thread)).name == "askbetter-torch"
    release, ran = threading.Event(), []
    busy = torch_thread.submit(release.wait, 10)  # holds the thread: the next job stays queued

    async def cancel_a_queued_job() -> None:
        job = asyncio.create_task(torch_thread.arun(ran.append, 1))
        await asyncio.sleep(0.05)
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job

    asyncio.run(cancel_a_queued_job())
    release.set()
    busy.result()
    torch_thread.submit(lambda: None).result()  # queued after the cancelled job
    assert ran == []


def test_the_clarifier_and_the_chat_model_compute_on_the_models_thread_whichever_thread_calls() -> None:
    """A LangGraph node runs in a worker thread under `stream_mode="messages"`: its model work
    still runs on the models' thread."""
    model, tokenizer = tiny_llama(), tiny_tokenizer()
    loaded = LoadedModel(model=model, tokenizer=tokenizer)
    seen: list[str] = []
    model.register_forward_hook(lambda *_: seen.append(threading.current_thread().name))
    clarifier = LocalClarifier(loaded, max_question_tokens=3)
    chat = LocalChatModel(loaded=loaded, max_new_tokens=3)
    with ThreadPoolExecutor(1) as node:
        node.submit(clarifier.score, TURN).result()
        node.submit(clarifier.question, TURN).result()
        node.submit(lambda: [c.text for c in chat.stream([HumanMessage("how do i turn on sync")])]).result()
    clarifier.score(TURN)  # and from this thread
    assert len(seen) >= 4 and set(seen) == {"askbetter-torch"}


def test_the_embedding_model_encodes_on_the_models_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chroma's embedding function (retrieval) and evaluation call the model's `encode`."""
    import sentence_transformers

    from askbetter.retrieval import embeddings

    class Fake:
        def __init__(self, name: str, device: str) -> None: ...

        def encode(self, sentences: list[str], **kwargs: object) -> list[str]:
            return [threading.current_thread().name for _ in sentences]

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", Fake)
    model = embeddings._load("fake-model", "cpu")
    with ThreadPoolExecutor(1) as node:
        assert node.submit(model.encode, ["a", "b"]).result() == ["askbetter-torch"] * 2
    embeddings._load.__wrapped__.cache_clear()  # type: ignore[attr-defined]


def test_a_forked_child_runs_jobs_on_a_thread_of_its_own() -> None:
    """A fork copies only the forking thread (a server that loads the models, then forks its
    workers): the child's jobs must not wait for the parent's thread."""
    torch_thread.submit(lambda: None).result()  # the parent's thread is running
    pid = os.fork()
    if pid == 0:  # the child: exit 0 once a job has run, 1 if it waits in vain
        try:
            code = 0 if torch_thread.submit(lambda: 42).result(timeout=10) == 42 else 1
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_in_this_thread_keeps_the_models_work_in_the_calling_thread_for_the_block() -> None:
    """`askbetter train` scores dev in the thread that trained (one OpenMP team, not two)."""
    here = threading.current_thread()
    with torch_thread.in_this_thread():
        assert torch_thread.submit(threading.current_thread).result() is here
        with ThreadPoolExecutor(1) as other:  # other threads still hand their work over
            assert other.submit(lambda: torch_thread.submit(threading.current_thread).result()).result().name == "askbetter-torch"
    assert torch_thread.submit(threading.current_thread).result().name == "askbetter-torch"


def test_a_process_that_exits_while_the_models_thread_computes_waits_for_it_and_exits_cleanly() -> None:
    """Python 3.11 ends a daemon thread that takes the GIL back during finalization with
    pthread_exit, which aborts the process ("terminate called without an active exception") when
    that thread is inside torch: `askbetter ingest` stopped by Ctrl-C while a batch was embedded."""
    script = """
import sys, threading, time
import torch
from askbetter import torch_thread
started = threading.Event()
def compute():
    started.set()
    a = torch.ones(400, 400)
    end = time.monotonic() + 2
    while time.monotonic() < end:
        torch.mm(a, a)
    print("job done", flush=True)
torch_thread.submit(compute)
started.wait()
sys.exit(130)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, "terminate called" in done.stderr) == (130, "job done\n", False)


@pytest.mark.parametrize(("job_seconds", "said"), [(3.0, True), (0.0, False)])
def test_an_exit_that_waits_for_the_models_thread_says_so(job_seconds: float, said: bool) -> None:
    """A job that runs on (a model load, a download) held the exit with nothing on the screen: the
    process looked hung after its Ctrl-C."""
    script = f"""
import sys, threading, time
from askbetter import torch_thread
started = threading.Event()
def job():
    started.set()
    time.sleep({job_seconds})
    print("job done", flush=True)
torch_thread.submit(job)
started.wait()
if not {job_seconds}:
    time.sleep(0.5)
sys.exit(0)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "job done\n")
    assert ("waiting for the models' thread to finish its job" in done.stderr) is said
