"""AmbigNQ's questions asked after another conversation: a topic shift, in both settings.

AmbigNQ carries most of the ambiguity that only the passages show, but every one of its questions
opens a conversation, while most turns with a history in the other sources end in a question that
the history settles. A model can then learn "a history means nothing to ask": stage 8 let 29 of
33 ambiguous `post` questions of dev through when they came after another dialog (AUC 0.94 on
them: ranked right, scored too low).

So a share (`SHARE`) of AmbigNQ's examples, of both labels, is asked again after a CANARD or TREC
iKAT dialog from the same split (datasets whose histories hold the assistant's answers too;
`source_rewrites.other_dialog`, so half of them with a long answer) that names none of the
question's content words. A dialog on another subject neither settles the question's ambiguity
nor raises one, so label, kind, reference question and passages stay; the example keeps
AmbigNQ's group (its split) and source.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from askbetter.clarifier import source_ambignq, source_rewrites
from askbetter.clarifier.source_common import Converted, make_example, stable_fraction
from askbetter.clarifier.words import content_words

FOLDERS = (*source_ambignq.FOLDERS, "canard", "trec-ikat")
DONOR_DATASETS = source_rewrites.DIALOG_DATASETS
SHARE = 0.04  # of AmbigNQ's examples: 938 after the build's balancing (not capped)
SUFFIX = source_rewrites.AFTER_DIALOG


def convert(raw_dir: Path, seed: int = 13) -> Iterator[Converted]:
    """Yield (AmbigNQ question group, example): a `SHARE` of AmbigNQ's examples, each after a
    donor dialog of its own split. Nothing when no donor dataset is present."""
    pairs = (p for p in source_rewrites.rewrite_pairs(raw_dir) if p.dataset in DONOR_DATASETS)
    donors = source_rewrites.donor_histories(pairs, seed)
    for group, ex in source_ambignq.convert(raw_dir, seed):
        if stable_fraction(seed, "topic-shift", ex["id"]) >= SHARE:
            continue
        question = content_words(ex["messages"][-1]["content"])
        history = source_rewrites.other_dialog(donors, group, ex["id"], question, seed)
        if history is None:
            continue
        yield group, make_example(
            f"{ex['id']}{SUFFIX}", ex["source"], ex["setting"], [*history, *ex["messages"]],
            ex["clarification"], ex["kind"], ex["documents"],
        )  # fmt: skip
