"""CANARD's pronoun questions before retrieval, after an opening that names one candidate or two.

The conversation decides these `pre` examples, as for a user who writes "We've got two dogs,
Monty and Rafa" and then asks "how much should he be eating?": with two candidates of the
pronoun's class named, the question cannot be answered as asked; with one, it can. For a CANARD
question whose rewrite only replaces its pronoun with a name (`source_referents.canard_referents`,
the rewrite adding no other content word: "when was he born?" -> "when was Frank Zappa born?"),
paired with another dialog's referent of the same class ("he": another man; not "they", which
can stand for both together):

- **ambiguous** (`-two-named`, clarify): an opening that names both, in either order ("I'm
  reading about Frank Zappa and Miles Davis."), then the question, in the same message or after
  an assistant's acknowledgement; the reference question names both ("Do you mean Frank Zappa or
  Miles Davis?").
- **clear** (`-two-named-rewrite`): the same opening, then the rewrite, which names its referent.
- **hard negative** (`-one-named`, clear): the opening with the question's referent alone, then
  the question: vague-looking, and the conversation settles it.

The three differ only in the names the opening holds or the pronoun, so neither an opening nor a
pronoun alone decides. Grouped by the question's Wikipedia section, the partner from its split.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from askbetter.clarifier import source_referents, source_rewrites
from askbetter.clarifier.source_common import (
    Converted,
    assistant,
    make_example,
    stable_choice,
    stable_fraction,
    user,
)
from askbetter.clarifier.types import Message
from askbetter.clarifier.words import content_words

FOLDERS = ("canard",)
SAME_MESSAGE_SHARE = 1 / 3  # of openings written in the question's own message
OPENINGS = (
    "I'm reading about {}.",
    "I have a couple of questions about {}.",
    "My class is covering {} this week.",
    "I'm writing a short piece on {}.",
    "A friend and I were just talking about {}.",
    "I watched a documentary about {} last night.",
)
ACKNOWLEDGEMENTS = (
    "Sure, what would you like to know?",
    "Happy to help. What's your question?",
    "Of course, go ahead.",
    "Interesting! What do you want to know?",
)
PLURAL = source_rewrites.pronoun_class("they")[0]  # "they" can stand for both candidates together
TWO, REWRITE, ONE = "-two-named", "-two-named-rewrite", "-one-named"


def convert(raw_dir: Path, seed: int = 13) -> Iterator[Converted]:
    """Yield (CANARD section group, example): per question with a partner, the
    ambiguous `pre` example after an opening naming both referents, its clear twin asking the
    rewrite, and its hard negative after an opening naming its own referent only."""
    referents = source_referents.canard_referents(raw_dir, seed)
    for r in referents.every:
        base = f"canard-{r.pair.group}-{r.pair.turn_id}"
        added = source_rewrites.added_words(r.pair.question, r.pair.rewrite)
        if r.pronouns == PLURAL or not added <= content_words(r.name):
            continue
        partner = referents.partner(r, base, seed)
        if partner is None:
            continue
        names = [r.name, partner.name]
        if stable_fraction(seed, "named-order", base) < 0.5:
            names.reverse()
        ask = source_referents.which_of_two(names, r.pronoun, seed, base)
        both = f"{names[0]} and {names[1]}"
        turns = (
            (TWO, both, r.pair.question, ask, "ambiguous"),
            (REWRITE, both, r.pair.rewrite, None, "clear"),
            (ONE, r.name, r.pair.question, None, "hard-negative"),
        )
        for suffix, named, question, clarification, kind in turns:
            messages = conversation(opening(named, seed, base), question, seed, base)
            yield r.group, make_example(f"{base}{suffix}", "canard", "pre", messages,
                                        clarification, kind)  # fmt: skip


def opening(named: str, seed: int, key: str) -> str:
    """An opening sentence naming `named`, its wording picked by a hash of `key`."""
    return stable_choice(OPENINGS, seed, "opening", key).format(named)


def conversation(first: str, question: str, seed: int, key: str) -> list[Message]:
    """`first`, then `question`: in one user message for a `SAME_MESSAGE_SHARE` of keys, else
    after an assistant's acknowledgement (picked by a hash of `key`)."""
    if stable_fraction(seed, "same-message", key) < SAME_MESSAGE_SHARE:
        return [user(f"{first} {question[:1].upper()}{question[1:]}")]
    return [user(first), assistant(stable_choice(ACKNOWLEDGEMENTS, seed, "ack", key)), user(question)]
