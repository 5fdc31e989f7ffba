"""Ctrl-C held off while a step that must not stop halfway runs: files that move in together
(`askbetter.text.write_together`: `data build`'s three splits, `eval`'s predictions and report,
or its report and table with `--baselines`, `calibrate`'s threshold and predictions) and the undo
of a stopped turn (`askbetter.graph.trace.arestore_thread`).

Nothing here imports the rest of the package, so any module may import it.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any

# a SIGINT handler as `signal.signal` takes it: a function, `SIG_DFL` or `SIG_IGN`
_Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers


@dataclass
class _Hold:
    """The holds open (several may overlap) and what they hold."""

    handler: _Handler  # the SIGINT handler installed when the first began, put back when the last ends
    depth: int = 0  # how many are open
    signals: int = 0  # the SIGINTs that came meanwhile

    def count(self, signum: int, frame: FrameType | None) -> None:
        self.signals += 1


_hold: _Hold | None = None  # while any hold is open


@contextmanager
def ctrl_c_held(done: str | None = None) -> Iterator[None]:
    """Hold off a Ctrl-C (SIGINT) that comes while the block runs, whatever handler is installed,
    then put that handler back and, once the block has ended, deliver it there as if it came then:
    Python's default handler raises KeyboardInterrupt (saying `done` when given: what the block
    finished, which `askbetter` prints), `asyncio.run`'s cancels its main task at a first Ctrl-C
    and raises KeyboardInterrupt at the next, `SIG_IGN` drops it. A block that raises drops it:
    its error goes up in its place.

    Holds may nest or overlap, as the undos of turns that one Ctrl-C stopped together do in one
    event loop: the first to begin takes the handler, the last to end puts it back and delivers
    what came meanwhile (with its own `done`).

    Only in the main thread, where Python runs signal handlers (elsewhere the block runs as it is),
    and only a handler set from Python (`signal.getsignal` gives None for one set otherwise, which
    could not be put back). An event loop's own handler (`loop.add_signal_handler`, as aiohttp's
    `run_app` sets) is not held: the loop reads the signal from its wakeup fd, past any Python
    handler. A kill (SIGTERM, SIGKILL) is not held."""
    global _hold
    installed = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or installed is None:
        yield
        return
    if _hold is None:
        _hold = _Hold(installed)
        signal.signal(signal.SIGINT, _hold.count)
    hold = _hold
    hold.depth += 1
    try:
        yield
    finally:
        hold.depth -= 1
        if not hold.depth:
            _hold = None
            signal.signal(signal.SIGINT, hold.handler)
    if not hold.depth:
        _deliver(hold, done)


def _deliver(hold: _Hold, done: str | None) -> None:
    """Each SIGINT `hold` held, to the handler now back in place (`done`: see `ctrl_c_held`)."""
    if hold.signals and done is not None and hold.handler is signal.default_int_handler:
        raise KeyboardInterrupt(done)
    for _ in range(hold.signals):  # Python runs the handler before raise_signal returns
        signal.raise_signal(signal.SIGINT)
