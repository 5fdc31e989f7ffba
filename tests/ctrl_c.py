"""A Ctrl-C while files that move in together are written, or between their renames
(`askbetter.text.write_together`)."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

import pytest


def ctrl_c_once_moved_in(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Send SIGINT, as a Ctrl-C would, once the file called `name` has been renamed into place:
    Python's handler raises KeyboardInterrupt before the next rename unless the Ctrl-C is held."""
    replace = Path.replace

    def replace_then_ctrl_c(self: Path, target: str | Path) -> Path:
        moved = replace(self, target)
        if Path(target).name == name:
            signal.raise_signal(signal.SIGINT)
        return moved

    monkeypatch.setattr(Path, "replace", replace_then_ctrl_c)


def ctrl_c_in(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> None:
    """Make the function `owner.name` raise KeyboardInterrupt, as a Ctrl-C while it runs."""

    def stop(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(owner, name, stop)


def second_run_stopped(run: Callable[[int], object], stop: Callable[[], None]) -> None:
    """`run(2)`, the last run whose outputs a stop must leave whole; then `stop()` arms a Ctrl-C and
    `run(4)` must end in its KeyboardInterrupt."""
    run(2)
    stop()
    with pytest.raises(KeyboardInterrupt):
        run(4)
