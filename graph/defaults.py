"""The default components, built from settings on first use (so building a graph loads nothing).

The clarifier and the local chat models share one loaded model: `load_model` caches it per
process, keyed by (base model, adapter, dtype, device).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Generic, TypeVar

from langchain_core.runnables.config import run_in_executor

from askbetter.clarifier.types import Clarifier, Decision, Document, Message
from askbetter.nodes.chat_model import LocalChatModel
from askbetter.nodes.awaiting import acall
from askbetter.retrieval.types import Passage, Retriever
from askbetter.settings import Settings

T = TypeVar("T")

# new tokens for a rewrite: one question
REWRITE_MAX_NEW_TOKENS = 48


class _Lazy(Generic[T]):
    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._value: T | None = None
        self._lock = threading.Lock()

    def get(self) -> T:
        with self._lock:
            if self._value is None:
                self._value = self._build()
            return self._value

    async def aget(self) -> T:
        """`get`, in an executor thread until it is built: the first call builds (loads a model,
        opens a store), which may take seconds; later ones (every check and turn) return it here."""
        if self._value is not None:
            return self._value
        return await run_in_executor(None, self.get)


class LazyClarifier(_Lazy[Clarifier]):
    """`LocalClarifier.from_settings(settings)`, built on the first check."""

    def __init__(self, settings: Settings) -> None:
        def build() -> Clarifier:
            from askbetter.clarifier.local import LocalClarifier

            return LocalClarifier.from_settings(settings)

        super().__init__(build)

    def check(self, messages: list[Message], documents: list[Document] | None = None) -> Decision:
        return self.get().check(messages, documents)

    def question(self, messages: list[Message], documents: list[Document] | None = None) -> str:
        """`LocalClarifier.question`: what a run's lower `threshold` asks with (`run_check`)."""
        return self.get().question(messages, documents)  # type: ignore[attr-defined]

    async def acheck(self, messages: list[Message], documents: list[Document] | None = None) -> Decision:
        """`LocalClarifier.acheck`: a cancelled async run halts its question's generation."""
        return await acall(await self.aget(), "check", messages, documents)

    async def aquestion(self, messages: list[Message], documents: list[Document] | None = None) -> str:
        """`LocalClarifier.aquestion`, as `question`."""
        return await acall(await self.aget(), "question", messages, documents)


class LazyRetriever(_Lazy[Retriever]):
    """`ChromaRetriever.from_settings(settings)` (the configured Chroma), opened on the first search."""

    def __init__(self, settings: Settings) -> None:
        def build() -> Retriever:
            from askbetter.retrieval.store import ChromaRetriever

            return ChromaRetriever.from_settings(settings)

        super().__init__(build)

    def search(self, query: str, k: int = 4) -> list[Passage]:
        return self.get().search(query, k)


def local_chat_model(settings: Settings, max_new_tokens: int | None = None) -> LocalChatModel:
    """The clarifier's base model as a chat model, or `settings.answer_model` (no adapter) when set.

    `max_new_tokens` None: `settings.max_answer_tokens`."""
    if settings.answer_model:
        settings = replace(settings, base_model=settings.answer_model, adapter="none")
    return LocalChatModel(settings=settings, max_new_tokens=max_new_tokens)
