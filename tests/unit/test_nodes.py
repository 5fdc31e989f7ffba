"""The nodes as plain functions: rewrite (and its fallback), answer prompt, checks, ask_user."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableLambda

from askbetter.clarifier.types import Decision
from askbetter.graph.testing import ScriptedClarifier
from askbetter.nodes.answer import EMPTY_TURN_REPLY, NO_PASSAGES, answer, answer_prompt, sources
from askbetter.nodes.ask_user import ask_user, pending_decision
from askbetter.nodes.decisions import passages_as_documents, run_check
from askbetter.nodes.messages import last_user_text, to_dialog
from askbetter.nodes.post_check import post_check
from askbetter.nodes.rewrite import accept_rewrite, rewrite, rewrite_prompt

HISTORY = [HumanMessage("Tell me about Nimbus Desktop."), AIMessage("It is a notes app.")]


def test_to_dialog_keeps_user_and_ai_turns_only():
    messages = [SystemMessage("sys"), HumanMessage("hi"), AIMessage("  "), ToolMessage("t", tool_call_id="1"),
                AIMessage("hello"), HumanMessage(" q ")]
    assert to_dialog(messages) == [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}, {"role": "user", "content": "q"}]
    assert last_user_text(messages) == "q"
    assert last_user_text([AIMessage("x")]) == ""


# ---------------------------------------------------------------- rewrite


@pytest.mark.parametrize(
    "turn, output, expected",
    [
        ("Nimbus Desktop", "How do I turn on sync in Nimbus Desktop?", "How do I turn on sync in Nimbus Desktop?"),
        ("Does it have a team plan?", 'Standalone question: "Does Nimbus Desktop have a team plan?"\nmore',
         "Does Nimbus Desktop have a team plan?"),
        ("Nimbus Desktop", "", None),  # empty
        ("Nimbus Desktop", "???", None),  # no words
        ("Nimbus Desktop", "How do I turn on sync?", None),  # drops the turn's words
        ("Nimbus Desktop", "Nimbus Desktop " + "and sync " * 100, None),  # rambling: too long
    ],
)
def test_accept_rewrite(turn, output, expected):
    assert accept_rewrite(output, turn, max_chars=2000) == expected


def test_rewrite_without_history_does_not_call_the_rewriter():
    def rewriter(messages):
        raise AssertionError("called")

    out = rewrite({"messages": [HumanMessage("  How do I turn on sync? ")]}, rewriter=rewriter, max_query_chars=100)
    assert out["query"] == "How do I turn on sync?"
    assert out["clarification_rounds"] == 0 and out["documents"] == [] and out["pre_decision"] is None


def test_rewrite_with_a_chat_model_uses_its_accepted_output():
    model = GenericFakeChatModel(messages=iter(["Does Nimbus Desktop have a team plan?"]))
    messages = [*HISTORY, HumanMessage("Does it have a team plan?")]
    out = rewrite({"messages": messages}, rewriter=model, max_query_chars=500)
    assert out["query"] == "Does Nimbus Desktop have a team plan?"


@pytest.mark.parametrize("node", ["rewrite", "answer"])
def test_a_model_output_that_is_no_message_or_str_is_a_clear_error(node):
    model = RunnableLambda(lambda prompt: {"text": "Does Nimbus Desktop have a team plan?"})
    who = "the rewriter" if node == "rewrite" else "the answer model"
    with pytest.raises(TypeError, match=f"^{who} returned dict, not a message or a str$"):
        if node == "rewrite":
            rewrite({"messages": [*HISTORY, HumanMessage("Does it have a team plan?")]}, rewriter=model, max_query_chars=500)
        else:
            answer({"query": "How much?", "documents": PASSAGES}, model=model)


def test_rewrite_falls_back_to_the_raw_turn_on_garbage():
    messages = [*HISTORY, HumanMessage("Does it have a team plan?")]
    out = rewrite({"messages": messages}, rewriter=lambda m: "!!!", max_query_chars=500)
    assert out["query"] == "Does it have a team plan?"


def test_reply_to_a_clarification_continues_the_turn_and_falls_back_to_query_plus_reply():
    state = {
        "messages": [HumanMessage("How do I turn on sync?"), AIMessage("Which product?"), HumanMessage("Nimbus Desktop")],
        "awaiting_reply": True, "query": "How do I turn on sync?", "clarification_rounds": 1,
    }
    out = rewrite(state, rewriter=lambda m: "How do I turn on sync?", max_query_chars=500)
    assert out["query"] == "How do I turn on sync? Nimbus Desktop"
    assert "clarification_rounds" not in out  # kept: same user turn
    assert out["awaiting_reply"] is False


def test_rewrite_prompt_shows_the_dialog_and_ends_with_the_last_turn():
    prompt = rewrite_prompt([*HISTORY, HumanMessage("Does it have a team plan?")])
    assert isinstance(prompt[0], SystemMessage)
    assert prompt[1].text == (
        "Conversation:\nUser: Tell me about Nimbus Desktop.\nAssistant: It is a notes app.\n"
        "User: Does it have a team plan?\n\nStandalone question:"
    )


# ---------------------------------------------------------------- checks and ask_user


def test_post_check_without_passages_skips_the_clarifier():
    clarifier = ScriptedClarifier()
    assert post_check({"messages": [HumanMessage("q")], "documents": []}, clarifier=clarifier, threshold=None) == {
        "post_decision": None}
    assert clarifier.calls == []


def test_run_check_passes_the_dialog_and_documents():
    clarifier = ScriptedClarifier(post=[Decision(True, 0.7, "Which one?", "post")])
    docs = passages_as_documents([{"id": "a", "text": "t", "title": "T", "score": 0.5}, {"id": "b", "text": "u", "score": 0.4}])
    assert docs == [{"id": "a", "text": "t", "title": "T"}, {"id": "b", "text": "u"}]
    decision = run_check(clarifier, [HumanMessage("q")], docs, threshold=0.8)
    assert decision == {"needs_clarification": False, "score": 0.7, "question": None, "stage": "post"}
    assert clarifier.calls == [("post", [{"role": "user", "content": "q"}], docs)]


def test_run_check_at_a_threshold_that_still_asks_keeps_the_clarifiers_question():
    class WithQuestion(ScriptedClarifier):
        def question(self, messages, documents=None):
            return "Another question?"

    clarifier = WithQuestion(pre=[Decision(True, 0.7, "Which one?", "pre")] * 2)
    for threshold in (0.5, 0.7):  # a score on the threshold asks: score >= threshold
        decision = run_check(clarifier, [HumanMessage("q")], None, threshold=threshold)
        assert decision == {"needs_clarification": True, "score": 0.7, "question": "Which one?", "stage": "pre"}


def test_ask_user_returns_the_question_as_an_ai_message():
    decision = {"needs_clarification": True, "score": 0.8, "question": "Which office?", "stage": "post"}
    out = ask_user({"pre_decision": None, "post_decision": decision, "asked_questions": ["Earlier?"],
                    "clarification_rounds": 0}, "message")
    assert [m.text for m in out["messages"]] == ["Which office?"]
    assert out["messages"][0].response_metadata["askbetter_clarification"] == decision
    assert out["asked_questions"] == ["Earlier?", "Which office?"] and out["clarification_rounds"] == 1
    assert out["awaiting_reply"] is True and out["ask_mode"] == "message"


def test_ask_user_without_a_question_is_an_error():
    with pytest.raises(ValueError, match="needs a decision with a question"):
        pending_decision({"pre_decision": {"needs_clarification": True, "score": 1.0, "question": None, "stage": "pre"}})


# ---------------------------------------------------------------- answer


PASSAGES = [
    {"id": "x1", "title": "Expense policy", "text": "Client dinners:\n up to €80.", "score": 0.6, "source": "/a/expense-policy.md"},
    {"id": "x2", "text": "No title here.", "score": 0.3, "source": "https://example.com/p"},
]


def test_answer_prompt_numbers_the_passages_and_puts_the_question_last():
    system, human = answer_prompt("How much for a client dinner?", PASSAGES)
    assert "[1] or [2]" in system.text
    assert human.text == (
        "Passages:\n[1] Expense policy\nClient dinners: up to €80.\n\n[2] x2\nNo title here.\n\n"
        "Question: How much for a client dinner?"
    )
    assert NO_PASSAGES in answer_prompt("q", [])[1].text


def test_sources_lists_titles_and_short_sources():
    assert sources(PASSAGES) == "Sources:\n[1] Expense policy (expense-policy.md)\n[2] x2 (https://example.com/p)"


def test_answer_appends_sources_and_keeps_the_model_message_id():
    model = GenericFakeChatModel(messages=iter([AIMessage("Up to €80 per attendee [1].", id="run-1")]))
    out = answer({"query": "How much?", "documents": PASSAGES}, model=model)
    message = out["messages"][0]
    assert message.id == "run-1"
    assert message.text == "Up to €80 per attendee [1].\n\n" + sources(PASSAGES)


def test_answer_to_an_empty_query_does_not_call_the_model():
    model = GenericFakeChatModel(messages=iter([]))  # would raise StopIteration if called
    assert answer({"query": ""}, model=model)["messages"][0].text == EMPTY_TURN_REPLY
