"""Does a threshold picked on some sources carry over to a source it never saw?

The issue's held-out data comes from another source; this asks the question on dev's sources.
For each source in one `askbetter eval --predictions` file, the threshold is picked as `askbetter
calibrate` picks it (`metrics.pick_threshold`, accuracy on every other source) and applied to the
held-out source, beside the adapter's own threshold (the one its predictions ran with, picked on
all of dev), a fixed 0.5, and the held-out source's own best threshold (in-sample: an upper
bound, not a result). One markdown row per source, then the unweighted mean over sources (F1's
over those where it counts anything: n/a where no example needs clarifying and none is asked).

    askbetter eval data/dev.jsonl --no-questions --predictions runs/eval/dev.pred.jsonl
    python scripts/threshold_transfer.py runs/eval/dev.pred.jsonl
"""

import argparse
import sys

from askbetter.clarifier.evaluate import fmt_decimal, read_predictions
from askbetter.clarifier.metrics import classification, pick_threshold


def _figures(rows: list[dict], threshold: float | None) -> tuple[float, float | None]:
    """Accuracy and F1-clarify (None: no clarify labelled nor predicted) at `threshold`; None: the
    decisions the predictions hold."""
    decisions = [r["decision"] if threshold is None else r["score"] >= threshold for r in rows]
    figures = classification([r["label"] for r in rows], decisions, [r["score"] for r in rows])
    accuracy = figures["accuracy"]
    assert accuracy is not None  # None only for no rows or scores not finite: main's pick_threshold refused those
    return accuracy, figures["f1_clarify"]


def _mean_cell(accuracies: list[float], f1s: list[float]) -> str:
    """The mean accuracy and the mean F1 over the sources that have one (how many, when not all)."""
    f1 = fmt_decimal(sum(f1s) / len(f1s) if f1s else None)
    of = f" (F1 of {len(f1s)})" if len(f1s) < len(accuracies) else ""
    return f"{sum(accuracies) / len(accuracies):.3f}, {f1}{of}"


def main(path: str) -> None:
    rows = read_predictions(path)
    sources = sorted({r["source"] for r in rows})
    if len(sources) < 2:
        sys.exit(f"{path}: examples of {len(sources)} source(s); holding one out needs two or more")
    columns = ("picked on the others", "the adapter's own", "0.5", "held-out best (in-sample)")
    print(f"| held-out source | n | {' | '.join(f'{c}: accuracy, F1' for c in columns)} |")
    print("|---|---|" + "---|" * len(columns))
    accuracies: list[list[float]] = [[] for _ in columns]
    f1s: list[list[float]] = [[] for _ in columns]
    for source in sources:
        held = [r for r in rows if r["source"] == source]
        others = [r for r in rows if r["source"] != source]
        picked = pick_threshold([r["label"] for r in others], [r["score"] for r in others])
        best = pick_threshold([r["label"] for r in held], [r["score"] for r in held])
        cells = []
        for i, threshold in enumerate((picked, None, 0.5, best)):
            accuracy, f1 = _figures(held, threshold)
            accuracies[i].append(accuracy)
            if f1 is not None:
                f1s[i].append(f1)
            cells.append(f"{accuracy:.3f}, {fmt_decimal(f1)}" + (f" (t {threshold:.3f})" if i in (0, 3) else ""))
        print(f"| {source} | {len(held)} | {' | '.join(cells)} |")
    means = [_mean_cell(a, f) for a, f in zip(accuracies, f1s)]
    print(f"| mean over {len(sources)} sources | | {' | '.join(means)} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("predictions", help="the --predictions file of `askbetter eval`")
    main(parser.parse_args().predictions)
