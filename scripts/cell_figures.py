"""Accuracy and AUC per setting, the judged turn alone or after a dialog.

`askbetter eval` reports each setting and source; the off-domain weak cells (a `pre` turn after a
dialog, a `post` turn alone) cut across both. Reads the labelled file the predictions scored (for
each example's dialog) and one or more `askbetter eval --predictions` files of it, and prints one
line per file: each cell's accuracy at the threshold the file ran with, AUC (n/a where it holds one
label) and size.

    python scripts/cell_figures.py runs/eval/offdomain.jsonl runs/eval/offdomain.shipped.pred.jsonl runs/s56/judge/offdomain.pred.jsonl
"""

import argparse

from askbetter.clarifier.evaluate import accuracy_cell, load_examples, read_predictions
from askbetter.clarifier.metrics import SETTINGS, classification


def cells(examples_path: str, predictions_path: str) -> list[str]:
    """`"pre/alone 76.0% / 0.812 (n=123)"` (accuracy / AUC, as `askbetter eval`'s table) for each
    cell the predictions hold: settings in their fixed order, in each the turn alone first, then
    the turn after a dialog."""
    dialog = {ex["id"]: len(ex["messages"]) > 1 for ex in load_examples(examples_path)}
    predictions = read_predictions(predictions_path)
    if missing := [p["id"] for p in predictions if p["id"] not in dialog]:
        raise SystemExit(f"{len(missing)} predictions of {predictions_path} score examples {examples_path} "
                         f"lacks, e.g. {missing[0]}: give the file they scored")
    lines = []
    for setting in SETTINGS:
        for after_dialog in (False, True):
            rows = [p for p in predictions if p["setting"] == setting and dialog[p["id"]] == after_dialog]
            if rows:
                figures = classification([bool(p["label"]) for p in rows], [bool(p["decision"]) for p in rows],
                                         [p["score"] for p in rows])
                lines.append(f"{setting}/{'dialog' if after_dialog else 'alone'} {accuracy_cell(figures).strip()}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("examples", help="the labelled JSONL file the predictions scored")
    parser.add_argument("predictions", nargs="+", help="`askbetter eval --predictions` files of it")
    args = parser.parse_args()
    for path in args.predictions:
        print(path, " | ".join(cells(args.examples, path)))


if __name__ == "__main__":
    main()
