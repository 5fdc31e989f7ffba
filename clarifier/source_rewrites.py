"""Question-in-context rewrites: CANARD (Elgohary et al. 2019), TREC CAsT 2019-2021 (Dalton et
al.), TREC iKAT 2023 (Aliannejadi et al.).

Each gives a context-dependent question ("What did he do next?"), its dialog history and a
self-contained rewrite. `rewrite_pairs` yields them all, for a rewrite feature. `convert` keeps
those the history already resolves and turns them into `pre` hard negatives (kind (e)): the
question looks vague on its own, but every word the rewrite adds is in the (capped) history, so
there is nothing to ask. Each of those also gives its rewrite, as a `pre` `clear` example: a
specific standalone question needs no clarification (the counterweight to AmbigNQ's standalone
ambiguous questions); alone, or for a `STANDALONE_AFTER_DIALOG_SHARE` after another
conversation's history (`other_dialog`), since a self-contained question stays clear after a
change of subject. TREC CAsT gives only the user's side of the dialog; its histories are user
turns alone. Grouped by topic (CAsT, iKAT) or, for CANARD, by the Wikipedia section its dialog
reads (`RewritePair.split_group`).

`convert_unresolved` gives the other side of the hard negatives: a question whose pronoun the
rewrite resolves, asked with no history, or after another conversation's history (a topic shift)
that does not hold the rewrite's added words. Then nothing says who or what the pronoun means, and
the clarifier should ask (`pre`, `underspecified`, a templated question naming the pronoun). The
other history holds no pronoun of the same class either ("his" after a dialog about another man
would read as resolved).

A RAG assistant answers in paragraphs, while CANARD's answers are short spans and CAsT has none:
the donated histories would then almost never hold a long answer, and most histories with one
(TREC iKAT's) would end in a question they settle, so "after a long answer there is nothing to
ask" could be learnt (IBM's "tell me more about her" after an unrelated exchange was let
through). So `other_dialog` takes a `LONG_DONOR_SHARE` of its histories from those with an
assistant answer of at least `LONG_ANSWER_CHARS`.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from askbetter.clarifier.source_common import (
    MAX_HISTORY_MESSAGES,
    Converted,
    RawDataError,
    assistant,
    exchange,
    field,
    first_match,
    load_json,
    make_example,
    parsed_once,
    read_text,
    record_name,
    require_file,
    split_of,
    stable_fraction,
    user,
)
from askbetter.clarifier.types import Message
from askbetter.clarifier.words import WORD, content_words

SOURCE = "rewrites"
FOLDERS = ("canard", "trec-cast", "trec-ikat")
CAST_TOPICS = (  # (year, topic file, separate tsv of manual rewrites or None)
    ("2019", "2019/data/training/train_topics_v1.0.json",
     "2019/data/training/train_topic_sample_annotated_resolved_v1.0.tsv"),
    ("2019", "2019/data/evaluation/evaluation_topics_v1.0.json",
     "2019/data/evaluation/evaluation_topics_annotated_resolved_v1.0.tsv"),
    ("2020", "2020/2020_manual_evaluation_topics_v1.0.json", None),
    ("2021", "2021/2021_manual_evaluation_topics_v1.0.nopassage.json", None),
)  # fmt: skip
IKAT_TOPICS = ("2023/data/2023_train_topics.json", "2023/data/2023_test_topics.json")


# pronouns whose referent a rewrite spells out, by the referent they can stand for, with the
# clarification question the build asks for each class
PRONOUN_CLASSES: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset("he him his".split()), 'Who do you mean by "{}"?'),
    (frozenset("she her hers".split()), 'Who do you mean by "{}"?'),
    (frozenset("they them their theirs".split()), 'Who or what do you mean by "{}"?'),
    (frozenset("it its".split()), 'What does "{}" refer to here?'),
)
PRONOUNS = frozenset().union(*(words for words, _ in PRONOUN_CLASSES))
# candidate histories tried for a question before it keeps only its no-history example
DONOR_TRIES = 20
# id suffixes of the unresolved-pronoun examples (the question alone / after another dialog)
ALONE, OTHER_DIALOG = "-alone", "-other-dialog"
UNRESOLVED_SUFFIXES = (ALONE, OTHER_DIALOG)
STANDALONE, AFTER_DIALOG = "-standalone", "-after-dialog"
STANDALONE_AFTER_DIALOG_SHARE = 0.5  # of the standalone rewrites
LONG_ANSWER_CHARS = 250  # a few sentences: an answer as a RAG assistant writes it
LONG_DONOR_SHARE = 0.5  # of the donated histories, drawn from those with a long answer
Donor = tuple[str, list[Message]]  # (dialog group, history)
DIALOG_DATASETS = frozenset({"canard", "trec-ikat"})  # whose histories hold the answers too


@dataclass(frozen=True)
class RewritePair:
    """A context-dependent question, the dialog before it, and its self-contained rewrite."""

    dataset: str  # canard | trec-cast | trec-ikat
    group: str  # the dialog or topic
    turn_id: str
    history: list[Message]
    question: str
    rewrite: str
    title: str = ""  # CANARD: the Wikipedia article and section the dialog reads
    answer: str = ""  # TREC iKAT: the assistant's response to this question
    section: str = ""  # CANARD: the smallest id of the dialogs that read the same section

    @property
    def split_group(self) -> str:
        """The group whose split the pair's examples take: its dialog or topic, but for CANARD
        that of the dialogs over its Wikipedia section (QuAC has several over some sections, whose
        answers, spans of one text, would otherwise lie in two splits)."""
        return f"{self.dataset}:{self.section or self.group}"


@parsed_once(*FOLDERS)  # seven converters read them
def rewrite_pairs(raw_dir: Path) -> tuple[RewritePair, ...]:
    """Every (history, question, rewrite) of the datasets present under `raw_dir` (frozen pairs,
    shared: their histories must not be changed)."""
    readers = {"canard": _canard, "trec-cast": _cast, "trec-ikat": _ikat}
    return tuple(
        pair
        for folder, reader in readers.items()
        if (raw_dir / folder).is_dir()
        for pair in reader(raw_dir / folder)
    )


def convert(raw_dir: Path, seed: int = 13) -> Iterator[Converted]:
    """Yield (dialog group, example): per question its history resolves, a pre hard negative
    (history and question) and a pre clear example (the rewrite, alone or after another
    dialog)."""
    pairs = rewrite_pairs(raw_dir)
    donors = donor_histories(pairs, seed)
    for pair in pairs:
        history = pair.history[-MAX_HISTORY_MESSAGES:]
        if not resolved_by_history(pair.question, pair.rewrite, history):
            continue
        base, group = f"{pair.dataset}-{pair.group}-{pair.turn_id}", pair.split_group
        messages = [*history, user(pair.question)]
        yield group, make_example(base, pair.dataset, "pre", messages, None, "hard-negative")
        before = None
        if stable_fraction(seed, "standalone-after-dialog", base) < STANDALONE_AFTER_DIALOG_SHARE:
            before = other_dialog(donors, group, base, set(), seed)
        suffix = STANDALONE if before is None else STANDALONE + AFTER_DIALOG
        standalone = [*(before or []), user(pair.rewrite)]
        yield group, make_example(f"{base}{suffix}", pair.dataset, "pre", standalone, None, "clear")


def convert_unresolved(raw_dir: Path, seed: int = 13) -> Iterator[Converted]:
    """Yield (dialog group, example): per question with a pronoun its rewrite resolves, the
    question alone and the question after another dialog's history (from the same split, holding
    neither the rewrite's added words nor a pronoun of the same class), both `pre` examples that
    need a clarification question."""
    pairs = rewrite_pairs(raw_dir)
    donors = donor_histories(pairs, seed)
    for pair in pairs:
        pronoun = unresolved_pronoun(pair.question, pair.rewrite)
        if pronoun is None:
            continue
        base, group = f"{pair.dataset}-{pair.group}-{pair.turn_id}", pair.split_group
        ask = clarifying_question(pronoun)
        same_class, _ = pronoun_class(pronoun)
        # a history that names the referent, or holds a pronoun of the same class (which a
        # reader would take the question's pronoun to repeat), could resolve it
        referents = added_words(pair.question, pair.rewrite) | same_class
        yield group, make_example(f"{base}{ALONE}", pair.dataset, "pre", [user(pair.question)],
                                  ask, "underspecified")
        history = other_dialog(donors, group, base, referents, seed)
        if history is not None:
            yield group, make_example(f"{base}{OTHER_DIALOG}", pair.dataset, "pre",
                                      [*history, user(pair.question)], ask, "underspecified")


@dataclass(frozen=True)
class Donors:
    """Other conversations' (capped, non-empty) histories by split."""

    every: dict[str, list[Donor]]

    @cached_property
    def long(self) -> dict[str, list[Donor]]:
        """Those of `every` with an assistant answer of at least `LONG_ANSWER_CHARS`."""
        return {split: [d for d in donors if _has_long_answer(d[1])]
                for split, donors in self.every.items()}


