"""Two adapters' AUC, accuracy and F1 on one file, paired bootstrap gaps.

Does a candidate rank a few dozen examples (say the off-domain probes) better or worse than the
shipped adapter? Reads two `--predictions` files of `askbetter eval` on the same examples and
prints each adapter's ROC-AUC and accuracy at its own threshold, then the difference of the AUCs
with a 95% interval from a paired bootstrap (the same resampled examples scored for both) and the
share of resamples where the candidate ranks better, the same for accuracy and F1-clarify (each at
the threshold its adapter ran with: the ship rule's figures on dev), then both AUCs on each source's examples
(each probe of a file that joins several; a source of one label has no AUC and says so). On a
few dozen examples a gap of a tenth can be noise; the interval says when it is not.

    python scripts/paired_auc.py runs/eval/offdomain.shipped.pred.jsonl runs/s46/judge/offdomain.pred.jsonl
"""

import argparse
from collections.abc import Callable

import numpy as np
from sklearn.metrics import f1_score, roc_auc_score

from askbetter.clarifier.evaluate import read_predictions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("shipped", help="the shipped adapter's --predictions")
    parser.add_argument("candidate", help="the candidate's --predictions on the same examples")
    parser.add_argument("--resamples", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    shipped = {p["id"]: p for p in read_predictions(args.shipped)}
    candidate = {p["id"]: p for p in read_predictions(args.candidate)}
    if shipped.keys() != candidate.keys():
        raise SystemExit(f"the two files score other examples ({len(shipped.keys() ^ candidate.keys())} "
                         "ids in one only): score the same file with both adapters")
    ids = sorted(shipped)
    labels = np.array([bool(shipped[i]["label"]) for i in ids])
    if labels.all() or not labels.any():
        raise SystemExit("every example has the same label: no AUC")
    scores = {name: np.array([float(rows[i]["score"]) for i in ids])
              for name, rows in (("shipped", shipped), ("candidate", candidate))}
    decisions = {name: np.array([bool(rows[i]["decision"]) for i in ids])
                 for name, rows in (("shipped", shipped), ("candidate", candidate))}
    figures: dict[str, Callable[[np.ndarray, str], float]] = {
        "AUC": lambda pick, name: float(roc_auc_score(labels[pick], scores[name][pick])),
        "accuracy": lambda pick, name: float(np.mean(decisions[name][pick] == labels[pick])),
        "F1-clarify": lambda pick, name: float(f1_score(labels[pick], decisions[name][pick], zero_division=0)),
    }
    everything = np.arange(len(ids))
    for name in ("shipped", "candidate"):
        print(f"{name:9s} AUC {figures['AUC'](everything, name):.3f}, "
              f"accuracy {figures['accuracy'](everything, name):.1%} (n={len(ids)})")
    rng = np.random.default_rng(args.seed)
    gaps: dict[str, list[float]] = {figure: [] for figure in figures}
    for _ in range(args.resamples):
        pick = rng.integers(0, len(ids), len(ids))
        if labels[pick].all() or not labels[pick].any():
            continue
        for figure, measure in figures.items():
            gaps[figure].append(measure(pick, "candidate") - measure(pick, "shipped"))
    for figure, figure_gaps in gaps.items():
        low, high = np.percentile(figure_gaps, [2.5, 97.5])
        print(f"candidate - shipped {figure}: {np.mean(figure_gaps):+.3f}, 95% interval [{low:+.3f}, {high:+.3f}]; "
              f"candidate ahead in {np.mean(np.array(figure_gaps) > 0):.0%} of {len(figure_gaps)} paired resamples")
    sources = np.array([str(shipped[i].get("source", "")) for i in ids])
    for source in sorted(set(sources)):
        mine = sources == source
        if labels[mine].all() or not labels[mine].any():
            print(f"  {source}: one label only, no AUC (n={mine.sum()})")
            continue
        print(f"  {source}: shipped AUC {roc_auc_score(labels[mine], scores['shipped'][mine]):.3f}, "
              f"candidate {roc_auc_score(labels[mine], scores['candidate'][mine]):.3f} (n={mine.sum()})")


if __name__ == "__main__":
    main()
