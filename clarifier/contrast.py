"""Minimal pairs: examples that differ in one part only, and in their label. Either one question,
worded the same, that needs clarification in one context and not in another (a pronoun the
history resolves or not; passages that support one reading or several), or one context (history
and passages) where one question needs clarification and another does not (AmbigNQ's vague
question and one of its readings asked as it is, over the same two readings' passages).

Training on such a pair in one batch lets the gradient see the difference that decides the label,
not the question's surface: without it, teaching "ask about an unresolved `he`" also taught the
model to ask about every `he` (stage 5 in the model card). `with_contrasts` adds, for each sampled
example, the other members of its groups from the training pool, and returns the sample as units
that the batcher keeps together.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from askbetter.clarifier.examples import Example, needs_clarification

# A wording shared by more examples than this is a generic turn ("what?", "anything else?")
# asked in unrelated conversations, and a context shared by more is a document (a PACIFIC table)
# that a whole dialog asks about, not one question seen in different contexts or the reverse.
MAX_GROUP = 4

Key = tuple[str, ...]


def question_key(example: Example) -> Key:
    """The source, the setting and the last user turn (case and spacing normalised): a pair lies
    within one setting, so that what differs is the history or the passages."""
    last = next(m["content"] for m in reversed(example["messages"]) if m["role"] == "user")
    return "question", example["source"], example["setting"], " ".join(last.lower().split())


def context_key(example: Example) -> Key | None:
    """The source, the messages before the last one and the passages' texts (an empty string
    between them) of a `post` example; None for a `pre` one, whose context, its history alone,
    is shared by the turns of a dialog rather than by minimal pairs."""
    if example["setting"] != "post":
        return None
    history = tuple(f"{m['role']}: {m['content']}" for m in example["messages"][:-1])
    return ("context", example["source"], *history, "", *(d["text"] for d in example["documents"]))


def _keys(example: Example) -> list[Key]:
    return [k for k in (question_key(example), context_key(example)) if k is not None]


def contrast_groups(pool: Sequence[Example]) -> dict[Key, list[Example]]:
    """Groups of at most `MAX_GROUP` examples that share a question or a context and hold both
    labels."""
    groups: dict[Key, list[Example]] = defaultdict(list)
    for ex in pool:
        for key in _keys(ex):
            groups[key].append(ex)
    return {k: members for k, members in groups.items()
            if len(members) <= MAX_GROUP and len({needs_clarification(m) for m in members}) == 2}


def with_contrasts(sample: Sequence[Example], pool: Sequence[Example]) -> list[list[Example]]:
    """`sample` as units for batching: a sampled example brings the members of its contrast
    groups in `pool`; each example comes once, in the unit of the first sampled example that
    brings it or is it."""
    groups = contrast_groups(pool)
    placed: set[str] = set()
    units: list[list[Example]] = []
    for ex in sample:
        if ex["id"] in placed:
            continue
        members = [m for k in _keys(ex) for m in groups.get(k, [])] or [ex]
        unit = [m for m in {m["id"]: m for m in members}.values() if m["id"] not in placed]
        placed.update(m["id"] for m in unit)
        units.append(unit)
    return units
