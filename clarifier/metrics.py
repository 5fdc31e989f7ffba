"""Evaluation metrics: pure functions over aligned lists, no models, no I/O.

The positive class is "clarify" (the query needs a clarification question). Classification figures
come from scikit-learn, ROUGE-L from `rouge_score`; question quality is measured only where a
reference question exists and the system asked one. `pick_threshold` turns dev-split scores into
the decision threshold stored with an adapter.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Protocol

import numpy as np
from sklearn.metrics import (
    accuracy_score,
    f1_score,
    precision_score,
    recall_score,
    roc_auc_score,
)
from sklearn.metrics.pairwise import paired_cosine_distances

Figures = dict[str, float | int | None]

#: Keys of `classification` (and of each `by_setting` entry), in display order.
CLASSIFICATION_KEYS = (
    "accuracy",
    "precision_clarify",
    "recall_clarify",
    "f1_clarify",
    "macro_f1",
    "auc",
    "n",
    "n_clarify",
)
SETTINGS = ("pre", "post")
#: A one-question output has at most this many words (a clarification question is short).
MAX_QUESTION_WORDS = 40


class Encoder(Protocol):
    """Anything that embeds sentences, such as a `sentence_transformers.SentenceTransformer`."""

    def encode(self, sentences: list[str], /) -> Any: ...


def classification(
    labels: Sequence[bool], predictions: Sequence[bool], scores: Sequence[float]
) -> Figures:
    """Accuracy, precision/recall/F1 of "clarify", macro-F1 and ROC-AUC of the score.

    With no examples every figure is None; `auc` is None when only one class is present, and so
    is a ratio with nothing to count: precision with no "clarify" predicted, recall with none in
    the labels, F1 with neither (a subset of clear examples, all judged clear, has no F1-clarify,
    rather than 0). Macro-F1 averages the classes that occur in the labels or the predictions (a
    perfect run on examples of one label scores 1). A score that is not a finite number (NaN) is a
    ValueError.
    """
    _check_aligned(labels, predictions, scores)
    if bad := count_not_finite(scores):
        raise ValueError(not_finite_message(bad, len(scores)))
    n = len(labels)
    if n == 0:
        return not_computed(labels)
    y, p = list(map(bool, labels)), list(map(bool, predictions))
    both_classes = len(set(y)) == 2
    return {
        "accuracy": float(accuracy_score(y, p)),
        "precision_clarify": _defined(precision_score(y, p, zero_division=np.nan)),
        "recall_clarify": _defined(recall_score(y, p, zero_division=np.nan)),
        "f1_clarify": _defined(f1_score(y, p, zero_division=np.nan)),
        "macro_f1": float(f1_score(y, p, average="macro", zero_division=0)),
        "auc": float(roc_auc_score(y, list(scores))) if both_classes else None,
        "n": n,
        "n_clarify": sum(y),
    }


def _defined(value: float) -> float | None:
    """scikit-learn's NaN for a ratio of nothing (`zero_division=np.nan`) as None."""
    return None if np.isnan(value) else float(value)


def count_not_finite(scores: Sequence[float]) -> int:
    """How many scores are NaN or infinite (a float16 model's overflow)."""
    return sum(not np.isfinite(s) for s in scores)


def not_finite_message(count: int, n: int) -> str:
    """Why `count` of `n` scores that are not finite leave no classification figures, and what to do."""
    return (f"{count} of {n} scores are not finite numbers (NaN or infinite), so no classification "
            "figures can be computed (a float16 model can overflow: ASKBETTER_DTYPE=float32)")


def not_computed(labels: Sequence[bool]) -> Figures:
    """`classification`'s keys, every figure None, the counts kept: the figures of no examples, or
    of scores that are not all finite."""
    return {**dict.fromkeys(CLASSIFICATION_KEYS, None), "n": len(labels), "n_clarify": sum(map(bool, labels))}


def by_setting(
    labels: Sequence[bool],
    predictions: Sequence[bool],
    scores: Sequence[float],
    settings: Sequence[str],
) -> dict[str, Figures]:
    """`classification` for the `pre` and the `post` examples; both keys are always present."""
    _check_aligned(labels, predictions, scores, settings)
    result = {}
    for setting in SETTINGS:
        idx = [i for i, s in enumerate(settings) if s == setting]
        result[setting] = classification(
            [labels[i] for i in idx], [predictions[i] for i in idx], [scores[i] for i in idx]
        )
    return result


def by_kind(
    labels: Sequence[bool], predictions: Sequence[bool], kinds: Sequence[str]
) -> dict[str, Figures]:
    """Accuracy and count for each kind present (`hard-negative` is one kind), sorted by kind."""
    _check_aligned(labels, predictions, kinds)
    return {
        kind: {"accuracy": float(accuracy_score([bool(labels[i]) for i in idx],
                                                [bool(predictions[i]) for i in idx])),
               "n": len(idx)}
        for kind, idx in _groups(kinds).items()
    }


def by_source(
    labels: Sequence[bool],
    predictions: Sequence[bool],
    scores: Sequence[float],
    sources: Sequence[str],
    settings: Sequence[str],
) -> dict[str, dict[str, Figures]]:
    """`{source: {setting: {"accuracy", "auc", "n"}}}` for each source and each of its settings
    present, sorted by source, settings in their fixed order; `auc` is None where the cell holds
    one class only."""
    _check_aligned(labels, predictions, scores, sources, settings)
    result: dict[str, dict[str, Figures]] = {}
    for source, idx in _groups(sources).items():
        cells = _groups([settings[i] for i in idx])
        result[source] = {}
        for setting in (s for s in SETTINGS if s in cells):
            members = [idx[j] for j in cells[setting]]
            figures = classification([labels[i] for i in members], [predictions[i] for i in members],
                                     [scores[i] for i in members])
            result[source][setting] = {key: figures[key] for key in ("accuracy", "auc", "n")}
    return result


