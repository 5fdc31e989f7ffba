"""AmbigNQ (Min et al., EMNLP 2020): open-domain questions with several plausible readings.

`pre`: the question alone. `multipleQAs` (every annotation) -> clarify, kind `ambiguous`, with a
reference written from the disambiguated questions (see `clarification_for`); single-answer ->
clear; questions whose annotators disagree are skipped.

`post`, from synthetic passages, one per reading, a statement of the disambiguated question's
answer (`statements.as_statement`: "Virat Kohli was the Indian Test Match captain in 2018."):
two readings' passages -> clarify (the reference names those two readings); one reading's
passage beside a passage from another question -> hard negative (kind (d): ambiguous-looking, but
the documents support one reading); a single-answer question's passage beside another question's
passage -> clear. Every post example has two documents, so their number tells nothing. The other
question is on a related topic where one exists (`related_distractors`): it shares words with the
question but neither has the other's rarest word ("who played danny in grease" for "who played
rizzo in grease"), so that, as with retrieved passages, being on topic does not make a second
passage a second reading. The other question is one of the same split, so no passage is shown in
two splits.
`convert_disambiguated` (the build adds these last, after its caps and crowding): one of an
ambiguous question's two shown readings asked as it is, alone and over the very passages of the
vague question's `post` example, as hard negatives (the passages support two readings, but the
question names one).
Grouped by question.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from askbetter.clarifier.examples import Example
from askbetter.clarifier.source_common import (
    Converted,
    RawDataError,
    clip,
    document,
    field,
    load_json,
    make_example,
    parsed_once,
    require_file,
    rng_for,
    split_of,
    stable_fraction,
    user,
)
from askbetter.clarifier.statements import as_statement
from askbetter.clarifier.types import Document
from askbetter.clarifier.words import content_words

SOURCE = "ambignq"
FOLDERS = ("ambignq",)
FILES = ("train_light.json", "dev_light.json")
MAX_READINGS = 3
DISAMBIGUATED = "-disambiguated"  # id infix of `convert_disambiguated`'s examples
DISAMBIGUATED_SHARE = 0.25  # of the ambiguous questions the build keeps
MAX_PHRASE_WORDS = 6
MAX_CLARIFICATION_CHARS = 200
# words in more questions than this mark no topic (and would make the related-question search slow)
MAX_TOPIC_WORD_QUESTIONS = 200
_LOWER_FIRST = {
    "who", "what", "when", "where", "which", "why", "how", "whose", "whom", "is", "are", "was",
    "were", "do", "does", "did", "in", "on", "the", "a", "an", "can", "has", "have", "will",
}  # fmt: skip

Reading = tuple[str, str]  # (disambiguated question, its answer)
Question = tuple[str, str, list[Reading]]  # (id, question, readings)


@parsed_once(*FOLDERS)  # two converters read them
def questions_of(raw_dir: Path) -> tuple[Question, ...]:
    """(id, question, readings) of every question of the train and dev files that `_parse`
    keeps."""
    folder = raw_dir / FOLDERS[0]
    parsed = []
    for name in FILES:
        path = require_file(folder, name)
        for i, record in enumerate(load_json(path)):
            parsed.append(_parse(record, f"{path} question {i}"))
    return tuple(p for p in parsed if p is not None)


def convert(raw_dir: Path, seed: int = 13) -> Iterator[Converted]:
    """Yield (question group, example) for every question of the train and dev files."""
    questions = questions_of(raw_dir)
    passages = [passage(*readings[0]) for _, _, readings in questions]
    members: dict[str, list[int]] = defaultdict(list)  # the questions of each split
    for k, (qid, _, _) in enumerate(questions):
        members[split_of(f"{SOURCE}:{qid}", seed)].append(k)
    related: dict[int, int | None] = {}
    for ks in members.values():
        found = related_distractors([questions[k][1] for k in ks], seed)
        related |= {k: None if j is None else ks[j] for k, j in zip(ks, found, strict=True)}
    pools = {split: [passages[k] for k in ks] for split, ks in members.items()}
    for k, (qid, question, readings) in enumerate(questions):
        group = f"{SOURCE}:{qid}"
        rng = rng_for(seed, SOURCE, qid)
        pool, own = pools[split_of(group, seed)], passages[k]
        if all(p == own for p in pool):  # the draws below would never end
            raise RawDataError(f"{group}: its split has no other question's passage to set beside "
                               "its own (too few questions for this seed)")
        distractor = passages[j] if (j := related[k]) is not None else pool[rng.randrange(len(pool))]
        while distractor == own:  # never the question's own passage
            distractor = pool[rng.randrange(len(pool))]
        base = f"{SOURCE}-{qid}"
        messages = [user(question)]
        if len(readings) == 1:
            yield group, make_example(f"{base}-pre", SOURCE, "pre", messages, None, "clear")
            docs = _docs(rng, [passage(*readings[0]), distractor])
            yield group, make_example(f"{base}-post", SOURCE, "post", messages, None, "clear", docs)
            continue
        reference = clarification_for([q for q, _ in readings[:MAX_READINGS]])
        yield group, make_example(f"{base}-pre", SOURCE, "pre", messages, reference, "ambiguous")
        pair = rng.sample(readings, 2)
        docs = _docs(rng, [passage(*r) for r in pair])
        pair_reference = clarification_for([q for q, _ in pair])
        yield group, make_example(
            f"{base}-post", SOURCE, "post", messages, pair_reference, "ambiguous", docs
        )
        docs = _docs(rng, [passage(*pair[0]), distractor])
        yield group, make_example(
            f"{base}-one-reading-post", SOURCE, "post", messages, None, "hard-negative", docs
        )


def convert_disambiguated(
    questions: Sequence[Question], seed: int, partners: Mapping[str, Example]
) -> Iterator[Converted]:
    """Yield (question group, example): for a `DISAMBIGUATED_SHARE` of the ambiguous `questions`
    (`questions_of`'s: the build reads them apart, so that only reading them is a raw-data error)
    whose `post` example (`<base>-post`, as the build left it, maybe crowded) `partners` holds by
    group, one of the two readings whose passages that example shows, asked as it is (the
    disambiguated question), alone (`pre`) and over that example's very passages (`post`), both
    hard negatives, as PACIFIC's `original_question`: the passages support two readings of the
    vague question, but this question names one. The `post` twin differs from its partner in the
    question only (a minimal pair: `contrast.py` batches them together); its id is the partner's
    with `DISAMBIGUATED` after the question id."""
    for qid, question, readings in questions:
        group = f"{SOURCE}:{qid}"
        partner = partners.get(group)
        if partner is None or stable_fraction(seed, DISAMBIGUATED, qid) >= DISAMBIGUATED_SHARE:
            continue
        vague = question.lower().rstrip(" ?")
        shown = {d["text"] for d in partner["documents"]}
        candidates = [r for r in readings
                      if passage(*r) in shown and r[0].lower().rstrip(" ?") != vague]
        if not candidates:
            continue
        asked = rng_for(seed, SOURCE, "disambiguated", qid).choice(candidates)
        base, messages = f"{SOURCE}-{qid}", [user(asked[0])]
        yield group, make_example(f"{base}{DISAMBIGUATED}-pre", SOURCE, "pre", messages, None,
                                  "hard-negative")
        twin_id = partner["id"].replace(base, f"{base}{DISAMBIGUATED}", 1)
        yield group, make_example(twin_id, SOURCE, "post", messages, None, "hard-negative",
                                  partner["documents"])


def related_distractors(questions: list[str], seed: int) -> list[int | None]:
    """Per question, the index of another question on a related topic, or None: the one sharing
    the most content words among those where neither question has the other's rarest word (its
    likeliest topic entity: a question with it could be a paraphrase, whose passage would be a
    second reading). Ties are broken by a hash; words in over `MAX_TOPIC_WORD_QUESTIONS`
    questions do not count."""
    words = [content_words(q) for q in questions]
    postings: dict[str, list[int]] = defaultdict(list)
    for k, ws in enumerate(words):
        for w in ws:
            postings[w].append(k)
    rarest = [min(ws, key=lambda w: (len(postings[w]), w)) if ws else "" for ws in words]
    related: list[int | None] = []
    for k, ws in enumerate(words):
        shared = Counter(
            j for w in ws if len(postings[w]) <= MAX_TOPIC_WORD_QUESTIONS
            for j in postings[w] if rarest[k] not in words[j] and rarest[j] not in ws
        )  # fmt: skip
        if not shared:
            related.append(None)
            continue
        most = max(shared.values())
        best = sorted(j for j, n in shared.items() if n == most)
        related.append(best[rng_for(seed, SOURCE, "related", k).randrange(len(best))])
    return related


def _parse(record: dict[str, Any], where: str) -> tuple[str, str, list[Reading]] | None:
    """(id, question, readings): one reading for a single-answer question, two or more for an
    ambiguous one; None when annotators disagree or a question has too few distinct readings."""
    question = str(field(record, "question", where)).strip()
    annotations = field(record, "annotations", where)
    types = {a.get("type") for a in annotations}
    if types == {"singleAnswer"}:
        readings = [(question, str(annotations[0]["answer"][0]))]
    elif types == {"multipleQAs"}:
        readings = _distinct(
            (_first_alternative(p["question"]), str(p["answer"][0]))
            for p in annotations[0]["qaPairs"]
            if p.get("answer")
        )
        if len(readings) < 2:
            return None
    else:
        return None
    return str(field(record, "id", where)), question, readings


def _first_alternative(question: str) -> str:
    """Some disambiguated questions list paraphrases separated by '|'; keep the first."""
    return question.split("|")[0].strip()


def _distinct(readings: Iterator[Reading]) -> list[Reading]:
    seen: set[str] = set()
    out = []
    for q, a in readings:
        if q and q.lower() not in seen:
            seen.add(q.lower())
            out.append((q, a))
    return out


def passage(question: str, answer: str) -> str:
    """The reading as a statement (`as_statement`); as "question — answer" where no pattern fits."""
    return as_statement(question, answer) or f"{question.rstrip(' ?')} — {answer.rstrip('.')}."


def _docs(rng: random.Random, texts: list[str]) -> list[Document]:
    texts = list(texts)
    rng.shuffle(texts)
    return [document(f"p{k}", t) for k, t in enumerate(texts, 1)]


def clarification_for(readings: list[str]) -> str:
    """One short question naming the readings.

    The first reading is spelled out; the others by the words that set them apart (what is left
    after the words all readings share at the start and end, plus one word of the shared start
    for context), e.g. "Do you mean who played rizzo in the 1978 film grease, or the 1971
    musical?". When the readings do not differ by a short phrase, they are spelled out
    in full; readings are dropped from the end while the question is too long, down to "Do you
