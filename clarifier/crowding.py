"""AmbigNQ's `post` examples among other retrieved passages: as many passages as a retriever
returns, most of them prose about something else.

Every AmbigNQ `post` example has two short passages, one per reading or a reading and a related
question's, while a RAG pipeline's post-check sees the retriever's top k (the graph's default is
4; IBM's Common Brittonic request has twelve), prose passages of a few sentences, most of which
bear on neither reading. A model that learnt "two passages with different answers means ask" from
the two-passage layout may not find the readings among the others.

So the build's last step (`crowd`, after balancing and caps, so that every count stays) gives a
`SHARE` of AmbigNQ's `post` examples, of both labels and with or without a dialog before them,
`EXTRA_MIN`..`EXTRA_MAX` more passages in place of their two-passage form: windows of CANARD dialog passages (`source_referents.dialog_passages`, Wikipedia prose)
from the same split that name none of the question's content words, so they add no reading. The
AmbigNQ passages keep their relative order, at hashed places among the others. Label, kind,
reference question and source stay; the id gets `SUFFIX`.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

from askbetter.clarifier import source_ambignq, source_rewrites
from askbetter.clarifier.examples import Example
from askbetter.clarifier.source_common import (
    clip,
    document,
    make_example,
    rng_for,
    stable_fraction,
)
from askbetter.clarifier.source_referents import dialog_passages, passages_by_split
from askbetter.clarifier.types import Document
from askbetter.clarifier.words import content_words

SHARE = 0.5  # of AmbigNQ's post examples: retrievers return several passages
EXTRA_MIN, EXTRA_MAX = 2, 6
WINDOW_CHARS = 400  # a retrieved chunk: a few sentences
SUFFIX = "-crowded"
TRIES = 40

_SENTENCE_START = re.compile(r"(?<=[.!?])\s+(?=\S)")


def passage_pools(raw_dir: Path, seed: int) -> dict[str, list[Document]]:
    """CANARD's dialog passages by split (empty without CANARD)."""
    pairs = [p for p in source_rewrites.rewrite_pairs(raw_dir) if p.dataset == "canard"]
    by_split = passages_by_split(dialog_passages(pairs, seed), pairs, seed)
    return {split: [passage for _, passage in sorted(items)] for split, items in by_split.items()}


def crowd(ex: Example, pool: list[Document], seed: int) -> Example:
    """`ex` among `EXTRA_MIN`..`EXTRA_MAX` windows of `pool`'s passages, renumbered, with the
    suffix `SUFFIX` on its id, for a `SHARE` of AmbigNQ `post` examples; any other example, or
    with an empty pool, as it is."""
    if (not pool or ex["source"] != source_ambignq.SOURCE or ex["setting"] != "post"
            or stable_fraction(seed, "crowded", ex["id"]) >= SHARE):
        return ex
    rng = rng_for(seed, "crowded", ex["id"])
    avoid = content_words(ex["messages"][-1]["content"])
    extra = _unrelated(pool, avoid, rng.randint(EXTRA_MIN, EXTRA_MAX), rng)
    n = len(extra) + len(ex["documents"])
    places = set(rng.sample(range(n), len(ex["documents"])))
    own, others = iter(ex["documents"]), iter(extra)
    docs = [next(own) if i in places else next(others) for i in range(n)]
    numbered = [document(f"p{i}", d["text"], d.get("title")) for i, d in enumerate(docs, 1)]
    return make_example(f"{ex['id']}{SUFFIX}", ex["source"], "post", ex["messages"],
                        ex["clarification"], ex["kind"], numbered)


def _unrelated(
    pool: list[Document], avoid: set[str], n: int, rng: random.Random
) -> list[Document]:
    """Up to `n` windows of distinct passages from `pool` naming none of `avoid` (of `TRIES`
    random draws)."""
    chosen: dict[str, Document] = {}  # by passage id, so each passage comes once
    for _ in range(TRIES):
        if len(chosen) == n:
            break
        passage = pool[rng.randrange(len(pool))]
        text = window(passage["text"], rng.random())
        if (passage["id"] not in chosen
                and not avoid & content_words(f"{passage.get('title', '')} {text}")):
            chosen[passage["id"]] = document(passage["id"], text, passage.get("title"))
    return list(chosen.values())


def window(text: str, where: float) -> str:
    """A chunk of `text` of at most `WINDOW_CHARS`, starting at the sentence at fraction `where`
    of its sentences (a title on the first line stays)."""
    title, _, body = text.partition("\n") if "\n" in text else ("", "", text)
    sentences = _SENTENCE_START.split(body)
    start = int(where * len(sentences))
    chunk = clip(" ".join(sentences[start:]), WINDOW_CHARS)
    return f"{title}\n{chunk}" if title else chunk
