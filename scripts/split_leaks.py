"""Text that the dev and test examples of a built data folder share with its train examples.

`askbetter data build` splits by conversation, story, rule page or question, so that a model is
not tested on text it was trained on. This reads a built folder (`train.jsonl`, `dev.jsonl`,
`test.jsonl`) and counts, per source and held-out split, the examples that share with a train
example (of any source)
- the judged turn: the last user message, lowercased, punctuation dropped;
- a passage: a document's text, whitespace collapsed;
then prints the leaks among them (`SHOW` of each) and exits with 1 when there are any.

Not every shared text is a leak. A judged turn is one when the example opens its conversation
(the turn is the whole question) or a train example has the same conversation up to it; a
follow-up after another history asks about something else. A generic turn (`is_generic`) is never
one: "yes" and "no" (OR-ShARC's replies), "who?", "2019" (PACIFIC's), or a question about a
pronoun that names nothing else ("did he win any awards?": CANARD's pronoun questions, asked
alone, come from dialogs about different people). A passage is one unless it is a heading
(`is_heading`: "Cash Flows", "Revenue", PACIFIC paragraphs that only name a section of a
report). Identical text only: a window of a passage, or two dialogs over one text that keep
different parts of it, go unseen.

    python scripts/split_leaks.py data
"""

from __future__ import annotations

import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

from askbetter.clarifier.examples import Example, read_examples
from askbetter.clarifier.source_rewrites import PRONOUNS
from askbetter.clarifier.words import content_words

HELD_OUT = ("dev", "test")
GENERIC_TURN_WORDS = 3
HEADING_WORDS = 15
SHOW = 5
COLUMNS = ("examples", "turn shared", "turn leaks", "passage shared", "passage leaks")
_WORD = re.compile(r"[a-z0-9]+")
_SENTENCE_END = re.compile(r"[.!?]")

Counts = dict[tuple[str, str], Counter[str]]  # per (source, split), the counts of `COLUMNS`
Leak = tuple[str, str, str]  # ("turn" or "passage", example id, the text)


def turn_key(text: str) -> str:
    """A turn as compared: lowercased words, punctuation and spacing dropped."""
    return " ".join(_WORD.findall(text.lower()))


def passage_key(text: str) -> str:
    """A passage as compared: its text with whitespace collapsed."""
    return " ".join(text.split())


def conversation_key(ex: Example) -> tuple[tuple[str, str], ...]:
    """An example's messages as compared: role and `turn_key` of each."""
    return tuple((m["role"], turn_key(m["content"])) for m in ex["messages"])


def is_generic(turn: str) -> bool:
    """A turn (`turn_key`) that many conversations share: at most `GENERIC_TURN_WORDS` words, or
    a question about a pronoun's referent that names nothing else (at most
    `GENERIC_TURN_WORDS` content words: "did he win any awards")."""
    words = turn.split()
    return len(words) <= GENERIC_TURN_WORDS or (
        bool(PRONOUNS.intersection(words)) and len(content_words(turn)) <= GENERIC_TURN_WORDS
    )


def is_heading(text: str) -> bool:
    """A passage (`passage_key`) that only names a section: at most `HEADING_WORDS` words, no
    sentence end."""
    return len(text.split()) <= HEADING_WORDS and not _SENTENCE_END.search(text)


def find_leaks(folder: Path) -> tuple[Counts, list[Leak]]:
    """What the dev and test files of `folder` share with its train file (see the module)."""
    train = read_examples(folder / "train.jsonl")
    turns = {turn_key(ex["messages"][-1]["content"]) for ex in train}
    conversations = {conversation_key(ex) for ex in train}
    passages = {passage_key(d["text"]) for ex in train for d in ex["documents"]}
    counts: Counts = defaultdict(Counter)
    leaks: list[Leak] = []
    for split in HELD_OUT:
        for ex in read_examples(folder / f"{split}.jsonl"):
            row = counts[(ex["source"], split)]
            row["examples"] += 1
            turn = turn_key(ex["messages"][-1]["content"])
            if turn in turns:
                row["turn shared"] += 1
                if not is_generic(turn) and (
                    len(ex["messages"]) == 1 or conversation_key(ex) in conversations
                ):
                    row["turn leaks"] += 1
                    leaks.append(("turn", ex["id"], turn))
            shared = [t for d in ex["documents"] if (t := passage_key(d["text"])) in passages]
            row["passage shared"] += bool(shared)
            leaking = [t for t in shared if not is_heading(t)]
            row["passage leaks"] += bool(leaking)
            leaks += [("passage", ex["id"], t) for t in leaking]
    return counts, leaks


def main(folder: str) -> int:
    counts, leaks = find_leaks(Path(folder))
    header = ["source", "split", *COLUMNS]
    rows = [[source, split, *(str(row[c]) for c in COLUMNS)]
            for (source, split), row in sorted(counts.items())]  # fmt: skip
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, *rows]:
        cells = (c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
        print("  ".join(cells))
    for what in ("turn", "passage"):
        found = [(example_id, text) for w, example_id, text in leaks if w == what]
        texts, examples = len({t for _, t in found}), len({i for i, _ in found})
        print(f"\n{what} leaks: {texts} texts in {examples} examples" + (":" if found else ""))
        for example_id, text in found[:SHOW]:
            print(f"  {example_id}: {text[:120]!r}")
    return 1 if leaks else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
