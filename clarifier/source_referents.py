"""CANARD's pronoun questions after retrieval, over real text that names one or two referents.

The passages decide these `post` examples, as in the IBM request fixture where "tell me more about
her" comes with documents on several women. For a CANARD question whose pronoun the rewrite
replaces with a name ("why did he think the band lacked effort?" -> "Frank Zappa"), each dialog
gives a passage: its Wikipedia article and section as the title, the answers (spans of that
section) as the text; for half of the dialogs (`TITLE_IN_TEXT_SHARE`) the title is instead the
text's first line, as in documents retrieved from web pages. Then, per question:

- **ambiguous** (`-two-referents`, clarify): the question alone or after another dialog (CANARD's
  or TREC iKAT's, `source_rewrites.other_dialog`) that names neither referent, with its own
  passage and one of another dialog whose referent has the same pronoun class ("he": another
  man) and is not named in the first passage. Both readings
  are on screen; the reference question names them ("Do you mean Frank Zappa or Miles Davis?").
- **clear** (`-named`), for those asked after another dialog: the rewrite, which names the
  referent, after the same dialog and over the same passages. The pair differs only in the
  pronoun, so "a long unrelated exchange, then a question over passages" alone decides nothing.
- **hard negative** (`-history-resolves`, clear), when its own dialog names the referent
  (`source_rewrites.resolved_by_history`): the same question and passages after that dialog; the
  conversation settles it. (Session 11 dropped the twin that set the question alone beside a
  passage about someone of the other gender: its only cue, a name's gender, stayed near 40%.)

Grouped by section (`RewritePair.split_group`), both passages from dialogs of the example's
split.
"""

from __future__ import annotations

import difflib
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from askbetter.clarifier import source_rewrites
from askbetter.clarifier.source_common import (
    MAX_HISTORY_MESSAGES,
    Converted,
    document,
    first_match,
    make_example,
    split_of,
    stable_choice,
    stable_fraction,
    user,
)
from askbetter.clarifier.source_rewrites import RewritePair, pronoun_class
from askbetter.clarifier.words import content_words
from askbetter.clarifier.types import Document

FOLDERS = ("canard", "trec-ikat")
# the reference questions, one picked per example by a hash
TEMPLATES = (
    "Do you mean {a} or {b}?",
    'By "{pronoun}", do you mean {a} or {b}?',
    "Are you asking about {a} or {b}?",
    "Which one do you mean: {a} or {b}?",
)
# of the questions with a named referent: uncapped by the build (a capped source's share of the
# total would leave too little room for the others), so sized here: 800 examples after balancing
SHARE = 0.4
TITLE_IN_TEXT_SHARE = 0.5  # of passages whose title is the first line of their text
AFTER_DIALOG_SHARE = 0.5  # of ambiguous examples asked after another dialog rather than alone
MAX_NAME_WORDS = 6
PARTNER_TRIES = 20
NO_ANSWER = "I don't know."  # CANARD's stand-in for QuAC's CANNOTANSWER
TWO, RESOLVED, NAMED = "-two-referents", "-history-resolves", "-named"
_TOKEN = re.compile(r"\S+")
_EDGE = re.compile(r"^[\W_]+|(?:['’]s?)?[\W_]*$")


@dataclass(frozen=True)
class Referent:
    """A question whose pronoun stands for a name, with its dialog's passage."""

    pair: RewritePair
    group: str
    pronoun: str
    name: str
    passage: Document

    @property
    def pronouns(self) -> frozenset[str]:
        """The pronoun's class: who or what it can stand for."""
        return pronoun_class(self.pronoun)[0]

    @cached_property
    def passage_words(self) -> set[str]:
        """The content words of the passage, title included."""
        return content_words(f"{self.passage.get('title', '')} {self.passage['text']}")


@dataclass(frozen=True)
class Referents:
    """CANARD's questions with a named referent, and per split and pronoun class the referents
    a question's partner is drawn from."""

    every: list[Referent]
    pools: dict[tuple[str, frozenset[str]], list[Referent]]

    def partner(self, r: Referent, key: str, seed: int) -> Referent | None:
        """Another dialog's referent of `r`'s split and pronoun class, with another name, neither
        passage naming the other's referent (the first of `PARTNER_TRIES` from a place hashed
        from `key`), or None."""
        own_name = content_words(r.name)

        def fits(other: Referent) -> bool:
            other_name = content_words(other.name)
            return (other.group != r.group and bool(other_name) and not other_name & r.passage_words
                    and not own_name & other.passage_words)

        pool = self.pools[(split_of(r.group, seed), r.pronouns)]
        return first_match(pool, fits, PARTNER_TRIES, seed, "partner", key)


def canard_referents(raw_dir: Path, seed: int) -> Referents:
    """The CANARD questions whose pronoun the rewrite replaces with a name that their dialog's
    passage (`dialog_passages`) holds, with their partner pools."""
    pairs = [p for p in source_rewrites.rewrite_pairs(raw_dir) if p.dataset == "canard"]
    passages = dialog_passages(pairs, seed)
    every = [r for p in pairs if (r := _referent(p, passages)) is not None]
    pools: dict[tuple[str, frozenset[str]], list[Referent]] = defaultdict(list)
    for r in every:
        pools[(split_of(r.group, seed), r.pronouns)].append(r)
    return Referents(every, dict(pools))


