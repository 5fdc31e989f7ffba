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
`hard-negative`, grouped by dialog.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

from askbetter.clarifier import source_rewrites
from askbetter.clarifier.source_common import (
    MAX_HISTORY_MESSAGES,
    Converted,
    make_example,
    split_of,
    stable_fraction,
    user,
)
from askbetter.clarifier.source_referents import dialog_passages, ordered
from askbetter.clarifier.words import content_words
from askbetter.clarifier.types import Document

FOLDERS = ("canard",)
# of the questions their history resolves: 406 examples (not capped), about as many as the
# referents' gender twins they replace, so that the capped sources keep their size
SHARE = 0.6
SUFFIX = "-with-passages"
OTHER_TRIES = 20


def convert(raw_dir: Path, seed: int = 13) -> Iterator[Converted]:
    """Yield (CANARD dialog group, example): for a `SHARE` of the questions their history
    resolves, the history and question over their dialog's passage and another's."""
    pairs = [p for p in source_rewrites.rewrite_pairs(raw_dir) if p.dataset == "canard"]
    passages = dialog_passages(pairs, seed)
    by_split: dict[str, list[tuple[str, Document]]] = defaultdict(list)
    for group, passage in passages.items():
        by_split[split_of(f"canard:{group}", seed)].append((group, passage))
    for p in pairs:
        history = p.history[-MAX_HISTORY_MESSAGES:]
        base = f"canard-{p.group}-{p.turn_id}"
        if (p.group not in passages or stable_fraction(seed, "followups", base) >= SHARE
                or not source_rewrites.resolved_by_history(p.question, p.rewrite, history)):
            continue
        group = f"canard:{p.group}"
        added = source_rewrites.added_words(p.question, p.rewrite)
        other = other_passage(by_split[split_of(group, seed)], p.group, added, base, seed)
        if other is None:
            continue
        docs = ordered([passages[p.group], other], seed, base)
        yield group, make_example(f"{base}{SUFFIX}", "canard", "post",
                                  [*history, user(p.question)], None, "hard-negative", docs)


def other_passage(
    pool: list[tuple[str, Document]], group: str, avoid: set[str], key: str, seed: int
) -> Document | None:
    """Another dialog's passage from `pool` naming none of `avoid` (the first of `OTHER_TRIES`
    from a hashed place), or None."""
    start = int(stable_fraction(seed, "followup-passage", key) * len(pool))
    for i in range(min(OTHER_TRIES, len(pool))):
        other_group, passage = pool[(start + i) % len(pool)]
        words = content_words(f"{passage.get('title', '')} {passage['text']}")
        if other_group != group and not avoid & words:
            return passage
    return None
