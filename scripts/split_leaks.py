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

With `--predictions`, the per-example file of `askbetter eval --predictions` on one held-out split
of the folder (or the first examples of it), it then prints the figures of the examples listed as
leaks (by a turn or a passage) beside those of the others: examples, accuracy, F1-clarify and AUC
(`metrics.classification`), and accuracy / AUC (n) in the `CELLS` source and setting cells that
hold the most leaking examples, then the most others (`metrics.by_source`). Each example counts
at its own `decision`, so at the threshold that the eval run used. The exit status is the same as
without it; predictions that are not examples of one held-out split exit with 2.

    python scripts/split_leaks.py data
    python scripts/split_leaks.py data --predictions runs/eval/test.pred.jsonl
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from askbetter.clarifier import metrics
from askbetter.clarifier.evaluate import accuracy_cell, fmt_decimal, fmt_percent, read_predictions
from askbetter.clarifier.examples import Example, read_examples
from askbetter.clarifier.source_rewrites import PRONOUNS
from askbetter.clarifier.words import content_words, passage_key, turn_key

HELD_OUT = ("dev", "test")
GENERIC_TURN_WORDS = 3
HEADING_WORDS = 15
SHOW = 5
CELLS = 6
COLUMNS = ("examples", "turn shared", "turn leaks", "passage shared", "passage leaks")
GROUPS = ("leaking", "others")
_SENTENCE_END = re.compile(r"[.!?]")

Splits = dict[str, list[Example]]  # "train" and each of `HELD_OUT`: the examples of its file
Counts = dict[tuple[str, str], Counter[str]]  # per (source, split), the counts of `COLUMNS`
Leak = tuple[str, str, str]  # ("turn" or "passage", example id, the text)
Row = dict[str, Any]  # one line of a `--predictions` file


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


def read_splits(folder: Path) -> Splits:
    """The train and `HELD_OUT` examples of a built data folder, each file read once."""
    return {split: read_examples(folder / f"{split}.jsonl") for split in ("train", *HELD_OUT)}


def find_leaks(splits: Splits) -> tuple[Counts, list[Leak]]:
    """What the dev and test examples of `read_splits` share with its train examples (see the
    module)."""
    train = splits["train"]
    turns = {turn_key(ex["messages"][-1]["content"]) for ex in train}
    conversations = {conversation_key(ex) for ex in train}
    passages = {passage_key(d["text"]) for ex in train for d in ex["documents"]}
    counts: Counts = defaultdict(Counter)
    leaks: list[Leak] = []
    for split in HELD_OUT:
        for ex in splits[split]:
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


def held_out_split(splits: Splits, ids: set[str]) -> str | None:
    """The held-out split of `read_splits` that holds every one of `ids`; None when none does or
    `ids` is empty."""
    for split in HELD_OUT:
        if ids and ids <= {ex["id"] for ex in splits[split]}:
            return split
    return None


def group_figures(rows: list[Row]) -> dict[str, Any]:
    """`metrics.classification` of prediction rows at their own decisions, with
    `metrics.by_source` under "by_source"."""
    labels, decisions, scores = ([r[key] for r in rows] for key in ("label", "decision", "score"))
    sources, settings = ([r[key] for r in rows] for key in ("source", "setting"))
    return {**metrics.classification(labels, decisions, scores),
            "by_source": metrics.by_source(labels, decisions, scores, sources, settings)}


def leak_figures(rows: list[Row], leaking: set[str]) -> dict[str, Any]:
    """`group_figures` of the rows whose id is in `leaking` and of the others (keys `GROUPS`)."""
    return {"leaking": group_figures([r for r in rows if r["id"] in leaking]),
            "others": group_figures([r for r in rows if r["id"] not in leaking])}


def biggest_cells(figures: dict[str, Any]) -> list[tuple[str, str]]:
    """The `CELLS` (source, setting) cells of `leak_figures` with the most leaking examples, then
    the most others."""
    def size(group: str, source: str, setting: str) -> int:
        return figures[group]["by_source"].get(source, {}).get(setting, {"n": 0})["n"]

    cells = {(source, setting) for f in figures.values()
             for source, settings in f["by_source"].items() for setting in settings}
    return sorted(cells, key=lambda c: (*(-size(g, *c) for g in GROUPS), c))[:CELLS]


def format_leak_figures(figures: dict[str, Any]) -> list[str]:
    """`leak_figures` as lines: one column per group."""
    rows = [("examples", lambda f: f"{f['n']:,}"),
            ("need clarification", lambda f: f"{f['n_clarify']:,}"),
            ("accuracy", lambda f: fmt_percent(f["accuracy"])),
            ("F1-clarify", lambda f: fmt_decimal(f["f1_clarify"])),
            ("AUC", lambda f: fmt_decimal(f["auc"]))]
    lines = ["".join([" " * 20, *(g.rjust(24) for g in GROUPS)])]
    lines += ["".join([label.ljust(20), *(cell(figures[g]).rjust(24) for g in GROUPS)])
              for label, cell in rows]
    lines += ["".join([f"{source} {setting}".ljust(20),
                       *(accuracy_cell(figures[g]["by_source"].get(source, {}).get(setting))
                         for g in GROUPS)])
              for source, setting in biggest_cells(figures)]
    return lines


def print_counts(counts: Counts, leaks: list[Leak]) -> None:
    """The table of `COLUMNS` per source and split, then the leaks (`SHOW` of each)."""
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


def main(folder: str, predictions: str | None = None) -> int:
    """Print the leaks of `folder` (and, given a `--predictions` file, the figures of its leaking
    examples beside the others'); 1 when there are leaks, 2 for predictions of no held-out
    split, else 0."""
    splits = read_splits(Path(folder))
    counts, leaks = find_leaks(splits)
    print_counts(counts, leaks)
    if predictions is not None:
        rows = read_predictions(predictions)
        split = held_out_split(splits, {r["id"] for r in rows})
        if split is None:
            print(f"{predictions}: not examples of one held-out split of {folder}",
                  file=sys.stderr)
            return 2
        leaking = {example_id for _, example_id, _ in leaks}
        print(f"\n{split} predictions ({predictions}, {len(rows):,} examples), at their own "
              "decisions:")
        print("\n".join(format_leak_figures(leak_figures(rows, leaking))))
    return 1 if leaks else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", help="a built data folder (train/dev/test.jsonl)")
    parser.add_argument("--predictions", metavar="FILE",
                        help="the --predictions file of `askbetter eval` on one held-out split")
    args = parser.parse_args()
    sys.exit(main(args.folder, args.predictions))
