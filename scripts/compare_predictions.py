"""Compare adapters on one labelled file, per kind and on the unresolved-pronoun subset.

`askbetter eval` reports per kind and per source; the comparisons that chose between training
stages also need the unresolved-pronoun examples (ids ending `-alone` / `-other-dialog`) apart
from the other underspecified ones, AmbigNQ's questions asked after another dialog apart, CANARD's hard negatives apart, and the other kinds together.
This reads the `--predictions` files of `askbetter eval` (one per adapter, same examples) and
prints one markdown row per file, at the threshold each adapter ran with (its `decision`) and at
the threshold that is best on these examples (in-sample: an upper bound, not a result).

    askbetter eval data/dev.jsonl --no-questions --adapter runs/s6/adapter --predictions runs/s6/dev.pred.jsonl
    python scripts/compare_predictions.py shipped=runs/eval/dev.pred.jsonl s6=runs/s6/dev.pred.jsonl
"""

import json
import sys
from collections.abc import Callable
from pathlib import Path

from askbetter.clarifier.metrics import classification, pick_threshold
from askbetter.clarifier.source_rewrites import UNRESOLVED_SUFFIXES
from askbetter.clarifier.source_topic_shift import SUFFIX as TOPIC_SHIFT_SUFFIX

SUBSETS: dict[str, Callable[[dict], bool]] = {
    "all": lambda r: True,
    "hard-negative": lambda r: r["kind"] == "hard-negative",
    "CANARD hard-negative": lambda r: r["kind"] == "hard-negative" and r["source"] == "canard",
    "clear": lambda r: r["kind"] == "clear",
    "ambiguous": lambda r: r["kind"] == "ambiguous",
    "missing-fact": lambda r: r["kind"] == "missing-fact",
    "unresolved pronouns": lambda r: r["id"].endswith(UNRESOLVED_SUFFIXES),
    "other underspecified": lambda r: (r["kind"] == "underspecified"
                                       and not r["id"].endswith(UNRESOLVED_SUFFIXES)),
    "all but unresolved": lambda r: not r["id"].endswith(UNRESOLVED_SUFFIXES),
    "AmbigNQ after a dialog": lambda r: r["id"].endswith(TOPIC_SHIFT_SUFFIX),
    "pre": lambda r: r["setting"] == "pre",
    "post": lambda r: r["setting"] == "post",
}


def _figures(rows: list[dict], decide: Callable[[dict], bool]) -> str:
    if not rows:
        return "-"
    f = classification([r["label"] for r in rows], [decide(r) for r in rows], [r["score"] for r in rows])
    auc = f" / {f['auc']:.3f}" if f["auc"] is not None else ""
    return f"{100 * f['accuracy']:.1f}%{auc}"


def main(args: list[str]) -> int:
    if not args or any("=" not in a for a in args):
        print(__doc__, file=sys.stderr)
        return 2
    runs = {name: [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
            for name, path in (a.split("=", 1) for a in args)}
    ids = {name: [r["id"] for r in rows] for name, rows in runs.items()}
    if len({tuple(v) for v in ids.values()}) > 1:
        raise SystemExit("the prediction files do not hold the same examples in the same order")
    first = next(iter(runs.values()))
    counts = {s: sum(map(test, first)) for s, test in SUBSETS.items()}
    print("| run (threshold) | " + " | ".join(f"{s} ({counts[s]})" for s in SUBSETS) + " |")
    print("|---|" + "--:|" * len(SUBSETS))
    for name, rows in runs.items():
        best = pick_threshold([r["label"] for r in rows], [r["score"] for r in rows])
        for label, decide in ((f"{name} (its own)", lambda r: r["decision"]),
                              (f"{name} (best here, {best:.3f})", lambda r, t=best: r["score"] >= t)):
            cells = [_figures([r for r in rows if test(r)], decide) for test in SUBSETS.values()]
            print(f"| {label} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
