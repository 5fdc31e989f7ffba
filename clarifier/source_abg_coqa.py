"""Abg-CoQA (Guo et al., AKBC 2021): ambiguous questions in conversational QA over a story.

Each record is one judged turn of a CoQA story with its last one or two turns of history (the
same turn can come twice, with one and with two; the id keeps both apart). An ambiguous turn
becomes a clarify example whose reference is the annotated clarification question; a
non-ambiguous one is clear. Hard negatives (kind (a)): the ambiguous turn after the dialog has
resolved it, i.e. the clarification question and one of the user's answers folded into the
history, the answer being the judged turn. Every turn is given in both settings: `post` with the
story as the one document, `pre` without it. Grouped by story text, not story id: some stories
come under several ids (`story_groups`), whose examples would otherwise lie in several splits.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from askbetter.clarifier.source_common import (
    Converted,
    assistant,
    both_settings,
    document,
    exchange,
    field,
    load_json,
    record_name,
    require_file,
    user,
)

SOURCE = "abg-coqa"
FOLDERS = ("abg-coqa",)
FILES = ("coqa_abg_val.json", "coqa_abg_test.json")
MAX_RESOLVED_PER_TURN = 2
_BARE_NO = re.compile(r"^\s*no\W*$", re.IGNORECASE)


def convert(raw_dir: Path, seed: int = 13) -> Iterator[Converted]:
    """Yield (story group, example) for every judged turn of the val and test files."""
    del seed  # nothing random here
    folder = raw_dir / FOLDERS[0]
    records = [
        (record, f"{path} {record_name(record, 'id', 'record', i)}")
        for name in FILES
        for path in [require_file(folder, name)]
        for i, record in enumerate(field(load_json(path), "data", str(path)))
    ]
    groups = story_groups(records)
    for record, where in records:
        yield from _convert_record(record, where, groups)


def story_groups(records: list[tuple[dict[str, Any], str]]) -> dict[str, str]:
    """Per story id, its group: the smallest id among the stories with the same text (whitespace
    aside; for most, their own id), so that one story under several ids lies in one split."""
    ids: dict[str, set[str]] = defaultdict(set)
    for record, where in records:
        story_id = str(field(record, "id", where)).split("|")[0]
        ids[" ".join(str(field(record, "story", where)).split())].add(story_id)
    return {story_id: f"{SOURCE}:{min(same)}" for same in ids.values() for story_id in same}


def _convert_record(
    record: dict[str, Any], where: str, groups: dict[str, str]
) -> Iterator[Converted]:
    story_id, turn_no, n_history = str(field(record, "id", where)).split("|")
    group = groups[story_id]
    base = f"{SOURCE}-{story_id}-{turn_no}-h{n_history}"
    docs = [document("story", field(record, "story", where))]
    history = [
        message
        for turn in field(record, "history_turns", where)
        for message in exchange(turn["question"], turn["answer"])
    ]
    question = field(record, "target_turn", where)["question"]
    judged = [*history, user(question)]
    if field(record, "ambiguity", where) != "ambiguous":
        for ex in both_settings(base, SOURCE, judged, docs, None, "clear"):
            yield group, ex
        return
    clar = field(record, "clarification_turn", where)
    clar_question = field(clar, "question", where).strip()
    for ex in both_settings(base, SOURCE, judged, docs, clar_question, "ambiguous"):
        yield group, ex
    for k, reply in enumerate(_resolving_replies(clar)):
        resolved = [*judged, assistant(clar_question), user(reply)]
        resolved_id = f"{base}-resolved{k}"
        for ex in both_settings(resolved_id, SOURCE, resolved, docs, None, "hard-negative"):
            yield group, ex


def _resolving_replies(clar: dict[str, Any]) -> list[str]:
    """The user's answers to the clarification that settle it (a bare "No" does not)."""
    replies = [str(a.get("clr_ans", "")).strip() for a in clar.get("answers", [])]
    return [r for r in replies if r and not _BARE_NO.match(r)][:MAX_RESOLVED_PER_TURN]
