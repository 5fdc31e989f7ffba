"""How far the wording of the last user turn alone goes, per source and setting.

A TF-IDF (words and word pairs) + logistic-regression classifier sees only the judged turn and
whether a history exists, never the history's text nor the passages. It is trained on the train
split, its regularisation picked on dev by AUC, and scored on the test split. Where the adapter's
test AUC (`askbetter eval --json`, `by_source`) is no better than this, the adapter has learnt
no more than surface cues of the question there.

    python scripts/surface_baseline.py data
"""

import argparse
from collections import defaultdict
from pathlib import Path

from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from askbetter.clarifier.examples import needs_clarification, read_examples

C_GRID = (0.1, 0.3, 1.0, 3.0)

Cell = tuple[str, str]  # (source, setting)


def _texts_and_labels(path: Path) -> dict[Cell, tuple[list[str], list[bool]]]:
    cells: dict[Cell, tuple[list[str], list[bool]]] = defaultdict(lambda: ([], []))
    for ex in read_examples(path):
        texts, labels = cells[(ex["source"], ex["setting"])]
        history = " HAS_HISTORY" if len(ex["messages"]) > 1 else ""
        texts.append(ex["messages"][-1]["content"] + history)
        labels.append(needs_clarification(ex))
    return cells


def _scores(model: LogisticRegression, vectorizer: TfidfVectorizer, texts: list[str]):
    return model.predict_proba(vectorizer.transform(texts))[:, 1]


def _auc(labels: list[bool], scores) -> float | None:
    return roc_auc_score(labels, scores) if len(set(labels)) == 2 else None


def main(data_dir: Path) -> None:
    train, dev, test = (_texts_and_labels(data_dir / f"{split}.jsonl")
                        for split in ("train", "dev", "test"))
    print("| source | setting | train | test | best C on dev | dev AUC | test AUC |")
    print("|---|---|--:|--:|--:|--:|--:|")
    for cell in sorted(test):
        if cell not in train or len(set(train[cell][1])) < 2:
            continue
        vectorizer = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)
        features = vectorizer.fit_transform(train[cell][0])
        fits = []
        for c in C_GRID:
            model = LogisticRegression(C=c, max_iter=2000).fit(features, train[cell][1])
            dev_auc = (_auc(dev[cell][1], _scores(model, vectorizer, dev[cell][0]))
                       if cell in dev else None)
            fits.append((dev_auc, c, model))
        dev_auc, c, model = max(fits, key=lambda f: f[0] or 0.0)
        test_auc = _auc(test[cell][1], _scores(model, vectorizer, test[cell][0]))
        shown = [f"{a:.3f}" if a is not None else "n/a" for a in (dev_auc, test_auc)]
        print(f"| {cell[0]} | {cell[1]} | {len(train[cell][1])} | {len(test[cell][1])} | {c} | "
              f"{shown[0]} | {shown[1]} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", type=Path, help="a built data folder (train/dev/test.jsonl)")
    main(parser.parse_args().data_dir)
