"""The exception of `askbetter.retrieval`: each message says what went wrong and what to do."""

from __future__ import annotations


class RetrievalError(RuntimeError):
    """A retrieval set-up or storage problem the user can fix (missing package, server down, ...)."""
