"""CANARD's follow-up questions after retrieval, in the dialog that settles them: `post` hard
negatives.

Multi-turn RAG requests end in elliptical follow-ups ("and if it is about service?", "did he win
any awards?") over retrieved documents; the history says what they are about, so there is nothing
to ask. Before this converter the only `post` examples with a conversation ending in such a
question were CANARD's referent questions after their own dialog (`source_referents`) and
Abg-CoQA's, so a vague-looking question over passages leaned towards "ask".

For a `SHARE` of CANARD's questions whose history holds every word the rewrite adds
(`source_rewrites.resolved_by_history`, the `pre` hard negatives of kind (e)), the same history
and question come with two passages (`source_referents.dialog_passages`): the dialog's own and
another dialog's of the same split that names none of those words, in hashed order. Clear, kind
`hard-negative`, grouped by section (`RewritePair.split_group`).

For a further `CHUNKED_SHARE` of them (`CHUNKED_SUFFIX`), the passages are `CHUNKS_MIN` to
`CHUNKS_MAX` windows of the dialog's own passage (`crowding.window`, at spread-out sentences) and
the other dialog's, at hashed places: a retriever's top k over one article, several on-topic
passages of which none is a second reading (IBM's clear follow-up comes over the contact pages
of the utility it asked about; `make demo`'s clear expense question over a policy with several
limits). Same label and kind.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from askbetter.clarifier import source_rewrites
from askbetter.clarifier.crowding import window
from askbetter.clarifier.source_common import (
    MAX_HISTORY_MESSAGES,
    Converted,
    document,
    first_match,
    make_example,
    rng_for,
    split_of,
    stable_fraction,
    user,
)
from askbetter.clarifier.source_referents import dialog_passages, ordered, passages_by_split
from askbetter.clarifier.words import content_words
from askbetter.clarifier.types import Document

FOLDERS = ("canard",)
# of the questions their history resolves: 406 examples (not capped), about as many as the
# referents' gender twins they replace, so that the capped sources keep their size
SHARE = 0.6
SUFFIX = "-with-passages"
CHUNKED_SHARE = 0.4  # of the questions their history resolves, after the `SHARE`
CHUNKED_SUFFIX = "-among-chunks"
CHUNKS_MIN, CHUNKS_MAX = 2, 3  # windows of the own passage; with the other's, a top k of 3 or 4
OTHER_TRIES = 20


def convert(raw_dir: Path, seed: int = 13) -> Iterator[Converted]:
    """Yield (CANARD section group, example): for a `SHARE` of the questions their history
    resolves, the history and question over their dialog's passage and another's; for a further
    `CHUNKED_SHARE`, over windows of their dialog's passage and another's (`among_chunks`)."""
    pairs = [p for p in source_rewrites.rewrite_pairs(raw_dir) if p.dataset == "canard"]
    passages = dialog_passages(pairs, seed)
    by_split = passages_by_split(passages, pairs, seed)
    for p in pairs:
        history = p.history[-MAX_HISTORY_MESSAGES:]
        base = f"canard-{p.group}-{p.turn_id}"
        draw = stable_fraction(seed, "followups", base)
        if (p.group not in passages or draw >= SHARE + CHUNKED_SHARE
                or not source_rewrites.resolved_by_history(p.question, p.rewrite, history)):
            continue
        group = p.split_group
        added = source_rewrites.added_words(p.question, p.rewrite)
        other = other_passage(by_split[split_of(group, seed)], p.group, added, base, seed)
        if other is None:
            continue
        if draw < SHARE:
            example_id, docs = f"{base}{SUFFIX}", ordered([passages[p.group], other], seed, base)
        else:
            example_id = f"{base}{CHUNKED_SUFFIX}"
            docs = among_chunks(passages[p.group], other, seed, example_id)
        yield group, make_example(example_id, "canard", "post", [*history, user(p.question)],
                                  None, "hard-negative", docs)


def among_chunks(own: Document, other: Document, seed: int, key: str) -> list[Document]:
    """`CHUNKS_MIN`..`CHUNKS_MAX` distinct windows of `own` (at evenly spread sentences) and
    `other`, in an order drawn from `key`."""
    rng = rng_for(seed, "chunks", key)
    n = rng.randint(CHUNKS_MIN, CHUNKS_MAX)
    chunks = list(dict.fromkeys(window(own["text"], (k + rng.random()) / n) for k in range(n)))
    docs = [document(f"{own['id']}-w{k}", text, own.get("title")) for k, text in enumerate(chunks)]
    docs.append(other)
    rng.shuffle(docs)
    return docs


def other_passage(
    pool: list[tuple[str, Document]], group: str, avoid: set[str], key: str, seed: int
) -> Document | None:
    """Another dialog's passage from `pool` naming none of `avoid` (the first of `OTHER_TRIES`
    from a hashed place), or None."""
    other = first_match(
        pool,
        lambda o: o[0] != group and not avoid & content_words(f"{o[1].get('title', '')} {o[1]['text']}"),
        OTHER_TRIES, seed, "followup-passage", key)
    return None if other is None else other[1]
