"""The clarifier prompt: layout, truncation, the CLEAR token and question clean-up."""

import warnings
import pytest

from askbetter.clarifier.prompt import (
    ASSISTANT_TURN_SHARE,
    HEADER_TOKENS,
    build_chat,
    clean_question,
    excerpt,
    focus_weights,
    render_user_content,
)


class EchoTokenizer:
    """One token per whitespace-separated word, decoded back to the words: enough to test budgets."""

    def __init__(self) -> None:
        self.vocab: list[str] = []

    def __call__(self, text: str, add_special_tokens: bool = False):
        ids = []
        for word in text.split():
            if word not in self.vocab:
                self.vocab.append(word)
            ids.append(self.vocab.index(word))
        return type("Out", (), {"input_ids": ids})()

    def decode(self, ids) -> str:
        return " ".join(self.vocab[i] for i in ids)


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
    with pytest.warns(UserWarning, match="middle was cut"):
        text = render_user_content([{"role": "user", "content": huge}], None, EchoTokenizer(), 100)
    assert len(text.split()) < 120


def test_a_long_judged_turn_keeps_the_question_that_ends_it() -> None:
    pasted = "Here is my contract: " + "clause " * 500 + "Can I cancel it early?"
    with pytest.warns(UserWarning, match="middle was cut"):
        text = render_user_content([{"role": "user", "content": pasted}], None, EchoTokenizer(), 100)
    assert "User: Here is my contract: clause" in text and "... clause" in text
    assert "Can I cancel it early?\n\nPassages: none" in text
    assert len(text.split()) <= 100 // 2 + 5


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


def test_a_long_title_is_cut_to_its_passages_share() -> None:
    docs = [{"id": str(i), "title": f"title{i} " + "long " * 300, "text": f"body{i} " * 300}
            for i in range(4)]
    text = render_user_content([{"role": "user", "content": "when was it founded?"}], docs,
                               EchoTokenizer(), 300)
    assert len(text.split()) <= 300
    assert all(f"[{i + 1}] title{i} long" in text and f"body{i}" in text for i in range(4))


BRITTONIC = (
    "The Britons lived on the island of Great Britain for many centuries. "
    "They were ruled by many tribes whose borders kept changing over time. "
    "Their language later split into Welsh, Cornish and Breton, and Welsh is still widely spoken. "
    "Roman rule ended in the fifth century."
)


def test_excerpt_keeps_the_sentences_the_question_is_about() -> None:
    focus = focus_weights([{"role": "user", "content": "Is the language still spoken?"}])
    text = excerpt(EchoTokenizer(), BRITTONIC, 18, focus)
    assert text.startswith("... Their language later split into Welsh, Cornish and Breton")
    assert "Welsh is still widely spoken" in text and text.endswith(" ...")
    assert len(text.split()) <= 18


def test_excerpt_keeps_the_head_when_nothing_matches_and_the_whole_when_it_fits() -> None:
    focus = focus_weights([{"role": "user", "content": "what about parking?"}])
    head = excerpt(EchoTokenizer(), BRITTONIC, 12, focus)
    assert head.startswith("The Britons lived") and head.endswith(" ...")
    whole = excerpt(EchoTokenizer(), "Short  text.\nSecond line.", 50, focus)
    assert whole == "Short text. Second line."


def test_the_judged_turn_outweighs_the_history_in_choosing_an_excerpt() -> None:
    focus = focus_weights([{"role": "user", "content": "Tell me about Roman rule."},
                           {"role": "assistant", "content": "It ended long ago."},
                           {"role": "user", "content": "And the tribes and their borders?"}])
    assert focus["tribes"] > focus["roman"]
    text = excerpt(EchoTokenizer(), BRITTONIC, 14, focus)
    assert "tribes whose borders" in text and "Roman" not in text


def test_a_long_answer_keeps_its_head_and_does_not_push_out_the_users_turn() -> None:
    dialog = [{"role": "user", "content": "I have a question about my bill."},
              {"role": "assistant", "content": "Contact the commission. " + "detail " * 300},
              {"role": "user", "content": "and if it is about service?"}]
    docs = [{"id": "1", "text": "Billing and service complaints: call us."}]
    text = render_user_content(dialog, docs, EchoTokenizer(), 300)
    assert "User: I have a question about my bill." in text
    assert "Assistant: Contact the commission. detail" in text
    assert text.index("about my bill") < text.index("Assistant:") < text.index("about service?")


def test_without_passages_the_history_has_the_whole_budget() -> None:
    # eight turns of 10 tokens fit in what the judged turn and the headers leave of the budget;
    # with passages they would have HISTORY_SHARE of it only
    history = [{"role": "user", "content": f"turn{i} " + "x " * 8} for i in range(8)]
    text = render_user_content([*history, {"role": "user", "content": "what now?"}], None,
                               EchoTokenizer(), 100 + HEADER_TOKENS)
    assert all(f"User: turn{i} x" in text for i in range(8))


