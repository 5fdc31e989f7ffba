"""One thread for the models' work: loading, forward passes, generation, embeddings.

PyTorch's CPU kernels split each operation over a team of OpenMP (libgomp) threads, and every thread
that calls into torch gets a team of its own. Once two teams exist (say the main thread's, which
loaded the models, and the LangGraph worker thread's that runs a node, as under
`stream_mode="messages"`), they hold more threads than the machine has cores, and libgomp stops
letting idle workers spin between operations: each of generation's many small matrix products then
waits for its workers to wake. On a 2-core machine a turn whose check asks a 20-token question took
3.0 s instead of 1.3 s that way (`scripts/bench_turn.py float32@caller float32`). So the models'
work is queued to one long-lived thread, and a process that runs its turns from many threads still
has one team.

Only the work handed over here runs there. A thread that does torch work of its own (`askbetter
train`'s loop) keeps the models' work it hands over in itself with `in_this_thread()` (train's final
dev scoring, which would otherwise run beside the training thread's team). A forked child starts a
thread of its own. Nothing here imports the rest of the package or torch.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import os
import queue
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

_jobs: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = queue.SimpleQueue()
_start_lock = threading.Lock()
_running = threading.Lock()  # held by the models' thread while it runs a job
_thread: threading.Thread | None = None
_QUIET_WAIT_S = 1.0  # how long exit waits for the models' thread before it says so
_here = threading.local()  # .active: this thread runs what it submits


def submit(fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> Future[R]:
    """Queue `fn(*args, **kwargs)` to the models' thread; its Future. Called on that thread, `fn`
    runs at once (a queued job would wait for the caller, which waits for it), as it does in a
    thread inside `in_this_thread()`."""
    future: Future[R] = Future()
    if threading.current_thread() is _thread or getattr(_here, "active", False):
        _run(future, fn, args, kwargs)
    else:
        _ensure_started()
        _jobs.put((future, fn, args, kwargs))
    return future


async def arun(fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
    """`fn(*args, **kwargs)` run on the models' thread (`submit`), awaited. A cancelled caller
    stops waiting at once: a job still queued is dropped, one already running runs on (a
    generation halts at its next token when its caller sets the event of its `Halt`)."""
    return await asyncio.wrap_future(submit(fn, *args, **kwargs))


@contextmanager
def in_this_thread() -> Iterator[None]:
    """While the block runs, the models' work this thread submits runs in it: for a thread that
    computes with torch itself, which would otherwise make a second team."""
    before = getattr(_here, "active", False)
    _here.active = True
    try:
        yield
    finally:
        _here.active = before


def on_torch_thread(fn: Callable[P, R]) -> Callable[P, R]:
    """Decorate `fn` so that every call runs on the models' thread and waits for its result."""

    @functools.wraps(fn)
    def run_there(*args: P.args, **kwargs: P.kwargs) -> R:
        return submit(fn, *args, **kwargs).result()

    return run_there


def _ensure_started() -> None:
    global _thread
    with _start_lock:
        if _thread is None:
            # a daemon: it does not keep the process alive; at exit only the job it runs is waited
            # for (`_let_the_running_job_finish`), a generation until its caller halts it
            _thread = threading.Thread(target=_serve, name="askbetter-torch", daemon=True)
            _thread.start()


def _start_afresh_in_child() -> None:
    """In a forked child (a server that loads the models, then forks its workers): a fork copies
    only the forking thread, so the parent's models' thread, its queued jobs and a held start lock
    are left behind, and the child's first job starts a thread of its own."""
    global _jobs, _start_lock, _running, _thread
    _jobs = queue.SimpleQueue()
    _start_lock = threading.Lock()
    _running = threading.Lock()
    _thread = None


if hasattr(os, "register_at_fork"):  # Unix
    os.register_at_fork(after_in_child=_start_afresh_in_child)


def _serve() -> None:
    while True:
        job = _jobs.get()
        with _running:
            _run(*job)


@atexit.register
def _let_the_running_job_finish() -> None:
    """At exit, wait for the job the models' thread runs (a halted generation stops at its next
    token), and start no other: Python 3.11 ends a daemon thread that takes the GIL back during
    finalization with pthread_exit, which aborts the process ("terminate called without an active
    exception") when the thread is inside torch (Ctrl-C while `askbetter ingest` embeds a batch).
    A wait longer than `_QUIET_WAIT_S` is said on stderr (a model load or a download may run for
    minutes, and the process looked hung). A second Ctrl-C exits at once."""
    with contextlib.suppress(KeyboardInterrupt):
        if not _running.acquire(timeout=_QUIET_WAIT_S):
            print("askbetter: waiting for the models' thread to finish its job before exiting "
                  "(Ctrl-C again to exit at once)", file=sys.stderr, flush=True)
            _running.acquire()


def _run(future: Future[Any], fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    if not future.set_running_or_notify_cancel():
        return
    try:
        future.set_result(fn(*args, **kwargs))
    except BaseException as exc:  # the caller's `result()` raises it
        future.set_exception(exc)
