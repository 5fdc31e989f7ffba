"""Compare adapters on one labelled file, per kind and on the unresolved-pronoun subset.

`askbetter eval` reports per kind and per source; the comparisons that chose between training
stages also need apart: the unresolved-pronoun examples (ids ending `-alone` / `-other-dialog`)
and the other underspecified ones, AmbigNQ's questions asked after another dialog, AmbigNQ's
`post` examples (whose distractor passages come from related questions since session 10; apart,
those with two passages and those among others, see `crowding`),
CANARD's `pre` hard negatives, and the other kinds together.
It also shows CANARD's pronoun questions over passages (`source_referents`): those naming two
referents, and their clear twins (the history naming the referent, or the question naming it after
another dialog), the standalone rewrites asked after another dialog, and TREC iKAT's follow-ups
over its answers as passages (`source_answers`: the clear ones, the same over their topic's other
answers, and the pronoun questions after another dialog over other topics' answers), and CANARD's
settled follow-ups among windows of their own passage (`source_followups.CHUNKED_SUFFIX`). This
reads the `--predictions` files of `askbetter eval` (one per adapter, same examples) and prints one
markdown row per file (each cell: accuracy, and where the subset holds both labels F1-clarify and
AUC, the figures the ship rule reads), at the threshold each adapter ran with (its `decision`), at the threshold that is
best on these examples (in-sample: an upper bound, not a result), and at each threshold given
with `--at` (a threshold scan).

    askbetter eval data/dev.jsonl --no-questions --adapter runs/s6/adapter --predictions runs/s6/dev.pred.jsonl
    python scripts/compare_predictions.py shipped=runs/eval/dev.pred.jsonl s6=runs/s6/dev.pred.jsonl
    python scripts/compare_predictions.py --at=0.5,0.65 s6=runs/s6/dev.pred.jsonl
"""

import argparse
from collections.abc import Callable

from askbetter.clarifier.crowding import SUFFIX as CROWDED_SUFFIX
from askbetter.clarifier.evaluate import read_predictions
from askbetter.clarifier.metrics import classification, pick_threshold
from askbetter.clarifier.source_answers import OTHER_DIALOG_SUFFIX as OVER_OTHER_ANSWERS
from askbetter.clarifier.source_answers import SUFFIX as OVER_ANSWERS
from askbetter.clarifier.source_answers import TOPIC_SUFFIX as OVER_TOPIC_ANSWERS
from askbetter.clarifier.source_followups import CHUNKED_SUFFIX as FOLLOWUP_CHUNKED_SUFFIX
from askbetter.clarifier.source_followups import SUFFIX as FOLLOWUP_SUFFIX
from askbetter.clarifier.source_referents import NAMED, RESOLVED, TWO
from askbetter.clarifier.source_rewrites import AFTER_DIALOG, STANDALONE, UNRESOLVED_SUFFIXES
from askbetter.clarifier.source_topic_shift import SUFFIX as TOPIC_SHIFT_SUFFIX


def _ambignq_post(r: dict) -> bool:
    return r["source"] == "ambignq" and r["setting"] == "post"