def donor_histories(pairs: Iterable[RewritePair], seed: int) -> Donors:
    """The histories of `pairs`, by the split of their group: donors of another conversation's
    context for examples of the same split."""
    every: dict[str, list[Donor]] = defaultdict(list)
    for pair in pairs:
        if pair.history:
            group = pair.split_group
            every[split_of(group, seed)].append((group, pair.history[-MAX_HISTORY_MESSAGES:]))
    return Donors(dict(every))


def other_dialog(
    donors: Donors,
    group: str,
    key: str,
    avoid: set[str] | frozenset[str],
    seed: int,
) -> list[Message] | None:
    """A history from `donors` for a question of `group`: another group's, of the same split,
    holding none of the words `avoid` (the first of up to `DONOR_TRIES`, from a place hashed from
    `key`; for a `LONG_DONOR_SHARE` of keys, among the histories with a long answer when the
    split has any), or None."""
    split = split_of(group, seed)
    pool, long = donors.every.get(split, []), donors.long.get(split)
    if long and stable_fraction(seed, "long-donor", key) < LONG_DONOR_SHARE:
        pool = long
    donor = first_match(pool, lambda d: d[0] != group and not avoid & _words(d[1]), DONOR_TRIES,
                        seed, "donor", key)
    return None if donor is None else donor[1]


