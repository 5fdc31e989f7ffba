"""Does an opening greeting change the clarifier's decision? A label-preserving perturbation.

A greeting exchange before the conversation ("Hi!" / "Hello! How can I help you today?") resolves
nothing and makes nothing ambiguous, so a clarifier that reads the conversation should decide the
same with it as without. `write` copies a file of examples with one such exchange
(`smalltalk.PROBE_OPENINGS`, picked by the example's id; training's greetings are others) before
each conversation; `flips` compares the `--predictions` of
`askbetter eval` on the plain and the prefixed file: accuracy of each, decisions that changed,
the mean absolute change of the score, and the changed decisions per source and setting.

    python scripts/smalltalk_prefix.py write data/dev.unseen.jsonl runs/eval/dev.greet.jsonl
    askbetter eval data/dev.unseen.jsonl --no-questions --predictions runs/eval/dev.pred.jsonl
    askbetter eval runs/eval/dev.greet.jsonl --no-questions --predictions runs/eval/dev.greet.pred.jsonl
    python scripts/smalltalk_prefix.py flips runs/eval/dev.pred.jsonl runs/eval/dev.greet.pred.jsonl
"""

import argparse
from collections import Counter
from pathlib import Path

from askbetter.clarifier.evaluate import read_predictions
from askbetter.clarifier.examples import read_examples, write_examples
from askbetter.clarifier.smalltalk import PROBE_OPENINGS, pick, with_opening


def flips(plain_file: Path, prefixed_file: Path) -> str:
    """Accuracy of both runs, decisions that changed and the mean score change, as text."""
    plain = {p["id"]: p for p in read_predictions(plain_file)}
    prefixed = read_predictions(prefixed_file)
    missing = [p["id"] for p in prefixed if p["id"] not in plain]
    if missing or not prefixed:
        raise SystemExit(f"{prefixed_file}: {len(missing)} of {len(prefixed)} ids are not in {plain_file}")
    pairs = [(plain[p["id"]], p) for p in prefixed]
    n = len(pairs)
    right = (sum(a["decision"] == a["label"] for a, _ in pairs), sum(b["decision"] == b["label"] for _, b in pairs))
    changed = [(a, b) for a, b in pairs if a["decision"] != b["decision"]]
    to_clear = sum(a["decision"] for a, _ in changed)
    drift = sum(abs(a["score"] - b["score"]) for a, b in pairs) / n
    cells = Counter((b["source"], b["setting"]) for _, b in pairs)
    changed_in = Counter((b["source"], b["setting"]) for _, b in changed)
    per_cell = "; ".join(f"{source} {setting} {changed_in[source, setting]} of {size}"
                         for (source, setting), size in sorted(cells.items()))
    return (f"{n} examples: accuracy {right[0] / n:.1%} plain, {right[1] / n:.1%} with an opening greeting\n"
            f"decisions changed: {len(changed)} ({len(changed) / n:.1%}): {to_clear} from clarify to clear, "
            f"{len(changed) - to_clear} from clear to clarify; mean |score change| {drift:.3f}\n"
            f"changed per source and setting: {per_cell}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("write", help="copy examples with a greeting before each conversation")
    p.add_argument("examples", type=Path, help="the examples file to copy")
    p.add_argument("out", type=Path, help="the examples file to write")
    p = sub.add_parser("flips", help="compare the predictions on the plain and the prefixed file")
    p.add_argument("plain", type=Path, help="--predictions on the plain file")
    p.add_argument("prefixed", type=Path, help="--predictions on the prefixed file")
    args = parser.parse_args()
    if args.command == "write":
        examples = read_examples(args.examples)
        write_examples(args.out, [with_opening(e, pick(e["id"], PROBE_OPENINGS)) for e in examples])
    else:
        print(flips(args.plain, args.prefixed))