SUBSETS: dict[str, Callable[[dict], bool]] = {
    "all": lambda r: True,
    "hard-negative": lambda r: r["kind"] == "hard-negative",
    "CANARD pre hard-negative": lambda r: (r["kind"] == "hard-negative" and r["source"] == "canard"
                                           and r["setting"] == "pre"),
    "clear": lambda r: r["kind"] == "clear",
    "ambiguous": lambda r: r["kind"] == "ambiguous",
    "missing-fact": lambda r: r["kind"] == "missing-fact",
    "unresolved pronouns": lambda r: r["id"].endswith(UNRESOLVED_SUFFIXES),
    "other underspecified": lambda r: (r["kind"] == "underspecified"
                                       and not r["id"].endswith(UNRESOLVED_SUFFIXES)),
    "all but unresolved": lambda r: not r["id"].endswith(UNRESOLVED_SUFFIXES),
    "AmbigNQ after a dialog": lambda r: r["source"] == "ambignq" and TOPIC_SHIFT_SUFFIX in r["id"],
    "AmbigNQ post": _ambignq_post,
    "AmbigNQ post, two passages": lambda r: (_ambignq_post(r)
                                             and not r["id"].endswith(CROWDED_SUFFIX)),
    "AmbigNQ post among others": lambda r: r["id"].endswith(CROWDED_SUFFIX),
    "CANARD two referents": lambda r: r["id"].endswith(TWO),
    "CANARD referent resolved": lambda r: r["id"].endswith(RESOLVED),
    "CANARD referent named after a dialog": lambda r: r["id"].endswith(NAMED),
    "standalone rewrite after a dialog": lambda r: r["id"].endswith(STANDALONE + AFTER_DIALOG),
    "CANARD follow-ups over passages": lambda r: r["id"].endswith(FOLLOWUP_SUFFIX),
    "CANARD follow-ups among chunks": lambda r: r["id"].endswith(FOLLOWUP_CHUNKED_SUFFIX),
    "iKAT follow-ups over answers": lambda r: (r["id"].endswith(OVER_ANSWERS)
                                               and not r["id"].endswith(OVER_OTHER_ANSWERS)),
    "iKAT pronouns over other answers": lambda r: r["id"].endswith(OVER_OTHER_ANSWERS),
    "iKAT follow-ups over topic answers": lambda r: r["id"].endswith(OVER_TOPIC_ANSWERS),
    "pre": lambda r: r["setting"] == "pre",
    "post": lambda r: r["setting"] == "post",
}


def _figures(rows: list[dict], decide: Callable[[dict], bool]) -> str:
    if not rows:
        return "-"
    labels, scores = [r["label"] for r in rows], [r["score"] for r in rows]
    f = classification(labels, [decide(r) for r in rows], scores)
    both = f" / {f['f1_clarify']:.3f} / {f['auc']:.3f}" if f["auc"] is not None else ""
    accuracy = f["accuracy"]
    assert accuracy is not None  # None only for no rows or scores not finite: main's pick_threshold refused those
    return f"{100 * accuracy:.1f}%{both}"


def run_file(arg: str) -> tuple[str, str]:
    """A NAME=PATH argument as (name, path)."""
    name, is_pair, path = arg.partition("=")
    if not is_pair:
        raise argparse.ArgumentTypeError(f"{arg!r} is not NAME=PATH")
    return name, path


def thresholds(arg: str) -> list[float]:
    """An `--at` argument: thresholds separated by commas."""
    return [float(t) for t in arg.split(",")]


def _at_least(threshold: float) -> Callable[[dict], bool]:
    """Clarify when the score reaches `threshold`."""
    return lambda r: r["score"] >= threshold


def main(files: list[tuple[str, str]], scan: list[float]) -> None:
    runs = {name: read_predictions(path) for name, path in files}
    ids = {name: [r["id"] for r in rows] for name, rows in runs.items()}
    if len({tuple(v) for v in ids.values()}) > 1:
        raise SystemExit("the prediction files do not hold the same examples in the same order")
    first = next(iter(runs.values()))
    counts = {s: sum(map(test, first)) for s, test in SUBSETS.items()}
    print("| run (threshold) | " + " | ".join(f"{s} ({counts[s]})" for s in SUBSETS) + " |")
    print("|---|" + "--:|" * len(SUBSETS))
    for name, rows in runs.items():
        best = pick_threshold([r["label"] for r in rows], [r["score"] for r in rows])
        rules = [(f"{name} (its own)", lambda r: r["decision"]),
                 (f"{name} (best here, {best:.3f})", _at_least(best)),
                 *((f"{name} (at {t:.3f})", _at_least(t)) for t in scan)]
        for label, decide in rules:
            cells = [_figures([r for r in rows if test(r)], decide) for test in SUBSETS.values()]
            print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=run_file, metavar="NAME=PATH",
                        help="a run's name and its --predictions file")
    parser.add_argument("--at", type=thresholds, action="extend", default=[], metavar="T,...",
                        help="thresholds to score every run at as well (repeatable)")
    args = parser.parse_intermixed_args()
    main(args.runs, args.at)
