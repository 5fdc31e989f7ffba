"""An AmbigNQ reading (disambiguated question, answer) written as one statement.

AmbigNQ gives questions and answers, no passages, so the build writes a passage per reading.
Written as "question — answer" ("Who was the Indian Test Match captain in 2018 — Virat Kohli."),
no retrieved passage looks like that, and a model learns the form: on dev.unseen's AmbigNQ `post`
examples stage 35 read 92.2% with that form and 75.1% with the same facts as statements. So a
reading becomes a statement ("Virat Kohli was the Indian Test Match captain in 2018.") by a few
patterns (who, when, where, what/which, how many/long/much, a leading "As of 2017," or "In what
year"); the grammar is rough in places ("On October 8, 1997, the Chicago Fire Soccer Club
start."), and a reading no pattern fits (about one in ten) keeps the old form.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_BE = r"(is|was|are|were)"
_DO = r"(did|does|do|will)"
_PARTICIPLE = re.compile(r"^(\w+(ed|en)|held|built|made|born|shot|sung|sold|found|begun)$")
_LEAD = re.compile(r"^((?:as of|in|on|at|during|after|before|since|by|according to) [^,]+), (.+)$", re.I)
_HOW = r"how (?:long|much|old|far|big|tall|high|deep|large)"
# the noun after "what": one word or "body of water", not a verb ("what happened to")
_NOUN = r"(?!\w+ed\b|happens\b|causes\b|makes\b|means\b|goes\b|comes\b)(\w+(?: of \w+)?)"
_AUX = re.compile(r"^(?:is|was|are|were|did|does|do|will) ", re.I)
_CONTRACTIONS = re.compile(r"^(what|who|where|when)'s ", re.I)
_MONTHS = re.compile(r"\b(January|February|March|April|May|June|July|August|September|October|"
                     r"November|December)\s+\d{1,2}\b", re.I)  # a day: "on June 5", but "in June 2016"


def _when_or_where(word: str, answer: str) -> str:
    if word.lower() == "where":
        return "in"
    return "on" if _MONTHS.search(answer) else "in"


def _when_or_where_be(m: re.Match[str], a: str) -> str:
    *subject, last = m[3].split()
    prep = _when_or_where(m[1], a)
    # "was the story written": passive, "was" goes before the participle; "was the last time
    # they played": the time is the subject, the verb past tense
    passive = subject and _PARTICIPLE.match(last) and " time " not in f" {m[3]} "
    return f"{' '.join(subject)} {m[2]} {last} {prep} {a}" if passive else f"{m[3]} {m[2]} {prep} {a}"


#: (the question's pattern, the statement from its match and the answer): the first that
#: matches the whole question (without its "?"), case aside, wins
_RULES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str], str], str]], ...] = tuple(
    (re.compile(rf"^{pattern}$", re.I), statement) for pattern, statement in (
        # "In what city is the Orange Bowl held": "In the city X, the Orange Bowl held"
        (r"(in|on|at|during|over|from|for|to|by) (?:what|which) (\w+) (.+)",
         lambda m, a: f"{m[1]} the {m[2]} {a}, {_AUX.sub('', m[3])}"),
        (rf"who {_DO} (.+)", lambda m, a: f"{a} is who {m[2]}"),  # whom: "Oakland Raiders is who the Eagles play"
        (r"who (\w+) (.+)", lambda m, a: f"{a} {m[1]} {m[2]}"),
        (rf"(when|where) {_BE} (.+)", _when_or_where_be),
        (rf"(when|where) {_DO} (.+)", lambda m, a: f"{_when_or_where(m[1], a)} {a}, {m[3]}"),
        (rf"(?:what|which) {_BE} (.+)", lambda m, a: f"{m[2]} {m[1]} {a}"),
        (rf"(?:what|which) {_DO} (.+)", lambda m, a: f"{m[2]}: {a}"),
        (rf"(?:what|which) {_NOUN} {_DO} (.+)", lambda m, a: f"in the {m[1]} {a}, {m[3]}"),  # "In the year 2002, ..."
        (rf"(?:what|which) {_NOUN} (.+)", lambda m, a: f"the {m[1]} {a} {m[2]}"),
        (r"how many (.+)", lambda m, a: f"{a} {m[1]}"),
        (rf"{_HOW} {_BE} (.+)", lambda m, a: f"{m[2]} {m[1]} {a}"),
        (rf"{_HOW} {_DO} (.+)", lambda m, a: f"{m[2]} {a}"),
    )
)


def as_statement(question: str, answer: str) -> str | None:
    """The reading as one declarative sentence, or None where no pattern fits."""
    text = _statement(question.strip().rstrip(" ?"), answer.strip().rstrip(" ."))
    return None if text is None else f"{text[0].upper()}{text[1:]}."


def _statement(q: str, a: str) -> str | None:
    q = _CONTRACTIONS.sub(lambda m: f"{m[1]} is ", q)
    if m := _LEAD.match(q):  # "As of 2017, when was ...": the rest as a statement, the phrase first
        rest = _statement(m[2], a)
        return None if rest is None else f"{m[1]}, {rest}"
    for pattern, statement in _RULES:
        if m := pattern.match(q):
            return statement(m, a)
    return None
