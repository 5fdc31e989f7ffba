"""The conditional edges, one branch at a time, and the graph's shape."""

from __future__ import annotations

import pytest
from langgraph.graph import END

from askbetter.graph import routing
from askbetter.graph.context import Context, default_context, resolve_context
from askbetter.graph.factory import create_clarifying_rag
from askbetter.graph.testing import ScriptedClarifier, StaticRetriever
from askbetter.settings import Settings

ASKS = {"needs_clarification": True, "score": 0.9, "question": "Which product?", "stage": "pre"}
CLEAR = {"needs_clarification": False, "score": 0.1, "question": None, "stage": "pre"}


def ctx(**overrides: object) -> Context:
    return resolve_context(overrides, default_context(Settings()))


def test_after_rewrite_empty_query_goes_to_answer():
    assert routing.after_rewrite({"query": ""}, ctx()) == routing.ANSWER


@pytest.mark.parametrize("pre_check, expected", [(True, routing.PRE_CHECK), (False, routing.RETRIEVE)])
def test_after_rewrite_follows_pre_check_setting(pre_check, expected):
    assert routing.after_rewrite({"query": "q"}, ctx(pre_check=pre_check)) == expected


@pytest.mark.parametrize(
    "decision, expected",
    # a clear decision with a question (a custom clarifier's) is not asked
    [(ASKS, routing.ASK_USER), (CLEAR, routing.RETRIEVE), ({**CLEAR, "question": "Which?"}, routing.RETRIEVE)],
)
def test_after_pre_check(decision, expected):
    assert routing.after_pre_check({"pre_decision": decision}, ctx()) == expected


@pytest.mark.parametrize("post_check, expected", [(True, routing.POST_CHECK), (False, routing.ANSWER)])
def test_after_retrieve_follows_post_check_setting(post_check, expected):
    assert routing.after_retrieve({}, ctx(post_check=post_check)) == expected


@pytest.mark.parametrize(
    "decision, expected",
    [({**ASKS, "stage": "post"}, routing.ASK_USER), ({**CLEAR, "stage": "post"}, routing.ANSWER), (None, routing.ANSWER)],
)
def test_after_post_check(decision, expected):
    assert routing.after_post_check({"post_decision": decision}, ctx()) == expected


@pytest.mark.parametrize("mode, expected", [("interrupt", routing.AWAIT_REPLY), ("message", END)])
def test_after_ask_user_follows_ask_mode(mode, expected):
    assert routing.after_ask_user({}, ctx(ask_mode=mode)) == expected


@pytest.mark.parametrize("asked_in, expected", [("interrupt", routing.AWAIT_REPLY), ("message", END)])
def test_after_ask_user_follows_the_mode_the_question_was_asked_in(asked_in, expected):
    other = "message" if asked_in == "interrupt" else "interrupt"
    assert routing.after_ask_user({"ask_mode": asked_in}, ctx(ask_mode=other)) == expected


def test_rounds_bound_blocks_asking():
    state = {"pre_decision": ASKS, "clarification_rounds": 1}
    assert routing.after_pre_check(state, ctx(max_rounds=1)) == routing.RETRIEVE
    assert routing.after_pre_check(state, ctx(max_rounds=2)) == routing.ASK_USER
    assert "rounds bound" in routing.ask_blocker(state, ASKS, 1)


def test_max_rounds_zero_never_asks():
    assert routing.after_pre_check({"pre_decision": ASKS}, ctx(max_rounds=0)) == routing.RETRIEVE


def test_a_question_asked_before_is_not_asked_again_even_reworded_in_case_and_punctuation():
    state = {"pre_decision": {**ASKS, "question": "which  PRODUCT ?"}, "asked_questions": ["Which product?"]}
    assert routing.after_pre_check(state, ctx(max_rounds=5)) == routing.RETRIEVE
    assert "already asked" in routing.ask_blocker(state, state["pre_decision"], 5)


def test_a_decision_without_question_is_not_asked():
    state = {"pre_decision": {**ASKS, "question": "  "}}
    assert routing.after_pre_check(state, ctx()) == routing.RETRIEVE


def test_resolve_context_fills_defaults_and_rejects_bad_values():
    settings = Settings(top_k=7, ask_mode="message")
    resolved = resolve_context({"max_rounds": 2}, default_context(settings))
    assert resolved["top_k"] == 7 and resolved["ask_mode"] == "message" and resolved["max_rounds"] == 2
    assert resolve_context(None, default_context(settings))["top_k"] == 7
    with pytest.raises(ValueError, match="unknown context key"):
        resolve_context({"topk": 3}, default_context(settings))
    with pytest.raises(ValueError, match="ask_mode"):
        resolve_context({"ask_mode": "shout"}, default_context(settings))
    with pytest.raises(ValueError, match="threshold"):
        resolve_context({"threshold": 1.5}, default_context(settings))


def test_graph_has_the_designed_nodes_and_edges():
    builder = create_clarifying_rag(
        clarifier=ScriptedClarifier(), retriever=StaticRetriever([]), rewriter=lambda m: "", settings=Settings()
    )
    drawn = builder.compile().get_graph()
    assert set(drawn.nodes) == {"__start__", "__end__", "rewrite", "pre_check", "retrieve", "post_check", "ask_user", "await_reply", "answer"}
    edges = {(e.source, e.target) for e in drawn.edges}
    assert {
        ("__start__", "rewrite"), ("rewrite", "pre_check"), ("rewrite", "retrieve"), ("rewrite", "answer"),
        ("pre_check", "ask_user"), ("pre_check", "retrieve"), ("retrieve", "post_check"), ("retrieve", "answer"),
        ("post_check", "ask_user"), ("post_check", "answer"), ("ask_user", "await_reply"), ("ask_user", "__end__"),
        ("await_reply", "rewrite"),
        ("answer", "__end__"),
    } == edges
