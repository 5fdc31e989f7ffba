"""askbetter.interrupts: a Ctrl-C (a real SIGINT, as a terminal sends it) held off while a block
runs, then delivered to the handler that was installed, which is put back."""

from __future__ import annotations

import asyncio
import os
import signal
import threading

import pytest

from askbetter.interrupts import ctrl_c_held


def ctrl_c() -> None:
    os.kill(os.getpid(), signal.SIGINT)  # Python runs the handler before os.kill returns


def test_a_ctrl_c_under_pythons_handler_raises_once_the_block_has_ended_saying_what_it_did():
    done = []
    with pytest.raises(KeyboardInterrupt, match="all moved in"):
        with ctrl_c_held("all moved in"):
            ctrl_c()
            done.append("the rest of the block")
    assert done == ["the rest of the block"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.fixture
def seen():
    """What happened, in order, a SIGINT handler's call among it (installed for the test)."""
    seen: list[str] = []
    signal.signal(signal.SIGINT, lambda signum, frame: seen.append("handler"))
    yield seen
    signal.signal(signal.SIGINT, signal.default_int_handler)


def test_a_ctrl_c_goes_to_the_handler_installed_after_the_block_and_that_handler_is_put_back(seen):
    handler = signal.getsignal(signal.SIGINT)
    with ctrl_c_held("unused: the handler is not Python's default"):
        ctrl_c()
        ctrl_c()
        seen.append("block ended")
    assert seen == ["block ended", "handler", "handler"]
    assert signal.getsignal(signal.SIGINT) is handler


def test_a_ctrl_c_under_sig_ign_stays_ignored():
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with ctrl_c_held("unused"):
            ctrl_c()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def test_a_block_that_fails_raises_its_error_not_the_ctrl_c():
    with pytest.raises(OSError, match="disk full"):
        with ctrl_c_held("unused"):
            ctrl_c()
            raise OSError("disk full")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_holds_that_overlap_in_one_event_loop_put_the_handler_back_once_the_last_has_ended(seen):
    """Two coroutines hold in turn and end in the order they began (not nested): the Ctrl-C
    waits for the second, and the handler installed before either is back."""
    handler = signal.getsignal(signal.SIGINT)

    async def hold(name: str, entered: asyncio.Event, release: asyncio.Event) -> None:
        with ctrl_c_held():
            entered.set()
            await release.wait()
            seen.append(f"{name} ended")

    async def main() -> None:
        a_in, b_in, a_go, b_go = (asyncio.Event() for _ in range(4))
        a = asyncio.create_task(hold("a", a_in, a_go))
        b = asyncio.create_task(hold("b", b_in, b_go))
        await a_in.wait()
        await b_in.wait()
        ctrl_c()
        a_go.set()
        await a
        b_go.set()
        await b

    asyncio.run(main())
    assert seen == ["a ended", "b ended", "handler"]
    assert signal.getsignal(signal.SIGINT) is handler


def test_outside_the_main_thread_the_block_runs_as_it_is():
    inside: list[object] = []

    def run() -> None:
        with ctrl_c_held("unused"):
            inside.append(signal.getsignal(signal.SIGINT))

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    assert inside == [signal.default_int_handler]
