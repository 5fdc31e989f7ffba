"""Metric figures against hand-computed values on small lists."""

import numpy as np
import pytest

from askbetter.clarifier import metrics


class LetterEmbedder:
    """A fake sentence encoder: counts of the letters a, b, c."""

    def encode(self, sentences):
        return np.array([[s.count(ch) for ch in "abc"] for s in sentences], dtype=float)


def test_classification_hand_computed_balanced():
    # tp=1 fn=1 fp=1 tn=1; AUC: positives {.9,.4} vs negatives {.6,.1}: 3 of 4 pairs ordered
    labels, preds = [True, True, False, False], [True, False, True, False]
    f = metrics.classification(labels, preds, [0.9, 0.4, 0.6, 0.1])
    assert f == {
        "accuracy": 0.5,
        "precision_clarify": 0.5,
        "recall_clarify": 0.5,
        "f1_clarify": 0.5,
        "macro_f1": 0.5,
        "auc": 0.75,
        "n": 4,
        "n_clarify": 2,
    }


def test_classification_hand_computed_imbalanced():
    # clarify: tp=1 fp=1 fn=0 -> P=.5 R=1 F1=2/3; clear: tp=2 fp=0 fn=1 -> F1=.8
    labels, preds = [True, False, False, False], [True, True, False, False]
    f = metrics.classification(labels, preds, [0.8, 0.6, 0.3, 0.2])
    assert f["accuracy"] == 0.75
    assert f["precision_clarify"] == 0.5
    assert f["recall_clarify"] == 1.0
    assert f["f1_clarify"] == pytest.approx(2 / 3)
    assert f["macro_f1"] == pytest.approx((2 / 3 + 0.8) / 2)
    assert f["auc"] == 1.0
    assert (f["n"], f["n_clarify"]) == (4, 1)


def test_classification_perfect_and_all_wrong():
    labels = [True, False, True, False]
    perfect = metrics.classification(labels, labels, [0.9, 0.1, 0.8, 0.2])
    assert perfect["accuracy"] == perfect["f1_clarify"] == perfect["macro_f1"] == 1.0
    assert perfect["auc"] == 1.0
    wrong = metrics.classification(labels, [not y for y in labels], [0.1, 0.9, 0.2, 0.8])
    assert wrong["accuracy"] == wrong["f1_clarify"] == wrong["macro_f1"] == 0.0
    assert wrong["auc"] == 0.0


def test_classification_one_class_has_no_auc():
    f = metrics.classification([False, False, False], [False, True, False], [0.1, 0.7, 0.2])
    assert f["auc"] is None
    assert f["accuracy"] == pytest.approx(2 / 3)
    assert f["precision_clarify"] == 0.0 and f["f1_clarify"] == 0.0  # one "clarify" predicted, wrongly
    assert f["recall_clarify"] is None  # no "clarify" in the labels to recall
    assert f["n_clarify"] == 0


def test_classification_of_clear_examples_all_judged_clear_has_no_clarify_figures():
    # nothing to count, not a score of 0 (the README's tables show n/a)
    f = metrics.classification([False, False], [False, False], [0.1, 0.2])
    assert f["precision_clarify"] is f["recall_clarify"] is f["f1_clarify"] is None
    assert f["accuracy"] == f["macro_f1"] == 1.0
    missed = metrics.classification([True, False], [False, False], [0.1, 0.2])
    assert missed["precision_clarify"] is None and missed["recall_clarify"] == missed["f1_clarify"] == 0.0


def test_classification_macro_f1_averages_the_classes_that_occur():
    # only "clarify" occurs in labels and predictions: a perfect run has macro-F1 1, not (1 + 0) / 2
    assert metrics.classification([True, True], [True, True], [0.9, 0.8])["macro_f1"] == 1.0
    assert metrics.classification([False, False], [False, False], [0.1, 0.2])["macro_f1"] == 1.0
    # a class that occurs only in the predictions counts: clear F1 .8, clarify F1 0
    one_wrong = metrics.classification([False] * 3, [False, True, False], [0.1, 0.7, 0.2])
    assert one_wrong["macro_f1"] == pytest.approx(0.4)


