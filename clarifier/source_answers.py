"""TREC iKAT's follow-ups after retrieval, over grounded answers as passages (`post`).

A RAG conversation's follow-up comes after an assistant answer of a paragraph and over passages
on its topic (IBM's clear fixture: "and if it is about service?" after an answer on billing
complaints, over the utility's contact pages). CANARD's follow-ups over passages
(`source_followups`) have short answers before them, and TREC iKAT, whose answers are
paragraphs, has no passage text. But each iKAT response answers its question from the passages
the assessors' system retrieved, so it reads as such a passage. For each iKAT question whose
response is `grounded` (at least `source_rewrites.LONG_ANSWER_CHARS`, not itself a question),
the passages are that response and another topic's (of the same split, naming none of the words
the rewrite adds), in hashed order, and:

- **hard negative** (`-over-answers`, clear): when the history resolves the question
  (`source_rewrites.resolved_by_history`): the dialog settles it; the passages answer it.
- **clear** (`-over-answers`): when the rewrite adds nothing, the question needs no context.
- the same two, over its response and up to `TOPIC_ANSWERS_MAX` other responses on its topic
  that its history does not hold (`-over-topic-answers`): several on-topic passages, as a
  retriever returns for a follow-up (IBM's clear request), none of them a second reading.
- **underspecified** (`-other-dialog-over-answers`, clarify; `convert_unresolved`): for the
  resolved questions with a pronoun the rewrite replaces, the question after another dialog's
  history (`source_rewrites.other_dialog`, naming neither the referent nor a pronoun of its
  class), over the other topic's passage and a third topic's: neither the conversation nor the
  passages say what the pronoun means. (The own response would: it answers the question, so
  the question over it reads as settled by the passages, a hard negative of the issue's kind.)

Grouped by topic.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from askbetter.clarifier import source_rewrites
from askbetter.clarifier.source_common import (
    MAX_HISTORY_MESSAGES,
    Converted,
    document,
    make_example,
    rng_for,
    split_of,
    user,
)
from askbetter.clarifier.source_followups import other_passage
from askbetter.clarifier.source_referents import ordered
from askbetter.clarifier.source_rewrites import RewritePair
from askbetter.clarifier.types import Document, Message

FOLDERS = ("trec-ikat",)
SUFFIX = "-over-answers"
OTHER_DIALOG_SUFFIX = "-other-dialog" + SUFFIX
TOPIC_SUFFIX = "-over-topic-answers"
TOPIC_ANSWERS_MAX = 2
SAID_PREFIX_CHARS = 200  # a response's opening: enough to find it in a history, clipped or not


@dataclass(frozen=True)
class OverAnswers:
    """A question with its history, over its response and another topic's."""

    pair: RewritePair
    group: str
    base: str  # the example id before its suffix
    history: list[Message]
    resolved: bool  # by the history; else the question needs none
    other: Document  # another topic's response, naming none of the words the rewrite adds
    pool: list[tuple[str, Document]]  # the responses of its split, with their topic (`_pools`)


def convert(raw_dir: Path, seed: int = 13) -> Iterator[Converted]:
    """Yield (iKAT topic group, example): per question with a grounded response and a history,
    the question over its response and another topic's, clear when its history resolves it (a
    hard negative) or it needs none."""
    for q in over_answers(source_rewrites.rewrite_pairs(raw_dir), seed):
        kind = "hard-negative" if q.resolved else "clear"
        messages = [*q.history, user(q.pair.question)]
        docs = ordered([_passage(q.pair), q.other], seed, q.base)
        yield q.group, make_example(f"{q.base}{SUFFIX}", "trec-ikat", "post", messages, None,
                                    kind, docs)
        on_topic = topic_answers(q, seed)
        if on_topic:
            yield q.group, make_example(f"{q.base}{TOPIC_SUFFIX}", "trec-ikat", "post", messages,
                                        None, kind, on_topic)


