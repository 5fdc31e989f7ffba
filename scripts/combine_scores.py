"""Would two adapters decide better together? Their scores combined by a weighted mean of log-odds.

Reads two `--predictions` files of `askbetter eval` / `askbetter calibrate` on the same labelled
examples (dev) and prints, for each weight on A: the ROC-AUC of the combined score on all of them,
and the accuracy and F1-clarify on a random half with the threshold picked on the other half (so
the threshold is not scored in-sample; F1 reads n/a on a half where no example needs clarifying
and none is asked, AUC on examples of one label). Weight 0 is B alone.

    python scripts/combine_scores.py runs/fresh1/dev2.pred.jsonl runs/eval/dev.s19.pred.jsonl
"""

import argparse
import random

from scipy.special import expit, logit
from sklearn.metrics import roc_auc_score

from askbetter.clarifier.evaluate import fmt_decimal, read_predictions
from askbetter.clarifier.metrics import classification, pick_threshold

WEIGHTS = (0.0, 0.2, 0.35, 0.5)
EPS = 1e-6  # scores are clipped to [EPS, 1 - EPS] so that a score of 0 or 1 has finite log-odds


def combined(a: float, b: float, weight: float) -> float:
    """The probability whose log-odds are `weight` * A's + (1 - `weight`) * B's."""
    a, b = (min(max(p, EPS), 1 - EPS) for p in (a, b))
    return float(expit(weight * logit(a) + (1 - weight) * logit(b)))


def main(path_a: str, path_b: str, seed: int = 0) -> None:
    a, b = ({row["id"]: row for row in read_predictions(path)} for path in (path_a, path_b))
    ids = sorted(set(a) & set(b))
    calibration = random.Random(seed).sample(ids, len(ids) // 2)
    held = sorted(set(ids) - set(calibration))
    labels = {i: bool(a[i]["label"]) for i in ids}
    for weight in WEIGHTS:
        score = {i: combined(a[i]["score"], b[i]["score"], weight) for i in ids}
        threshold = pick_threshold([labels[i] for i in calibration], [score[i] for i in calibration])
        half = classification([labels[i] for i in held], [score[i] >= threshold for i in held],
                              [score[i] for i in held])
        every = [labels[i] for i in ids]
        auc = roc_auc_score(every, [score[i] for i in ids]) if len(set(every)) == 2 else None
        print(f"weight on A {weight:.2f}: held-out half accuracy {half['accuracy']:.3f}, "
              f"F1 {fmt_decimal(half['f1_clarify'])} (n={len(held)}); AUC on all {fmt_decimal(auc)} (n={len(ids)})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("predictions_a", help="adapter A's --predictions file")
    parser.add_argument("predictions_b",
                        help="adapter B's --predictions file, on the same examples")
    args = parser.parse_args()
    main(args.predictions_a, args.predictions_b)