def convert(raw_dir: Path, seed: int = 13) -> Iterator[Converted]:
    """Yield (CANARD section group, example): for a `SHARE` of the questions with a named
    referent, an ambiguous `post` example over two referents' passages (after another dialog, with
    its clear twin naming the referent) and, when its own dialog names the referent, a hard
    negative."""
    dialogs = [p for p in source_rewrites.rewrite_pairs(raw_dir)
               if p.dataset in source_rewrites.DIALOG_DATASETS]
    donors = source_rewrites.donor_histories(dialogs, seed)
    referents = canard_referents(raw_dir, seed)
    for r in referents.every:
        base = f"canard-{r.pair.group}-{r.pair.turn_id}"
        if stable_fraction(seed, "referents", base) >= SHARE:
            continue
        partner = referents.partner(r, base, seed)
        if partner is None:
            continue
        docs = ordered([r.passage, partner.passage], seed, base)
        names = [r.name, partner.name] if docs[0] is r.passage else [partner.name, r.name]
        ask = which_of_two(names, r.pronoun, seed, base)
        avoid = content_words(r.name) | content_words(partner.name) | r.pronouns
        history = None
        if stable_fraction(seed, "after-dialog", base) < AFTER_DIALOG_SHARE:
            history = source_rewrites.other_dialog(donors, r.group, base, avoid, seed)
        question = [*(history or []), user(r.pair.question)]
        yield r.group, make_example(f"{base}{TWO}", "canard", "post", question, ask, "ambiguous",
                                    docs)
        if history is not None:
            named = [*history, user(r.pair.rewrite)]
            yield r.group, make_example(f"{base}{NAMED}", "canard", "post", named, None, "clear",
                                        docs)
        history = r.pair.history[-MAX_HISTORY_MESSAGES:]
        if source_rewrites.resolved_by_history(r.pair.question, r.pair.rewrite, history):
            yield r.group, make_example(f"{base}{RESOLVED}", "canard", "post",
                                        [*history, user(r.pair.question)], None, "hard-negative",
                                        docs)  # fmt: skip


def which_of_two(names: list[str], pronoun: str, seed: int, key: str) -> str:
    """The reference question naming the two `names` in their order, its wording (`TEMPLATES`)
    picked by a hash of `key`."""
    return stable_choice(TEMPLATES, seed, "template", key).format(a=names[0], b=names[1], pronoun=pronoun)


def referent_name(question: str, rewrite: str, pronoun: str) -> str | None:
    """The words of `rewrite` that replace `pronoun` (and only it) in `question`, without a
    possessive ending or edge punctuation ("Tori Amos's" -> "Tori Amos"), or None."""
    asked, rewritten = _TOKEN.findall(question), _TOKEN.findall(rewrite)
    matcher = difflib.SequenceMatcher(a=_norm(asked), b=_norm(rewritten), autojunk=False)
    spans = [
        (asked[i1:i2], rewritten[j1:j2])
        for op, i1, i2, j1, j2 in matcher.get_opcodes()
        if op == "replace" and pronoun in _norm(asked[i1:i2])
    ]
    if len(spans) != 1 or len(spans[0][0]) != 1:
        return None
    *words, last = spans[0][1]
    last = _EDGE.sub("", last)
    if not last:  # the last word was only punctuation or a possessive
        return None
    name = _EDGE.sub("", " ".join([*words, last]))
    if len(name.split()) > MAX_NAME_WORDS or _norm([name])[0] in source_rewrites.PRONOUNS:
        return None  # too long for a name, or itself a pronoun ("him")
    return name


def _norm(tokens: list[str]) -> list[str]:
    return [re.sub(r"\W", "", t.lower()) for t in tokens]


def dialog_passages(pairs: list[RewritePair], seed: int) -> dict[str, Document]:
    """Per dialog, its title and the answers of its longest history as one passage (for a
    `TITLE_IN_TEXT_SHARE` of dialogs, the title as the text's first line)."""
    longest: dict[str, RewritePair] = {}
    for p in pairs:
        if len(p.history) >= len(longest.get(p.group, p).history):
            longest[p.group] = p
    passages = {}
    for group, p in longest.items():
        answers = [m["content"] for m in p.history if m["role"] == "assistant"]
        text = " ".join(a for a in answers if a != NO_ANSWER)
        if not text:
            continue
        if p.title and stable_fraction(seed, "title-in-text", group) < TITLE_IN_TEXT_SHARE:
            passages[group] = document(f"canard-{group}", f"{p.title}\n{text}")
        else:
            passages[group] = document(f"canard-{group}", text, p.title or None)
    return passages


def passages_by_split(passages: dict[str, Document], pairs: list[RewritePair],
                      seed: int) -> dict[str, list[tuple[str, Document]]]:
    """`dialog_passages`' (dialog, passage) pairs by split, in its order: a dialog's split is its
    Wikipedia section's (`RewritePair.split_group`), so no passage is shown in two splits."""
    split_groups = {p.group: p.split_group for p in pairs}
    by_split: dict[str, list[tuple[str, Document]]] = defaultdict(list)
    for group, passage in passages.items():
        by_split[split_of(split_groups[group], seed)].append((group, passage))
    return by_split


def _referent(pair: RewritePair, passages: dict[str, Document]) -> Referent | None:
    """The question's named referent, when its passage names it and its history resolves it."""
    pronoun = source_rewrites.unresolved_pronoun(pair.question, pair.rewrite)
    passage = passages.get(pair.group)
    if pronoun is None or passage is None:
        return None
    name = referent_name(pair.question, pair.rewrite, pronoun)
    if name is None:
        return None
    referent = Referent(pair, pair.split_group, pronoun, name, passage)
    return referent if content_words(name) <= referent.passage_words else None


def ordered(docs: list[Document], seed: int, key: str) -> list[Document]:
    """`docs` as they are or reversed, by a hash of `key`."""
    return docs if stable_fraction(seed, "order", key) < 0.5 else docs[::-1]