def test_classification_empty_and_misaligned():
    empty = metrics.classification([], [], [])
    assert empty["n"] == 0 and empty["n_clarify"] == 0
    assert empty["accuracy"] is None and empty["auc"] is None
    assert set(empty) == set(metrics.CLASSIFICATION_KEYS)
    with pytest.raises(ValueError, match="same length"):
        metrics.classification([True], [True, False], [0.5])


def test_by_setting_splits_examples():
    labels = [True, False, True, False, True]
    preds = [True, False, False, True, True]
    scores = [0.9, 0.1, 0.2, 0.8, 0.7]
    settings = ["pre", "pre", "post", "post", "pre"]
    result = metrics.by_setting(labels, preds, scores, settings)
    assert set(result) == {"pre", "post"}
    assert result["pre"]["accuracy"] == 1.0 and result["pre"]["n"] == 3
    assert result["pre"]["n_clarify"] == 2
    assert result["post"]["accuracy"] == 0.0 and result["post"]["n"] == 2
    assert result["post"]["auc"] == 0.0


def test_by_setting_keeps_an_absent_setting():
    result = metrics.by_setting([True, False], [True, False], [0.9, 0.1], ["pre", "pre"])
    assert result["post"]["n"] == 0 and result["post"]["accuracy"] is None


def test_by_kind_accuracy_and_counts():
    labels = [False, False, False, True, True]
    preds = [False, True, True, True, False]
    kinds = ["hard-negative", "hard-negative", "clear", "ambiguous", "ambiguous"]
    result = metrics.by_kind(labels, preds, kinds)
    assert list(result) == ["ambiguous", "clear", "hard-negative"]
    assert result["hard-negative"] == {"accuracy": 0.5, "n": 2}
    assert result["clear"] == {"accuracy": 0.0, "n": 1}
    assert result["ambiguous"] == {"accuracy": 0.5, "n": 2}


def test_by_source_groups_by_source_then_setting():
    labels = [True, False, True, False, True]
    preds = [True, True, False, False, True]
    sources = ["b", "b", "b", "a", "a"]
    settings = ["pre", "post", "post", "post", "pre"]
    scores = [0.9, 0.8, 0.2, 0.1, 0.7]
    result = metrics.by_source(labels, preds, scores, sources, settings)
    assert list(result) == ["a", "b"]
    assert result["a"] == {"pre": {"accuracy": 1.0, "auc": None, "n": 1},
                           "post": {"accuracy": 1.0, "auc": None, "n": 1}}
    assert result["b"]["pre"] == {"accuracy": 1.0, "auc": None, "n": 1}
    # b/post: the clear example (0.8) outscores the one that needs clarifying (0.2)
    assert result["b"]["post"] == {"accuracy": 0.0, "auc": 0.0, "n": 2}
    assert list(result["a"]) == ["pre", "post"]  # settings in their fixed order


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Which one?", True),
        ("  Do you mean the 2019 or the 2020 revenue?  ", True),
        ("What? Why?", False),
        ("CLEAR", False),
        ("", False),
        (None, False),
        ("?", False),
        ("Which year? I mean the fiscal one.", False),
        ("Do you mean " + "the very long option " * 12 + "?", False),
        (" ".join(["word"] * metrics.MAX_QUESTION_WORDS) + "?", True),  # at the bound: still one
        (" ".join(["word"] * (metrics.MAX_QUESTION_WORDS + 1)) + "?", False),
    ],
)
def test_is_one_question(text, expected):
    assert metrics.is_one_question(text) is expected


def test_one_question_share():
    assert metrics.one_question_share(["Which one?", "What? Why?", "CLEAR", ""]) == 0.25
    assert metrics.one_question_share([]) is None


