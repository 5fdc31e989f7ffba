"""Surface cues of written turns, per label: what a model could learn instead of the content.

For JSONL files in the example schema (the project's written turns, a probe), prints one row per
cue with its value among the CLARIFY turns and among the CLEAR ones; a wide gap is a shortcut the
writers left (clarifier/written/README.md reports these). Counted on the files as written (the
build's `source_written.uncued` later evens out the case and drops acknowledgements).

    python scripts/written_cues.py clarifier/written/legal-tax-pensions-visas.jsonl
    python scripts/written_cues.py clarifier/written/*.jsonl
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from pathlib import Path

from askbetter.clarifier.examples import Example, needs_clarification, read_examples

Cue = Callable[[list[Example]], str]


def _share(test: Callable[[Example], bool]) -> Cue:
    return lambda exs: f"{100 * sum(map(test, exs)) / len(exs):.0f}% of {len(exs)}" if exs else "-"


def _mean_words(exs: list[Example]) -> str:
    return f"{sum(len(_turn(ex).split()) for ex in exs) / len(exs):.1f} ({len(exs)})" if exs else "-"


def _turn(ex: Example) -> str:
    return ex["messages"][-1]["content"]


def _untitled(exs: list[Example]) -> str:
    docs = [d for ex in exs for d in ex["documents"]]
    return f"{100 * sum(not d.get('title') for d in docs) / len(docs):.0f}% of {len(docs)}" if docs else "-"


CUES: list[tuple[str, Callable[[Example], bool], Cue]] = [
    ("judged turn starts lower case", lambda ex: True, _share(lambda ex: _turn(ex)[:1].islower())),
    ("judged turn holds a digit", lambda ex: True, _share(lambda ex: bool(re.search(r"\d", _turn(ex))))),
    ("judged turn ends with '?'", lambda ex: True, _share(lambda ex: _turn(ex).rstrip().endswith("?"))),
    ("mean words, turn alone", lambda ex: len(ex["messages"]) == 1, _mean_words),
    ("mean words, turn after a dialog", lambda ex: len(ex["messages"]) > 1, _mean_words),
    ("pre: has a dialog", lambda ex: ex["setting"] == "pre", _share(lambda ex: len(ex["messages"]) > 1)),
    ("post: has a dialog", lambda ex: ex["setting"] == "post", _share(lambda ex: len(ex["messages"]) > 1)),
    ("post: untitled passages", lambda ex: ex["setting"] == "post", _untitled),
]


def cue_table(examples: list[Example]) -> list[tuple[str, str, str]]:
    """(cue, its value among the CLARIFY examples, among the CLEAR ones) for every cue."""
    rows = []
    for name, among, value in CUES:
        subset = [ex for ex in examples if among(ex)]
        rows.append((name, value([ex for ex in subset if needs_clarification(ex)]),
                     value([ex for ex in subset if not needs_clarification(ex)])))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", type=Path, help="JSONL files in the example schema")
    examples = [ex for path in parser.parse_args(argv).files for ex in read_examples(path)]
    print(f"{len(examples)} examples, {sum(map(needs_clarification, examples))} CLARIFY")
    print(f"{'cue':34} {'CLARIFY':>14} {'CLEAR':>14}")
    for name, clarify, clear in cue_table(examples):
        print(f"{name:34} {clarify:>14} {clear:>14}")


if __name__ == "__main__":
    main()