mean <first reading>?".
    """
    readings = [r.strip().rstrip("?").strip() for r in readings]
    while len(readings) > 1:
        question = _by_phrases(readings) or _in_full(readings)
        if len(question) <= MAX_CLARIFICATION_CHARS:
            return question
        readings = readings[:-1]
    return clip(f"Do you mean {_lower_first(readings[0])}", MAX_CLARIFICATION_CHARS - 1) + "?"


def _by_phrases(readings: list[str]) -> str | None:
    words = [r.split() for r in readings]
    lowered = [[w.lower() for w in ws] for ws in words]
    shortest = min(len(ws) for ws in words)
    prefix = 0
    while prefix < shortest and all(ws[prefix] == lowered[0][prefix] for ws in lowered):
        prefix += 1
    suffix = 0
    while suffix < shortest - prefix and all(
        ws[-1 - suffix] == lowered[0][-1 - suffix] for ws in lowered
    ):
        suffix += 1
    start = max(prefix - 1, 0)
    phrases = [" ".join(ws[start : len(ws) - suffix]).rstrip(",;:") for ws in words[1:]]
    first_differs = len(words[0]) > prefix + suffix
    if not first_differs or prefix == 0 == suffix:
        return None
    if any(not p or len(p.split()) > MAX_PHRASE_WORDS for p in phrases):
        return None
    return _join(_lower_first(readings[0]), [_lower_first(p) for p in phrases])


def _in_full(readings: list[str]) -> str:
    return _join(_lower_first(readings[0]), [_lower_first(r) for r in readings[1:]])


def _join(first: str, others: list[str]) -> str:
    if len(others) == 1:
        return f"Do you mean {first}, or {others[0]}?"
    return f"Do you mean {first}, {', '.join(others[:-1])}, or {others[-1]}?"


def _lower_first(text: str) -> str:
    head, _, rest = text.partition(" ")
    return f"{head.lower()} {rest}".strip() if head.lower() in _LOWER_FIRST else text