def test_an_earlier_answer_that_fits_its_share_exactly_is_not_marked_as_cut() -> None:
    max_tokens = 100
    share = int((max_tokens - len("User: what now?".split()) - HEADER_TOKENS) * ASSISTANT_TURN_SHARE)
    for words, cut in ((share - 1, False), (share, True)):  # with "Assistant:", share or share + 1 tokens
        answer = " ".join(f"w{i}" for i in range(words))
        text = render_user_content([{"role": "user", "content": "hi"}, {"role": "assistant", "content": answer},
                                    {"role": "user", "content": "what now?"}], None, EchoTokenizer(), max_tokens)
        assert ("..." in text) is cut
        assert (f"Assistant: {answer}\n" in text) is not cut


def test_a_turn_cut_at_its_tail_keeps_its_speaker() -> None:
    dialog = [{"role": "user", "content": "old " * 200 + "newest words"},
              {"role": "user", "content": "what now?"}]
    text = render_user_content(dialog, None, EchoTokenizer(), 100)
    assert "User: ... old" in text and "newest words" in text


def test_conversation_must_end_with_a_user_turn() -> None:
    with pytest.raises(ValueError, match="user turn"):
        render_user_content([{"role": "assistant", "content": "hi"}], None, EchoTokenizer(), 50)
    with pytest.raises(ValueError, match="user turn"):
        render_user_content([{"role": "user", "content": "   "}], None, EchoTokenizer(), 50)


def test_question_last_restates_the_judged_turn_after_the_passages_only() -> None:
    msgs = [{"role": "user", "content": "tell me about jaguar"}, {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "how fast is it?"}]
    docs = [{"id": str(i), "text": "doc " * 400} for i in range(2)]
    plain = render_user_content(msgs, docs, EchoTokenizer(), 120)
    last = render_user_content(msgs, docs, EchoTokenizer(), 120, question_last=True)
    assert last.endswith("\n\nQuestion: how fast is it?") and not plain.endswith("it?")
    assert last.index("Passages:") < last.index("[2]") < last.index("Question:")
    # the restated turn's tokens come out of the passages' share, not over the budget
    assert len(last.split()) <= 120 + 16 and last.count("doc") < plain.count("doc")
    # without passages it is `tuned`'s prompt, to the token: a history cut to the budget too
    long = [{"role": "user", "content": "tell me about jaguar " + "x " * 200}, *msgs[1:]]
    for dialog in (msgs, long):
        assert render_user_content(dialog, None, EchoTokenizer(), 120, question_last=True) == \
            render_user_content(dialog, None, EchoTokenizer(), 120)
    chat = build_chat(msgs, docs, EchoTokenizer(), 120, "tuned-question-last")
    assert chat[0] == build_chat(msgs, docs, EchoTokenizer(), 120, "tuned")[0]
    assert chat[-1]["content"] == last


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


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("There are two offices. Which one do you", "There are two offices."),
     ("Which of the offices in Berlin, Boston,", "Which of the offices in Berlin, Boston..."),
     ("Which office do you mean? Berlin or", "Which office do you mean?"),
     ("There are two offices.", "There are two offices."),
     ("Which office do you mean\n", "Which office do you mean"),  # the line ended before the cap
     ("Which office do you mean\nThere are", "Which office do you mean"),
     ("", "")],
)
def test_clean_question_of_a_generation_stopped_at_its_cap(raw: str, expected: str) -> None:
    assert clean_question(raw, capped=True) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [('He said "Which one."', 'He said "Which one."'),
     ("Do you mean the fee (see the policy.)", "Do you mean the fee (see the policy.)"),
     ('He asked "Which one." Then he', 'He asked "Which one."'),
     ("You may mean a city, e.g. Berlin or", "You may mean a city, e.g. Berlin or..."),
     ("There are two. Cities, i.e. Berlin or", "There are two."),
     ("Do you mean the one by Dr. Smith, or", "Do you mean the one by Dr. Smith, or..."),
     ("Do you mean Berlin vs. Boston, or", "Do you mean Berlin vs. Boston, or..."),
     ("Do you mean cities, e.g.", "Do you mean cities, e.g..."),
     ("Do you mean Python 3.5 or", "Do you mean Python 3.5 or...")],
)
def test_a_capped_line_ends_at_a_sentence_end_not_at_a_closing_mark_or_an_abbreviation(
        raw: str, expected: str) -> None:
    assert clean_question(raw, capped=True) == expected