def topic_answers(q: OverAnswers, seed: int) -> list[Document]:
    """`q`'s response and up to `TOPIC_ANSWERS_MAX` other responses on its topic that its history
    does not hold, in an order drawn from its id; empty when there is no such other response."""
    own = _passage(q.pair)
    said = " ".join(m["content"] for m in q.history)
    same = [d for g, d in q.pool if g == q.pair.group and d["id"] != own["id"]
            and d["text"][:SAID_PREFIX_CHARS] not in said]
    if not same:
        return []
    rng = rng_for(seed, "topic-answers", q.base)
    docs = [own, *rng.sample(same, min(TOPIC_ANSWERS_MAX, len(same)))]
    rng.shuffle(docs)
    return docs


def convert_unresolved(raw_dir: Path, seed: int = 13) -> Iterator[Converted]:
    """Yield (iKAT topic group, example): per resolved question of `over_answers` with a pronoun
    the rewrite replaces, the question after another dialog's history over the other topic's
    passage and a third's, to clarify (a separate converter, so that the build's balancing keeps
    every clear one)."""
    dialogs = [p for p in source_rewrites.rewrite_pairs(raw_dir)
               if p.dataset in source_rewrites.DIALOG_DATASETS]
    donors = source_rewrites.donor_histories(dialogs, seed)
    for q in over_answers(dialogs, seed):
        pronoun = source_rewrites.unresolved_pronoun(q.pair.question, q.pair.rewrite)
        if not q.resolved or pronoun is None:
            continue
        same_class, _ = source_rewrites.pronoun_class(pronoun)
        avoid = source_rewrites.added_words(q.pair.question, q.pair.rewrite) | same_class
        pool = [(g, d) for g, d in q.pool if d["id"] != q.other["id"]]
        third = other_passage(pool, q.pair.group, avoid, f"{q.base}{OTHER_DIALOG_SUFFIX}", seed)
        before = source_rewrites.other_dialog(donors, q.group, q.base, avoid, seed)
        if third is not None and before is not None:
            yield q.group, make_example(
                f"{q.base}{OTHER_DIALOG_SUFFIX}", "trec-ikat", "post",
                [*before, user(q.pair.question)], source_rewrites.clarifying_question(pronoun),
                "underspecified", ordered([q.other, third], seed, q.base),
            )  # fmt: skip


def over_answers(pairs: Iterable[RewritePair], seed: int) -> Iterator[OverAnswers]:
    """Each grounded iKAT question of `pairs` (`_grounded_pairs`) that its history resolves or
    that needs no context, over its response and another topic's response of the same split
    (`_pools`) naming none of the words the rewrite adds."""
    kept = _grounded_pairs(pairs)
    pools = _pools(kept, seed)
    for p in kept:
        group, base = f"trec-ikat:{p.group}", f"trec-ikat-{p.group}-{p.turn_id}"
        history = p.history[-MAX_HISTORY_MESSAGES:]
        added = source_rewrites.added_words(p.question, p.rewrite)
        resolved = source_rewrites.resolved_by_history(p.question, p.rewrite, history)
        if added and not resolved:
            continue
        pool = pools[split_of(group, seed)]
        other = other_passage(pool, p.group, added, base, seed)
        if other is not None:
            yield OverAnswers(p, group, base, history, resolved, other, pool)


def grounded(answer: str) -> bool:
    """True for a response that reads as a retrieved passage: a few sentences, not a question
    back to the user (iKAT's assistant sometimes asks one)."""
    text = answer.strip()
    return len(text) >= source_rewrites.LONG_ANSWER_CHARS and not text.endswith("?")


def _passage(pair: RewritePair) -> Document:
    return document(f"trec-ikat-{pair.turn_id}", pair.answer)


def _grounded_pairs(pairs: Iterable[RewritePair]) -> list[RewritePair]:
    return [p for p in pairs if p.dataset == "trec-ikat" and p.history and grounded(p.answer)]


def _pools(pairs: list[RewritePair], seed: int) -> dict[str, list[tuple[str, Document]]]:
    """The responses of `pairs` as passages, with their topic, by split."""
    pools: dict[str, list[tuple[str, Document]]] = defaultdict(list)
    for p in pairs:
        pools[split_of(f"trec-ikat:{p.group}", seed)].append((p.group, _passage(p)))
    return pools