def unresolved_pronoun(question: str, rewrite: str) -> str | None:
    """The first pronoun of `question` that `rewrite` drops while adding content words (so the
    pronoun stands for something only the context names), else None."""
    if not added_words(question, rewrite):
        return None
    kept = set(WORD.findall(rewrite.lower()))
    asked = WORD.findall(question.lower())
    return next((w for w in asked if w in PRONOUNS and w not in kept), None)


def clarifying_question(pronoun: str) -> str:
    """A short question asking what `pronoun` (one of `PRONOUNS`) refers to."""
    _, template = pronoun_class(pronoun)
    return template.format(pronoun)


def pronoun_class(pronoun: str) -> tuple[frozenset[str], str]:
    """The pronouns of `pronoun`'s class and the question template for them."""
    return next(entry for entry in PRONOUN_CLASSES if pronoun in entry[0])


def resolved_by_history(question: str, rewrite: str, history: list[Message]) -> bool:
    """True when the rewrite adds content words to the question and the history holds them all:
    the question depends on context, and the context settles it."""
    added = added_words(question, rewrite)
    return bool(added) and added <= _words(history)


def added_words(question: str, rewrite: str) -> set[str]:
    """The content words the rewrite adds to the question: what the context had to supply."""
    return content_words(rewrite) - content_words(question)


def _has_long_answer(history: list[Message]) -> bool:
    return any(m["role"] == "assistant" and len(m["content"]) >= LONG_ANSWER_CHARS for m in history)


def _words(history: list[Message]) -> set[str]:
    return set(WORD.findall(" ".join(m["content"] for m in history).lower()))


def _canard(folder: Path) -> Iterator[RewritePair]:
    path = require_file(folder, "dev.json")
    records = [(record, f"{path} record {i}") for i, record in enumerate(load_json(path))]
    titles = [": ".join(field(record, "History", where)[:2]) for record, where in records]
    sections: dict[str, str] = {}  # per title, the smallest id of the dialogs over it
    for (record, where), title in zip(records, titles, strict=True):
        dialog = field(record, "QuAC_dialog_id", where)
        sections[title] = min(sections.get(title, dialog), dialog)
    for (record, where), title in zip(records, titles, strict=True):
        past = field(record, "History", where)[2:]  # the first two are article and section titles
        history = [m for q, a in zip(past[::2], past[1::2], strict=False) for m in exchange(q, a)]
        yield RewritePair(
            "canard",
            field(record, "QuAC_dialog_id", where),
            str(field(record, "Question_no", where)),
            history,
            field(record, "Question", where),
            field(record, "Rewrite", where),
            title,
            section=sections[title],
        )


def _cast(folder: Path) -> Iterator[RewritePair]:
    for year, topics_file, tsv_file in CAST_TOPICS:
        path = require_file(folder, topics_file)
        manual = _tsv_rewrites(require_file(folder, tsv_file)) if tsv_file else {}
        for i, topic in enumerate(load_json(path)):
            where = f"{path} {record_name(topic, 'number', 'topic', i)}"
            number = field(topic, "number", where)
            history: list[Message] = []
            for turn in field(topic, "turn", where):
                raw = field(turn, "raw_utterance", where)
                rewrite = turn.get("manual_rewritten_utterance") or manual.get(
                    f"{number}_{turn['number']}"
                )
                if rewrite:
                    yield RewritePair(
                        "trec-cast", f"{year}-{number}", str(turn["number"]), list(history), raw,
                        rewrite,
                    )  # fmt: skip
                history.append(user(raw))


def _tsv_rewrites(path: Path) -> dict[str, str]:
    rows = csv.reader(io.StringIO(read_text(path), newline=""), delimiter="\t")
    rewrites = {row[0]: row[1] for row in rows if len(row) >= 2}
    if not rewrites:
        raise RawDataError(f"{path}: no records (an empty file)")
    return rewrites


def _ikat(folder: Path) -> Iterator[RewritePair]:
    for topics_file in IKAT_TOPICS:
        path = require_file(folder, topics_file)
        for i, topic in enumerate(load_json(path)):
            where = f"{path} {record_name(topic, 'number', 'topic', i)}"
            number = str(field(topic, "number", where))
            # "9-1", "9-2": branches of one conversation that share their first turns
            group = number.split("-")[0]
            history: list[Message] = []
            for turn in field(topic, "turns", where):
                utterance = field(turn, "utterance", where)
                response = str(turn.get("response") or "")
                yield RewritePair(
                    "trec-ikat", group, f"{number}-{turn['turn_id']}", list(history), utterance,
                    field(turn, "resolved_utterance", where), answer=response,
                )  # fmt: skip
                history += [user(utterance), assistant(response)]
