"""The `askbetter eval` report of one labelled file from `--predictions` files that each scored
part of it (the same adapter and threshold): after a build adds examples to a split, score only
the new ones and join them with an earlier run's scores. Scores are deterministic, so the report
is the command's on the whole file but for seconds per example. Every example of the file must be
in one of the prediction files (a later file's line wins); predictions of examples no longer in
the file are left out. `--predictions OUT` writes the joined predictions in the file's order (for
`scripts/paired_auc.py` against another adapter's run of the whole file).

    askbetter eval NEW.jsonl --no-questions --predictions runs/eval/new.pred.jsonl
    python scripts/join_predictions.py data/test.unseen.jsonl --threshold 0.394 \\
        --json runs/eval/test.unseen.json runs/eval/s53/test.unseen.pred.jsonl runs/eval/new.pred.jsonl
"""

import argparse
import sys
from pathlib import Path

from askbetter.clarifier.evaluate import (
    Prediction,
    format_report,
    load_examples,
    read_predictions,
    summarize,
    write_json,
    write_predictions,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("examples", help="the labelled JSONL file the report is of")
    parser.add_argument("predictions", nargs="+", help="`askbetter eval --predictions` files")
    parser.add_argument("--threshold", type=float, required=True, help="the threshold they ran with")
    parser.add_argument("--system", default="adapter bundled", help="the report's system name")
    parser.add_argument("--json", type=Path, help="write the report as JSON")
    parser.add_argument("--predictions", type=Path, dest="joined", help="write the joined predictions as JSONL")
    args = parser.parse_args()
    scored = {row["id"]: Prediction(**row) for path in args.predictions for row in read_predictions(path)}
    ids = [ex["id"] for ex in load_examples(args.examples)]
    if missing := [i for i in ids if i not in scored]:
        sys.exit(f"{len(missing)} examples of {args.examples} are in no predictions file, e.g. {missing[0]}")
    joined = [scored[i] for i in ids]
    report = summarize(joined, system=args.system, threshold=args.threshold)
    if args.joined:
        write_predictions(args.joined, joined)
    if args.json:
        write_json(args.json, report)
    print(format_report(report))


if __name__ == "__main__":
    main()
