"""Fakes for testing code built on the graph without models or Chroma.

    graph = create_clarifying_rag(
        clarifier=ScriptedClarifier(pre=["Which product do you mean?", None], post=[None]),
        retriever=StaticRetriever([{"id": "d1", "title": "Sync", "text": "...", "score": 0.9}]),
        answer_model=GenericFakeChatModel(messages=iter(["Open Preferences [1]."])),
        rewriter=lambda messages: messages[-1].text,
    )
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from askbetter.clarifier.types import Decision, Document, Message, stage_of
from askbetter.retrieval.types import Passage

ASK_SCORE = 0.9
CLEAR_SCORE = 0.1


class ScriptedClarifier:
    """Returns scripted decisions in order, one queue per stage, and records every call.

    An item is a question (ask it, score `ASK_SCORE`), None (clear, score `CLEAR_SCORE`), or a
    full `Decision`. The stage is "post" when documents are given, as for a real clarifier.
    """

    def __init__(self, pre: Iterable[str | None | Decision] = (), post: Iterable[str | None | Decision] = ()) -> None:
        self.queues: dict[str, list[str | None | Decision]] = {"pre": list(pre), "post": list(post)}
        self.calls: list[tuple[str, list[Message], list[Document] | None]] = []

    def check(self, messages: list[Message], documents: list[Document] | None = None) -> Decision:
        stage = stage_of(documents)
        self.calls.append((stage, list(messages), documents))
        if not messages or messages[-1]["role"] != "user":  # as `LocalClarifier`'s prompt refuses it
            raise ValueError("the conversation must end with a non-empty user turn")
        if not self.queues[stage]:
            raise AssertionError(f"no scripted {stage} decision left (call {len(self.calls)})")
        item = self.queues[stage].pop(0)
        if isinstance(item, Decision):
            return item
        if item is None:
            return Decision(needs_clarification=False, score=CLEAR_SCORE, question=None, stage=stage)
        return Decision(needs_clarification=True, score=ASK_SCORE, question=item, stage=stage)


class StaticRetriever:
    """Returns the same passages (the first k) for every query, and records the queries."""

    def __init__(self, passages: Sequence[Passage]) -> None:
        self.passages = list(passages)
        self.queries: list[str] = []

    def search(self, query: str, k: int = 4) -> list[Passage]:
        self.queries.append(query)
        return [dict(p) for p in self.passages[:k]]  # type: ignore[misc]
