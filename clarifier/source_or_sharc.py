"""OR-ShARC (Gao et al. 2021, from ShARC by Saeidi et al. 2018): conversational reading of rules.

The user states a scenario and asks whether a rule applies; the system either answers Yes/No or
asks a follow-up question for a fact the rule needs and the dialog has not given. A follow-up
answer becomes a clarify example (kind `missing-fact`, the follow-up is the reference). A Yes/No
answer is a negative: a hard negative (kind (c)) when the history already holds follow-up
questions and their answers, i.e. the missing facts have been supplied, otherwise clear.

`post` only: the question to ask depends on the rule text, so without documents it cannot be
told. Documents are the gold rule snippet and `N_DISTRACTORS` other snippets of the same split (as
many as it has, in a small slice of the data), in an order drawn from the seed. A capped history
keeps the opening scenario and question. Grouped by web page (`source_url`), not by snippet or
rule tree: a page's snippets share their wording, and the same question is asked of several of
them, so a snippet's examples in one split would be near copies of its page's in another. A rule
text is shown in one split only: a gold snippet lies in its page's split, one that is no
example's gold in a split of its own.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from askbetter.clarifier.source_common import (
    Converted,
    RawDataError,
    assistant,
    document,
    field,
    load_json,
    load_jsonl,
    make_example,
    require_file,
    rng_for,
    split_of,
    user,
)
from askbetter.clarifier.types import Message

SOURCE = "or-sharc"
FOLDERS = ("or-sharc",)
FILES = ("open_retrieval_sharc_dev.json", "open_retrieval_sharc_test.json")
SNIPPETS = "id2snippet.json"
N_DISTRACTORS = 2
FINAL_ANSWERS = ("yes", "no", "irrelevant")


def convert(raw_dir: Path, seed: int = 13) -> Iterator[Converted]:
    """Yield (page group, example) for every utterance of the dev and test files."""
    folder = raw_dir / FOLDERS[0]
    snippets: dict[str, str] = load_json(require_file(folder, SNIPPETS))
    records = [
        (f"{path}:{lineno}", record)
        for name in FILES
        for path in [require_file(folder, name)]
        for lineno, record in enumerate(load_jsonl(path), 1)
    ]
    pages = _pages(records, snippets)
    pools = _snippets_by_split(snippets, pages, seed)
    for where, record in records:
        gold = str(record["gold_snippet_id"])
        uid = field(record, "utterance_id", where)
        rng = rng_for(seed, SOURCE, uid)
        candidates = [s for s in pools[split_of(pages[gold], seed)] if s != gold]
        others = rng.sample(candidates, min(N_DISTRACTORS, len(candidates)))
        chosen = [gold, *others]
        rng.shuffle(chosen)
        docs = [document(f"rule-{s}", snippets[s]) for s in chosen]
        answer = str(field(record, "answer", where)).strip()
        history = field(record, "history", where)
        if answer.lower() not in FINAL_ANSWERS:
            clarification, kind = answer, "missing-fact"
        else:
            clarification, kind = None, "hard-negative" if history else "clear"
        messages = _messages(record, where)
        example = make_example(
            f"{SOURCE}-{uid}", SOURCE, "post", messages, clarification, kind, docs,
            keep_opening=True,
        )  # fmt: skip
        yield pages[gold], example


def _pages(records: list[tuple[str, dict[str, Any]]], snippets: dict[str, str]) -> dict[str, str]:
    """The page group of each gold snippet (a snippet on two pages would tie their splits
    together, so it is an error)."""
    pages: dict[str, str] = {}
    for where, record in records:
        gold = str(field(record, "gold_snippet_id", where))
        if gold not in snippets:
            raise RawDataError(f"{where}: gold snippet {gold!r} is not in {SNIPPETS}")
        page = f"{SOURCE}:url-{field(record, 'source_url', where)}"
        if pages.setdefault(gold, page) != page:
            raise RawDataError(f"{where}: gold snippet {gold!r} is on two pages")
    return pages


def _snippets_by_split(
    snippets: dict[str, str], pages: dict[str, str], seed: int
) -> dict[str, list[str]]:
    """Snippet ids by split, the pools of distractors: a gold snippet in its page's split, one
    that is no example's gold (never a page's, as far as the files tell) by a hash of its id."""
    pools: dict[str, list[str]] = defaultdict(list)
    for s in sorted(snippets):
        pools[split_of(pages.get(s, f"{SOURCE}:snippet-{s}"), seed)].append(s)
    return pools


def _messages(record: dict[str, Any], where: str) -> list[Message]:
    """The scenario and question as the first user turn, then the follow-up exchanges (the
    system asks, the user answers), so the judged turn is the user's latest message."""
    opening = f"{record.get('scenario', '').strip()} {field(record, 'question', where)}".strip()
    messages = [user(opening)]
    for turn in field(record, "history", where):
        messages += [assistant(turn["follow_up_question"]), user(turn["follow_up_answer"])]
    return messages
