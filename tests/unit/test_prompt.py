"""The clarifier prompt: layout, truncation, the CLEAR token and question clean-up."""

import warnings
import pytest

from askbetter.clarifier.prompt import (
    build_chat,
    clean_question,
    render_user_content,
)


class EchoTokenizer:
    """One token per whitespace-separated word, decoded back to the words: enough to test budgets."""

    def __init__(self) -> None:
        self.words: list[str] = []

    def __call__(self, text: str, add_special_tokens: bool = False):
        self.words = text.split()
        return type("Out", (), {"input_ids": list(range(len(self.words)))})()

    def decode(self, ids) -> str:
        return " ".join(self.words[i] for i in ids)


def test_conversation_comes_before_passages() -> None:
    text = render_user_content(
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
         {"role": "user", "content": "how do I reset it?"}],
        [{"id": "1", "title": "Router", "text": "hold the button"}],
        EchoTokenizer(), 200)
    assert text.index("User: hi") < text.index("Assistant: hello") < text.index("User: how do I reset it?")
    assert text.index("how do I reset it?") < text.index("Passages:") < text.index("[1] Router: hold the button")


def test_pre_check_prompt_says_there_are_no_passages() -> None:
    text = render_user_content([{"role": "user", "content": "what is sync?"}], None, EchoTokenizer(), 100)
    assert text.endswith("Passages: none")


def test_long_turn_is_truncated_with_a_warning() -> None:
    huge = "word " * 5000
    with pytest.warns(UserWarning, match="truncated"):
        text = render_user_content([{"role": "user", "content": huge}], None, EchoTokenizer(), 100)
    assert len(text.split()) < 120


def test_passages_share_the_budget_and_oldest_turns_go_first() -> None:
    history = [{"role": "user", "content": f"turn{i} " + "x " * 30} for i in range(10)]
    docs = [{"id": str(i), "text": "doc " * 400} for i in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text = render_user_content([*history, {"role": "user", "content": "last one?"}], docs,
                                   EchoTokenizer(), 300)
    assert len(text.split()) <= 330
    assert "turn0" not in text and "last one?" in text
    assert text.count("[1]") == text.count("[2]") == text.count("[3]") == 1


def test_conversation_must_end_with_a_user_turn() -> None:
    with pytest.raises(ValueError, match="user turn"):
        render_user_content([{"role": "assistant", "content": "hi"}], None, EchoTokenizer(), 50)
    with pytest.raises(ValueError, match="user turn"):
        render_user_content([{"role": "user", "content": "   "}], None, EchoTokenizer(), 50)


def test_few_shot_adds_example_turns_and_unknown_style_fails() -> None:
    msgs = [{"role": "user", "content": "who won?"}]
    zero = build_chat(msgs, None, EchoTokenizer(), 50, "zero-shot")
    few = build_chat(msgs, None, EchoTokenizer(), 50, "few-shot")
    assert len(zero) == 2 and len(few) > 4 and few[-1] == zero[-1]
    with pytest.raises(ValueError, match="prompt style"):
        build_chat(msgs, None, EchoTokenizer(), 50, "chatty")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("Which one do you mean? The cloud or desktop?", "Which one do you mean?"),
     ("\n  Do you mean Berlin?\nMore text", "Do you mean Berlin?"),
     ("", "")],
)
def test_clean_question(raw: str, expected: str) -> None:
    assert clean_question(raw) == expected
