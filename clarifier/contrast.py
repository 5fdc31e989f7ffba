"""Minimal pairs: one question, worded the same, that needs clarification in one context and not
in another (a pronoun the history resolves or not; passages that support one reading or several).

Training on such a pair in one batch lets the gradient see the difference that decides the label,
not the question's surface: without it, teaching "ask about an unresolved `he`" also taught the
model to ask about every `he` (stage 5 in the model card). `with_contrasts` adds, for each sampled
example, the other members of its pair from the training pool, and returns the sample as units
that the batcher keeps together.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from askbetter.clarifier.examples import Example, needs_clarification

# A wording shared by more examples than this is a generic turn ("what?", "anything else?")
# asked in unrelated conversations, not one question seen in different contexts.
MAX_GROUP = 4

Key = tuple[str, str, str]


def question_key(example: Example) -> Key:
    """The source, the setting and the last user turn (case and spacing normalised): a pair lies
    within one setting, so that what differs is the history or the passages."""
    last = next(m["content"] for m in reversed(example["messages"]) if m["role"] == "user")
    return example["source"], example["setting"], " ".join(last.lower().split())


def contrast_groups(pool: Sequence[Example]) -> dict[Key, list[Example]]:
    """Groups of at most `MAX_GROUP` examples that share a question and hold both labels."""
    groups: dict[Key, list[Example]] = defaultdict(list)
    for ex in pool:
        groups[question_key(ex)].append(ex)
    return {k: members for k, members in groups.items()
            if len(members) <= MAX_GROUP and len({needs_clarification(m) for m in members}) == 2}


def with_contrasts(sample: Sequence[Example], pool: Sequence[Example]) -> list[list[Example]]:
    """`sample` as units for batching: an example with a contrast group in `pool` brings the whole
    group (each example once, in the unit of the first sampled member); others stand alone."""
    groups = contrast_groups(pool)
    seen: set[Key] = set()
    units: list[list[Example]] = []
    for ex in sample:
        key = question_key(ex)
        if key not in groups:
            units.append([ex])
        elif key not in seen:
            seen.add(key)
            units.append(list(groups[key]))
    return units
