"""Set-up for the whole test suite."""

import os
import signal


def pytest_configure() -> None:
    """Real models run in float32 unless ASKBETTER_DTYPE says otherwise: the real-model tests read
    generated words and recorded scores, and `auto` picks bf16 on a CPU with AVX-512 bf16, where the
    demo's question and rewrite are worded otherwise (README, Quickstart). Subprocesses inherit it.

    Ctrl-C as a terminal's foreground job gets it, however pytest was started. A job a
    non-interactive shell runs in the background (`make test &`, `nohup ...`) starts with SIGINT
    ignored, and Python then keeps ignoring it: the tests that press Ctrl-C (in this process, or in
    an `askbetter chat` it spawns, which inherits the disposition) saw nothing happen."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    os.environ.setdefault("ASKBETTER_DTYPE", "float32")
