"""PACIFIC (Deng et al., EMNLP 2022): proactive conversational QA over a financial table and text.

Each dialogue is grounded in one table and its paragraphs. A turn with `req_clari` asks a question
the data leaves open (which year, which segment): clarify, the reference being the annotated
clarification `answer[0]`, kind `underspecified`. Other turns are clear. Hard negatives:
(a) the turn right after a clarification, where the user's answer is judged with the clarifying
exchange in the history; (b) the vague turn with the next turn's disambiguated
`original_question` in its place. Both settings: `post` with the table rendered as text (one
`cell | cell | cell` line per row) and the paragraphs, `pre` without them. Grouped by dialogue.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from askbetter.clarifier.source_common import (
    Converted,
    both_settings,
    document,
    exchange,
    field,
    load_json,
    require_file,
    user,
)
from askbetter.clarifier.types import Document, Message

SOURCE = "pacific"
FOLDERS = ("pacific",)
FILE = "validation.json"  # test.json carries no labels


def convert(raw_dir: Path, seed: int = 13) -> Iterator[Converted]:
    """Yield (dialogue group, example) for every turn of the labelled validation dialogues."""
    del seed  # nothing random here
    path = require_file(raw_dir / FOLDERS[0], FILE)
    for i, dialogue in enumerate(load_json(path)):
        yield from _convert_dialogue(dialogue, f"{path} dialogue {i}")


def render_table(rows: list[list[Any]]) -> str:
    """One line per non-empty row, cells joined by ` | `."""
    lines = (" | ".join(" ".join(str(c).split()) for c in row) for row in rows)
    return "\n".join(line for line in lines if line.replace("|", "").strip())


def render_answer(turn: dict[str, Any]) -> str:
    """The answer as the assistant would say it: spans joined, numbers with their scale."""
    answer = turn.get("answer")
    text = ", ".join(map(str, answer)) if isinstance(answer, list) else str(answer)
    scale = turn.get("scale") or ""
    if scale == "percent":
        return f"{text}%"
    return f"{text} {scale}" if scale else text


def _documents(dialogue: dict[str, Any], where: str) -> list[Document]:
    table = field(field(dialogue, "table", where), "table", where)
    paragraphs = sorted(field(dialogue, "paragraphs", where), key=lambda p: p.get("order", 0))
    return [document("table", render_table(table), "table")] + [
        document(f"p{p.get('order', k)}", p["text"]) for k, p in enumerate(paragraphs, 1)
    ]


def _convert_dialogue(dialogue: dict[str, Any], where: str) -> Iterator[Converted]:
    uid = field(field(dialogue, "table", where), "uid", where)
    group = f"{SOURCE}:{uid}"
    docs = _documents(dialogue, where)
    turns = sorted(field(dialogue, "questions", where), key=lambda t: t["order"])
    history: list[Message] = []
    for i, turn in enumerate(turns):
        base = f"{SOURCE}-{uid}-{turn['order']}"
        question = field(turn, "question", where)
        if turn.get("req_clari"):
            reference = str(field(turn, "answer", where)[0])
            kind = "underspecified"
        else:
            reference = None
            after_clarification = i > 0 and turns[i - 1].get("req_clari")
            kind = "hard-negative" if after_clarification else "clear"
        for ex in both_settings(base, SOURCE, [*history, user(question)], docs, reference, kind):
            yield group, ex
        if turn.get("req_clari") and i + 1 < len(turns):
            disambiguated = turns[i + 1].get("original_question") or ""
            if disambiguated.strip() and disambiguated.strip() != question.strip():
                messages = [*history, user(disambiguated)]
                for ex in both_settings(
                    f"{base}-disambiguated", SOURCE, messages, docs, None, "hard-negative"
                ):
                    yield group, ex
        history += exchange(question, reference or render_answer(turn))
