"""Contrast groups: the same question in contexts that give it different labels."""

from askbetter.clarifier.contrast import MAX_GROUP, contrast_groups, question_key, with_contrasts
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
    groups = contrast_groups(pool)
    assert [[m["id"] for m in g] for g in groups.values()] == [["ex-1", "ex-2"]]


def test_each_sampled_example_brings_its_group_once() -> None:
    pool = [example(1, "pre", "Who?", "underspecified", "did he win?"),
            example(2, "pre", None, "hard-negative", "did he win?"),
            example(3, "pre", None, "clear", "a plain question")]
    units = with_contrasts([pool[1], pool[2], pool[0]], pool)
    assert [[m["id"] for m in u] for u in units] == [["ex-1", "ex-2"], ["ex-3"]]