def test_question_pairs_need_a_reference_and_a_question():
    refs, questions = metrics.question_pairs(
        ["Which city?", None, "Which year?", None], ["Paris or Rome?", "Huh?", None, None]
    )
    assert refs == ["Which city?"] and questions == ["Paris or Rome?"]


def test_rouge_l_hand_computed():
    # LCS("which city do you mean", "which city") = 2: P = 1, R = 2/5, F = 2*.4/1.4
    assert metrics.rouge_l(["which city do you mean"], ["which city"]) == pytest.approx(0.8 / 1.4)
    assert metrics.rouge_l(["Which city?", "Which year?"], ["Which city?", "no overlap"]) == 0.5
    assert metrics.rouge_l([], []) is None


def test_embed_sim_mean_cosine():
    # "ab" vs "ab": 1; "a" vs "b": orthogonal, 0
    assert metrics.embed_sim(["ab", "a"], ["ab", "b"], LetterEmbedder()) == pytest.approx(0.5)
    assert metrics.embed_sim([], [], LetterEmbedder()) is None


def test_question_quality():
    q = metrics.question_quality(["abc?"], ["abc?"], LetterEmbedder())
    assert q["rouge_l"] == 1.0 and q["embed_sim"] == pytest.approx(1.0)
    assert q["one_question_share"] == 1.0 and q["n_questions"] == 1
    none = metrics.question_quality([], [], None)
    assert none == dict(rouge_l=None, embed_sim=None, one_question_share=None, n_questions=0)
    with pytest.raises(ValueError, match="embedder"):
        metrics.question_quality(["abc?"], ["abc?"], None)


def _separates(labels, scores, threshold):
    return all((s >= threshold) == y for y, s in zip(labels, scores))


def test_pick_threshold_separates_a_separable_set():
    labels = [False, True, False, True, True]
    scores = [0.2, 0.7, 0.1, 0.9, 0.6]
    assert _separates(labels, scores, metrics.pick_threshold(labels, scores))
    # off-centre gap: the midpoint between 0.1 and 0.15
    labels, scores = [False, False, True, True], [0.05, 0.1, 0.15, 0.2]
    threshold = metrics.pick_threshold(labels, scores)
    assert threshold == pytest.approx(0.125)
    assert _separates(labels, scores, threshold)


def test_pick_threshold_breaks_accuracy_ties_by_macro_f1():
    # 0.125 (predict F,F,T,T) and anything above 0.2 (all clear, e.g. 0.5) both get 3 of 4 right;
    # macro-F1 is .733 against .429, so 0.125 wins although 0.5 is closer to 0.5
    assert metrics.pick_threshold([False, False, True, False], [0.05, 0.1, 0.15, 0.2]) == 0.125


def test_pick_threshold_breaks_remaining_ties_towards_half():
    # 0.15 (F,T,T,T) and 0.8 (F,F,F,T) both: 3 of 4 right, macro-F1 .733; 0.8 is closer to 0.5
    assert metrics.pick_threshold([False, True, False, True], [0.1, 0.2, 0.7, 0.9]) == 0.8


def test_pick_threshold_one_class_and_errors():
    threshold = metrics.pick_threshold([False, False], [0.3, 0.6])
    assert 0.6 < threshold <= 1.0
    with pytest.raises(ValueError):
        metrics.pick_threshold([], [])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        metrics.pick_threshold([True], [1.5])
    with pytest.raises(ValueError, match="same length"):
        metrics.pick_threshold([True, False], [0.5])


def test_pick_threshold_refuses_nan_scores():
    # NaN compares False with both bounds: it must not slip past the range check into a NaN
    # threshold (with which every decision reads "clear")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        metrics.pick_threshold([True, False, False], [float("nan"), 0.1, 0.9])


def test_classification_refuses_a_score_that_is_not_a_number():
    # with both classes scikit-learn's AUC would stop on it ("Input contains NaN."); with one
    # class it went through unnoticed
    for labels in ([True, False], [False, False]):
        with pytest.raises(ValueError, match="1 of 2 scores are not finite"):
            metrics.classification(labels, [True, False], [float("nan"), 0.1])