def _groups(keys: Sequence[str]) -> dict[str, list[int]]:
    """The positions of each distinct key, sorted by key."""
    groups: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    return dict(sorted(groups.items()))


def is_one_question(text: str | None) -> bool:
    """True when `text` is exactly one question: non-empty, one `?`, at the end, a few words.

    "Which one?" is one; "What? Why?", "CLEAR", "" and "?" are not.
    """
    text = (text or "").strip()
    words = text.split()
    return (
        text.count("?") == 1
        and text.endswith("?")
        and re.search(r"\w", text) is not None
        and len(words) <= MAX_QUESTION_WORDS
    )


def one_question_share(questions: Sequence[str | None]) -> float | None:
    """Share of `questions` that are exactly one question; None when there are none."""
    if not questions:
        return None
    return sum(map(is_one_question, questions)) / len(questions)


def question_pairs(
    references: Sequence[str | None], questions: Sequence[str | None]
) -> tuple[list[str], list[str]]:
    """The aligned (references, questions) where a reference exists and the system asked
    (a question is None when the system did not ask)."""
    _check_aligned(references, questions)
    pairs = [(r, q) for r, q in zip(references, questions) if r is not None and q is not None]
    return [r for r, _ in pairs], [q for _, q in pairs]


def rouge_l(references: Sequence[str], candidates: Sequence[str]) -> float | None:
    """Mean ROUGE-L F-measure of each candidate against its reference; None for no pairs."""
    _check_aligned(references, candidates)
    if not references:
        return None
    scorer = _rouge_scorer()
    scores = [scorer.score(r, c)["rougeL"].fmeasure for r, c in zip(references, candidates)]
    return float(np.mean(scores))


def embed_sim(
    references: Sequence[str], candidates: Sequence[str], embedder: Encoder
) -> float | None:
    """Mean cosine similarity of each candidate's embedding to its reference's; None for no
    pairs. Both lists are encoded in one call."""
    _check_aligned(references, candidates)
    if not references:
        return None
    vectors = np.asarray(embedder.encode(list(references) + list(candidates)), dtype=np.float64)
    refs, cands = vectors[: len(references)], vectors[len(references) :]
    return float(np.mean(1.0 - paired_cosine_distances(refs, cands)))


def question_quality(
    references: Sequence[str], questions: Sequence[str], embedder: Encoder | None
) -> Figures:
    """ROUGE-L, embedding similarity and one-question share over aligned pairs (see
    `question_pairs`). `embedder` may be None only when there are no pairs."""
    if references and embedder is None:
        raise ValueError("question_quality needs an embedder when there are questions to score")
    return {
        "rouge_l": rouge_l(references, questions),
        "embed_sim": None if embedder is None else embed_sim(references, questions, embedder),
        "one_question_share": one_question_share(questions),
        "n_questions": len(questions),
    }


def pick_threshold(labels: Sequence[bool], scores: Sequence[float]) -> float:
    """The decision threshold (clarify when `score >= threshold`) that maximises accuracy.

    Candidates are the midpoints between consecutive distinct scores, one below and one above all
    scores, and 0.5. Ties go to the highest macro-F1, then to the candidate closest to 0.5 (then
    the lower one). Meant for the dev split; the result lies in [0, 1].
    """
    _check_aligned(labels, scores)
    if not labels:
        raise ValueError("pick_threshold needs at least one example")
    s = np.asarray(scores, dtype=np.float64)
    if not np.all((s >= 0.0) & (s <= 1.0)):  # NaN fails both comparisons: refused too
        raise ValueError("scores must lie in [0, 1]")
    y = np.asarray(labels, dtype=bool)
    distinct = np.unique(s)
    candidates = np.unique(
        np.concatenate(
            [
                (distinct[:-1] + distinct[1:]) / 2,
                [distinct[0] / 2, (distinct[-1] + 1.0) / 2, 0.5],
            ]
        )
    )
    positives, negatives = np.sort(s[y]), np.sort(s[~y])
    # right answers at each candidate: positives scoring >= it plus negatives scoring below it
    correct = (
        len(positives)
        - np.searchsorted(positives, candidates)
        + np.searchsorted(negatives, candidates)
    )
    tied = np.flatnonzero(correct == correct.max())
    macro = np.array(
        [
            f1_score(y, s >= candidates[i], average="macro", labels=[False, True], zero_division=0)
            for i in tied
        ]
    )
    tied = tied[np.isclose(macro, macro.max(), rtol=0.0, atol=1e-12)]
    best = min(tied, key=lambda i: (abs(candidates[i] - 0.5), candidates[i]))
    return float(candidates[best])


@lru_cache(maxsize=1)
def _rouge_scorer() -> Any:
    from rouge_score import rouge_scorer  # imported here: it pulls in nltk, slow to import

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def _check_aligned(*lists: Sequence[Any]) -> None:
    lengths = {len(x) for x in lists}
    if len(lengths) > 1:
        raise ValueError(f"metric inputs must have the same length, got {sorted(lengths)}")
