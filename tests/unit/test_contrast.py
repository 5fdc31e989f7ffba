"""Contrast groups: the same question in contexts that give it different labels."""

from askbetter.clarifier.contrast import (
    MAX_GROUP,
    context_key,
    contrast_groups,
    question_key,
    with_contrasts,
)
from example_factory import example


def _with_history(ex, history: str):
    ex["messages"] = [{"role": "user", "content": history},
                      {"role": "assistant", "content": "ok"}] + ex["messages"]
    return ex


def test_key_ignores_case_spacing_and_history_but_not_the_setting() -> None:
    a = example(1, "pre", None, "hard-negative", "Did  he win?")
    b = _with_history(example(2, "pre", "Who?", "underspecified", "did he win?"), "Tell me about Bo")
    c = example(3, "post", None, "clear", "did he win?")
    assert question_key(a) == question_key(b)
    assert question_key(a) != question_key(c)


def test_groups_need_both_labels_and_at_most_max_group_members() -> None:
    pool = [example(1, "pre", "Who?", "underspecified", "did he win?"),
            example(2, "pre", None, "hard-negative", "did he win?"),
            example(3, "pre", None, "clear", "same label"),
            example(4, "pre", None, "hard-negative", "same label")]
    pool += [example(10 + i, "pre", "What?" if i % 2 else None, "clear", "what?")
             for i in range(MAX_GROUP + 1)]
    pool += [example(20 + i, "pre", "Which?" if i % 2 else None, "clear", "which?")
             for i in range(MAX_GROUP)]  # at the bound: still a group
    groups = contrast_groups(pool)
    assert [[m["id"] for m in g] for g in groups.values()] == [["ex-1", "ex-2"],
                                                               [f"ex-{20 + i}" for i in range(MAX_GROUP)]]


def test_each_sampled_example_brings_its_group_once() -> None:
    pool = [example(1, "pre", "Who?", "underspecified", "did he win?"),
            example(2, "pre", None, "hard-negative", "did he win?"),
            example(3, "pre", None, "clear", "a plain question")]
    units = with_contrasts([pool[1], pool[2], pool[0]], pool)
    assert [[m["id"] for m in u] for u in units] == [["ex-1", "ex-2"], ["ex-3"]]


def _rizzo():
    """A vague question and a reading over the same passage, and the reading over another."""
    vague = example(1, "post", "Which film?", "ambiguous", "who played rizzo?")
    named = example(2, "post", None, "hard-negative", "who played rizzo in the 1978 film?")
    other = example(3, "post", "Which?", "ambiguous", "who played rizzo in the 1978 film?")
    other["documents"] = [{"id": "d1", "text": "another passage"}]
    return vague, named, other


def test_one_context_with_two_questions_of_both_labels_is_a_group() -> None:
    vague, named, other = _rizzo()
    bare = [example(4, "pre", "Which?", "ambiguous", "a"), example(5, "pre", None, "clear", "b")]
    groups = contrast_groups([vague, named, other, *bare])
    # the same two passages: vague and named; the same question: named and other; `pre`
    # examples without a history share no context
    assert sorted([m["id"] for m in g] for g in groups.values()) == [["ex-1", "ex-2"],
                                                                     ["ex-2", "ex-3"]]
    assert context_key(vague) == context_key(named) != context_key(other)
    assert context_key(bare[0]) is None


def test_a_sampled_example_brings_both_its_groups_and_nothing_twice() -> None:
    vague, named, other = _rizzo()
    units = with_contrasts([named, vague, other], [vague, named, other])
    assert [[m["id"] for m in u] for u in units] == [["ex-2", "ex-3", "ex-1"]]
    # vague and other each share a group with named: named comes with the first only
    units = with_contrasts([vague, other], [vague, named, other])
    assert [[m["id"] for m in u] for u in units] == [["ex-1", "ex-2"], ["ex-3"]]
