"""The whole graph with fakes: both ask modes, the rounds bound, no repeated question, state
serialisation, bad input and token streaming."""

from __future__ import annotations

import asyncio
import json
import uuid
import warnings

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.load import dumpd, load
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, SystemMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.runnables import RunnableLambda
from langchain_core.tracers.run_collector import RunCollectorCallbackHandler
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from askbetter.graph.context import Context, accepted_types, default_context, resolve_context
from askbetter.graph.factory import create_clarifying_rag
from askbetter.graph.testing import ScriptedClarifier, StaticRetriever
from askbetter.nodes.answer import ANSWER_INSTRUCTION, EMPTY_TURN_REPLY, SOURCES_TAG, answer_prompt
from askbetter.settings import RUN_SETTINGS, Settings

PASSAGES = [
    {"id": "c1", "title": "Sync in Nimbus Cloud", "text": "Admins turn on Cloud Sync.", "score": 0.8, "source": "/c/cloud-sync.md"},
    {"id": "d1", "title": "Sync in Nimbus Desktop", "text": "Choose Preferences > Sync.", "score": 0.7, "source": "/c/desktop-sync.md"},
]
ANSWER_TEXT = "Open Preferences and choose Sync [2]."


def echo_rewriter(messages):
    """Returns the last message unchanged (accepted, so the query is the raw turn)."""
    return messages[-1].text


def build(clarifier, *, answers=(ANSWER_TEXT,), rewriter=echo_rewriter, **settings):
    """A compiled graph over fakes, its retriever, and a fresh thread config."""
    retriever = StaticRetriever(PASSAGES)
    graph = create_clarifying_rag(
        clarifier=clarifier,
        retriever=retriever,
        answer_model=GenericFakeChatModel(messages=iter(answers)),
        rewriter=rewriter,
        settings=Settings(**settings),
    ).compile(checkpointer=InMemorySaver())
    return graph, retriever, {"configurable": {"thread_id": str(uuid.uuid4())}}


def user(text):
    return {"messages": [HumanMessage(text)]}


def nodes_run(graph, payload, config, context=None):
    return [node for update in graph.stream(payload, config, context=context, stream_mode="updates") for node in update]


# ---------------------------------------------------------------- routing through the graph


def test_clear_query_runs_every_check_and_answers_with_sources():
    clarifier = ScriptedClarifier(pre=[None], post=[None])
    graph, retriever, config = build(clarifier)
    assert nodes_run(graph, user("How do I turn on sync in Nimbus Desktop?"), config) == [
        "rewrite", "pre_check", "retrieve", "post_check", "answer"]
    state = graph.get_state(config).values
    assert retriever.queries == ["How do I turn on sync in Nimbus Desktop?"]
    answer = state["messages"][-1]
    assert isinstance(answer, AIMessage)
    assert answer.text.startswith(ANSWER_TEXT)
    assert "Sources:\n[1] Sync in Nimbus Cloud (cloud-sync.md)\n[2] Sync in Nimbus Desktop (desktop-sync.md)" in answer.text
    assert [stage for stage, _, _ in clarifier.calls] == ["pre", "post"]
    # post_check sees the retrieved passages as documents
    assert [d["title"] for d in clarifier.calls[1][2]] == ["Sync in Nimbus Cloud", "Sync in Nimbus Desktop"]
    assert state["pre_decision"]["score"] == pytest.approx(0.1) and state["post_decision"]["stage"] == "post"


@pytest.mark.parametrize(
    "context, expected_nodes, expected_stages",
    [
        ({"pre_check": False}, ["rewrite", "retrieve", "post_check", "answer"], ["post"]),
        ({"post_check": False}, ["rewrite", "pre_check", "retrieve", "answer"], ["pre"]),
        ({"pre_check": False, "post_check": False}, ["rewrite", "retrieve", "answer"], []),
    ],
)
def test_checks_can_be_switched_off_per_run(context, expected_nodes, expected_stages):
    clarifier = ScriptedClarifier(pre=[None], post=[None])
    graph, _, config = build(clarifier)
    assert nodes_run(graph, user("q about sync"), config, context) == expected_nodes
    assert [stage for stage, _, _ in clarifier.calls] == expected_stages


def test_checks_default_to_the_settings():
    clarifier = ScriptedClarifier(pre=[None], post=[None])
    graph, _, config = build(clarifier, pre_check=False)
    assert nodes_run(graph, user("q about sync"), config) == ["rewrite", "retrieve", "post_check", "answer"]


def test_post_check_question_is_asked_after_retrieval():
    clarifier = ScriptedClarifier(pre=[None, None], post=["Cloud or Desktop?", None])
    graph, _, config = build(clarifier)
    out = graph.invoke(user("How do I turn on sync?"), config)
    assert out["__interrupt__"][0].value == {"question": "Cloud or Desktop?", "score": 0.9, "stage": "post", "round": 1}


# ---------------------------------------------------------------- interrupt mode


def test_interrupt_then_resume_folds_the_reply_into_the_dialog():
    clarifier = ScriptedClarifier(pre=["Which product: Nimbus Cloud or Nimbus Desktop?", None], post=[None])
    graph, retriever, config = build(clarifier)
    out = graph.invoke(user("How do I turn on sync?"), config, context={"ask_mode": "interrupt"})
    payload = out["__interrupt__"][0].value
    assert payload == {"question": "Which product: Nimbus Cloud or Nimbus Desktop?", "score": 0.9, "stage": "pre", "round": 1}
    assert graph.get_state(config).next == ("await_reply",)
    assert retriever.queries == []  # paused before retrieval

    out = graph.invoke(Command(resume="Nimbus Desktop"), config, context={"ask_mode": "interrupt"})
    kinds = [(type(m).__name__, m.text) for m in out["messages"]]
    assert kinds[:3] == [
        ("HumanMessage", "How do I turn on sync?"),
        ("AIMessage", "Which product: Nimbus Cloud or Nimbus Desktop?"),
        ("HumanMessage", "Nimbus Desktop"),
    ]
    assert kinds[3][0] == "AIMessage" and kinds[3][1].startswith(ANSWER_TEXT)
    # the re-check saw the question and the reply
    assert clarifier.calls[1][1][-2:] == [
        {"role": "assistant", "content": "Which product: Nimbus Cloud or Nimbus Desktop?"},
        {"role": "user", "content": "Nimbus Desktop"},
    ]
    assert out["clarification_rounds"] == 1 and out["asked_questions"] == ["Which product: Nimbus Cloud or Nimbus Desktop?"]
    assert out["awaiting_reply"] is False


def test_reply_to_a_question_is_searched_together_with_the_clarified_query():
    # a rewriter whose output drops the reply's words is rejected: the fallback joins query and reply
    clarifier = ScriptedClarifier(pre=["Which product?", None], post=[None])
    graph, retriever, config = build(clarifier, rewriter=lambda messages: "How do I turn on sync?")
    graph.invoke(user("How do I turn on sync?"), config)
    graph.invoke(Command(resume="Nimbus Desktop"), config)
    assert retriever.queries == ["How do I turn on sync? Nimbus Desktop"]


def test_a_new_message_instead_of_the_resume_is_read_as_the_reply_and_the_question_is_not_asked_again():
    clarifier = ScriptedClarifier(pre=["Which product?", "Which product?"], post=[None])
    graph, retriever, config = build(clarifier)
    graph.invoke(user("How do I turn on sync?"), config)
    state = graph.get_state(config).values  # paused: the question is already in the thread
    assert [m.text for m in state["messages"]] == ["How do I turn on sync?", "Which product?"]
    assert state["asked_questions"] == ["Which product?"] and state["awaiting_reply"] is True

    out = graph.invoke(user("Nimbus Desktop"), config)  # a chat frontend sends the reply as a message
    assert "__interrupt__" not in out and out["asked_questions"] == ["Which product?"]
    assert [m.text for m in out["messages"][:3]] == ["How do I turn on sync?", "Which product?", "Nimbus Desktop"]
    assert out["clarification_rounds"] == 1 and out["messages"][-1].text.startswith(ANSWER_TEXT)


def test_a_resume_without_the_context_still_gets_the_reply():
    clarifier = ScriptedClarifier(pre=["Which product?", None], post=[None])
    graph, retriever, config = build(clarifier, ask_mode="message")
    graph.invoke(user("How do I turn on sync?"), config, context={"ask_mode": "interrupt"})
    out = graph.invoke(Command(resume="Nimbus Desktop"), config)  # the context forgotten: defaults apply
    assert [m.text for m in out["messages"][1:3]] == ["Which product?", "Nimbus Desktop"]
    assert out["messages"][-1].text.startswith(ANSWER_TEXT) and retriever.queries == ["Nimbus Desktop"]


def test_a_resume_that_also_adds_a_message_gets_the_reply():
    """`Command(resume=..., update=...)` adds a message while the thread is paused: the paused node,
    run again, read the question off the last message, and failed with a KeyError."""
    clarifier = ScriptedClarifier(pre=["Which product?", None], post=[None])
    graph, retriever, config = build(clarifier)
    graph.invoke(user("How do I turn on sync?"), config)
    out = graph.invoke(Command(resume="Nimbus Desktop", update={"messages": [SystemMessage("Answer briefly.")]}), config)
    assert [(m.type, m.text) for m in out["messages"][1:4]] == [
        ("ai", "Which product?"), ("system", "Answer briefly."), ("human", "Nimbus Desktop")]
    assert out["messages"][-1].text.startswith(ANSWER_TEXT) and retriever.queries == ["Nimbus Desktop"]


@pytest.mark.parametrize("as_node", [None, "ask_user"])
def test_a_paused_threads_state_edited_with_update_state_still_waits_for_the_reply(as_node):
    """`update_state` (a LangGraph server's edit of a thread's state too) runs the edges after the
    node it writes as without a run's runtime: an edge that took one as a parameter failed
    ("Missing required config key", langgraph#6340)."""
    clarifier = ScriptedClarifier(pre=["Which product?", None], post=[None])
    graph, retriever, config = build(clarifier)
    graph.invoke(user("How do I turn on sync?"), config)
    graph.update_state(config, {"messages": [SystemMessage("Answer briefly.")]}, as_node=as_node)
    assert graph.get_state(config).next == ("await_reply",)
    out = graph.invoke(Command(resume="Nimbus Desktop"), config)
    assert out["messages"][-1].text.startswith(ANSWER_TEXT) and retriever.queries == ["Nimbus Desktop"]


@pytest.mark.parametrize(("built", "run", "waits"), [("message", "interrupt", True), ("interrupt", "message", False)])
def test_update_state_keeps_the_ask_mode_the_question_was_asked_in(built, run, waits):
    """`update_state` routes after `ask_user` without the run's context: by the graph's `ask_mode`,
    a thread paused in interrupt mode on a graph built for message mode ended (its resume dropped),
    and a message-mode thread on an interrupt-mode graph was shown waiting in `await_reply`."""
    clarifier = ScriptedClarifier(pre=["Which product?", None], post=[None])
    graph, retriever, config = build(clarifier, ask_mode=built)
    graph.invoke(user("How do I turn on sync?"), config, context={"ask_mode": run})
    graph.update_state(config, {"messages": [SystemMessage("Answer briefly.")]}, as_node="ask_user")
    assert graph.get_state(config).next == (("await_reply",) if waits else ())
    reply = Command(resume="Nimbus Desktop") if waits else user("Nimbus Desktop")
    out = graph.invoke(reply, config, context={"ask_mode": run})
    assert out["messages"][-1].text.startswith(ANSWER_TEXT) and retriever.queries == ["Nimbus Desktop"]


# ---------------------------------------------------------------- message mode


def test_message_mode_ends_the_turn_with_the_question_and_the_next_message_continues_it():
    clarifier = ScriptedClarifier(pre=["Which product?", "Which product again?"], post=[None])
    graph, retriever, config = build(clarifier, ask_mode="message")
    out = graph.invoke(user("How do I turn on sync?"), config)
    assert "__interrupt__" not in out
    assert isinstance(out["messages"][-1], AIMessage) and out["messages"][-1].text == "Which product?"
    assert out["messages"][-1].response_metadata["askbetter_clarification"]["stage"] == "pre"
    assert out["awaiting_reply"] is True and graph.get_state(config).next == ()

    out = graph.invoke(user("Nimbus Desktop"), config)
    # the reply continues the turn: the rounds bound (1) holds, the second question is not asked
    assert out["clarification_rounds"] == 1
    assert out["asked_questions"] == ["Which product?"]
    assert out["messages"][-1].text.startswith(ANSWER_TEXT)
    assert retriever.queries == ["Nimbus Desktop"]


# ---------------------------------------------------------------- rounds bound, no repeats


def test_rounds_bound_allows_exactly_max_rounds_questions_per_turn():
    clarifier = ScriptedClarifier(pre=["Which product?", "Which version?", "Which platform?"], post=[None])
    graph, _, config = build(clarifier, max_rounds=2)
    context = {"max_rounds": 2}
    assert graph.invoke(user("How do I turn on sync?"), config, context=context)["__interrupt__"][0].value["round"] == 1
    assert graph.invoke(Command(resume="Desktop"), config, context=context)["__interrupt__"][0].value["round"] == 2
    out = graph.invoke(Command(resume="Version 4"), config, context=context)
    assert "__interrupt__" not in out
    assert out["clarification_rounds"] == 2 and out["messages"][-1].text.startswith(ANSWER_TEXT)
    assert out["pre_decision"]["question"] == "Which platform?"  # decided, but not asked


def test_rounds_reset_with_each_new_user_turn():
    clarifier = ScriptedClarifier(pre=["Which product?", None, "Which office?"], post=[None])
    graph, _, config = build(clarifier, answers=[ANSWER_TEXT, "unused"])
    graph.invoke(user("How do I turn on sync?"), config)
    graph.invoke(Command(resume="Desktop"), config)
    out = graph.invoke(user("Where do I park?"), config)
    assert out["__interrupt__"][0].value == {"question": "Which office?", "score": 0.9, "stage": "pre", "round": 1}


def test_a_question_answered_earlier_in_the_thread_is_never_asked_again():
    clarifier = ScriptedClarifier(pre=["Which product?", "which product", "Which product?"], post=[None, None])
    graph, _, config = build(clarifier, max_rounds=3, answers=[ANSWER_TEXT, ANSWER_TEXT])
    graph.invoke(user("How do I turn on sync?"), config)
    out = graph.invoke(Command(resume="Desktop"), config)  # same question again in the same turn
    assert "__interrupt__" not in out and out["asked_questions"] == ["Which product?"]
    out = graph.invoke(user("And how do I turn it off?"), config)  # and in a later turn
    assert "__interrupt__" not in out and out["asked_questions"] == ["Which product?"]
    assert out["messages"][-1].text.startswith(ANSWER_TEXT)


# ---------------------------------------------------------------- run settings


def test_context_threshold_rereads_the_score():
    clarifier = ScriptedClarifier(pre=["Which product?"], post=[None])
    graph, _, config = build(clarifier)
    out = graph.invoke(user("How do I turn on sync?"), config, context={"threshold": 0.95})
    assert "__interrupt__" not in out and out["pre_decision"]["needs_clarification"] is False
    assert out["pre_decision"]["question"] is None  # a clear decision has no question, as the clarifier's own


def test_context_threshold_below_the_clarifiers_asks_with_its_question_method():
    class WithQuestion(ScriptedClarifier):
        def question(self, messages, documents=None):
            return "Cloud or Desktop?"

    graph, _, config = build(WithQuestion(pre=[None], post=[None]))
    out = graph.invoke(user("How do I turn on sync?"), config, context={"threshold": 0.05})
    assert out["__interrupt__"][0].value["question"] == "Cloud or Desktop?"


def test_context_threshold_below_the_clarifiers_asks_with_the_default_clarifiers_question(monkeypatch):
    from askbetter.clarifier.local import LocalClarifier

    class WithQuestion(ScriptedClarifier):
        def question(self, messages, documents=None):
            return "Cloud or Desktop?"

    monkeypatch.setattr(LocalClarifier, "from_settings", lambda settings: WithQuestion(pre=[None], post=[None]))
    graph = create_clarifying_rag(  # the default clarifier: built from the settings on first use
        retriever=StaticRetriever(PASSAGES), answer_model=GenericFakeChatModel(messages=iter([ANSWER_TEXT])),
        rewriter=echo_rewriter, settings=Settings(),
    ).compile(checkpointer=InMemorySaver())
    out = graph.invoke(user("How do I turn on sync?"), {"configurable": {"thread_id": "lazy"}}, context={"threshold": 0.05})
    assert out["__interrupt__"][0].value["question"] == "Cloud or Desktop?"


@pytest.mark.parametrize(("key", "meant"), [("ask-mode", "ask_mode"), ("topK", "top_k"), ("MaxRounds", "max_rounds")])
def test_a_run_setting_written_otherwise_is_a_clear_error(key, meant):
    graph, _, config = build(ScriptedClarifier(pre=[None], post=[None]))
    with pytest.raises(ValueError) as caught:
        graph.invoke(user("q"), config, context={key: "message"})
    assert str(caught.value) == (
        f"unknown context key {key!r}: did you mean {meant!r}? (run settings: "
        "['ask_mode', 'max_rounds', 'post_check', 'pre_check', 'threshold', 'top_k'])"
    )


def test_a_context_key_a_letter_off_a_run_setting_is_ignored_with_a_warning():
    graph, _, config = build(ScriptedClarifier(pre=["Which product?"], post=[]))
    with pytest.warns(UserWarning, match="context key 'treshold' is no run setting and is ignored; did you mean 'threshold'"):
        out = graph.invoke(user("How do I turn on sync?"), config, context={"treshold": 0.99})
    assert out["__interrupt__"][0].value["question"] == "Which product?"


@pytest.mark.parametrize(("key", "meant"), [("treshold", "threshold"), ("topq", "top_k"), ("tpo_k", "top_k"),
                                           ("max_round", "max_rounds"), ("task_mode", "ask_mode")])
def test_a_context_key_one_edit_off_a_run_setting_warns(key, meant):
    with pytest.warns(UserWarning, match=f"^context key '{key}' is no run setting and is ignored; did you mean '{meant}'"):
        resolve_context({key: 1}, default_context(Settings()))


@pytest.mark.parametrize("key", ["top_p", "temperature", "user_id", "thread_id"])
def test_other_context_keys_are_ignored_without_a_warning(key):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_context({key: 1}, default_context(Settings())) == default_context(Settings())


def in_parent(clarifier, *, answers=1, subgraph_checkpointer=None, retriever=None, context_schema=None,
              checkpointer=None):
    """The graph (fakes around `clarifier`) compiled with `subgraph_checkpointer` as the one node
    of a parent `MessagesState` graph, compiled with `checkpointer`."""
    from langgraph.graph import END, START, MessagesState, StateGraph

    rag = create_clarifying_rag(
        clarifier=clarifier, retriever=retriever or StaticRetriever(PASSAGES),
        answer_model=GenericFakeChatModel(messages=iter([ANSWER_TEXT] * answers)), rewriter=echo_rewriter,
        settings=Settings(),
    ).compile(checkpointer=subgraph_checkpointer)
    parent = StateGraph(MessagesState, context_schema=context_schema)
    parent.add_node("rag", rag)
    parent.add_edge(START, "rag")
    parent.add_edge("rag", END)
    return parent.compile(checkpointer=checkpointer)


def test_context_keys_of_a_parent_graph_or_a_server_are_ignored():
    """Run as a subgraph, the graph gets its parent's context; a LangGraph server copies
    `configurable` (thread_id, user_id, ...) into the context."""
    app = in_parent(ScriptedClarifier(pre=["Which product?", None], post=[None]), checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "parent"}}
    context = {"user_id": "u1", "top_p": 0.9, "thread_id": "parent", "ask_mode": "message"}
    out = app.invoke(user("How do I turn on sync?"), config, context=context)
    assert out["messages"][-1].text == "Which product?"  # message mode: the run setting was read
    out = app.invoke(user("Nimbus Desktop"), config, context=context)
    assert out["messages"][-1].text.startswith(ANSWER_TEXT)


def test_message_mode_in_a_subgraph_with_its_own_memory_reads_the_next_run_as_the_reply():
    """README: compiled with `checkpointer=True`, the graph keeps its turn between the parent's
    runs, so the reply is read as one (its one round spent: answered, not asked again)."""
    app = in_parent(ScriptedClarifier(pre=["Which product?", "Which product?"], post=[None]),
                    subgraph_checkpointer=True, checkpointer=InMemorySaver())
    config, context = {"configurable": {"thread_id": "parent"}}, {"ask_mode": "message"}
    assert app.invoke(user("How do I turn on sync?"), config, context=context)["messages"][-1].text == "Which product?"
    out = app.invoke(user("Nimbus Desktop"), config, context=context)
    assert out["messages"][-1].text.startswith(ANSWER_TEXT)
    assert [m.text for m in out["messages"]].count("Which product?") == 1


def test_a_subgraph_with_its_own_memory_does_not_ask_a_question_again_in_a_later_turn():
    """README: compiled with `checkpointer=True`, the questions asked last for the parent's later
    runs (compiled plainly, the third run here asks "Which product?" once more)."""
    app = in_parent(ScriptedClarifier(pre=["Which product?"] * 3, post=[None] * 3), answers=2,
                    subgraph_checkpointer=True, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "parent"}}
    assert "__interrupt__" in app.invoke(user("How do I turn on sync?"), config)
    app.invoke(Command(resume="Nimbus Desktop"), config)
    out = app.invoke(user("And on mobile?"), config)
    assert "__interrupt__" not in out and out["messages"][-1].text.startswith(ANSWER_TEXT)


def test_a_parent_graphs_dataclass_or_pydantic_context_is_read_by_its_fields():
    from dataclasses import dataclass

    from pydantic import BaseModel

    @dataclass
    class ParentContext:
        user_id: str = "u1"
        top_k: int = 1

    class ParentModel(BaseModel):
        user_id: str = "u1"
        top_k: int = 1

    for schema in (ParentContext, ParentModel):
        retriever = StaticRetriever(PASSAGES)
        app = in_parent(ScriptedClarifier(pre=[None], post=[None]), retriever=retriever, context_schema=schema)
        out = app.invoke(user("How do I turn on sync?"), context={"user_id": "u2"})
        assert out["messages"][-1].text == f"{ANSWER_TEXT}\n\nSources:\n[1] Sync in Nimbus Cloud (cloud-sync.md)", schema


@pytest.mark.parametrize(
    ("context", "error", "message"),
    [
        ({"top_k": "3"}, TypeError, "context key 'top_k' must be int, not str '3'"),
        ({"threshold": "0.5"}, TypeError, "context key 'threshold' must be float or int, not str '0.5'"),
        ({"max_rounds": True}, TypeError, "context key 'max_rounds' must be int, not bool True"),
        ({"pre_check": 1}, TypeError, "context key 'pre_check' must be bool, not int 1"),
        ({"top_k": 21}, ValueError, "context key 'top_k' must be between 1 and 20, not 21"),
        ({"max_rounds": -1}, ValueError, "context key 'max_rounds' must be 0 or more, not -1"),
        (Settings(), TypeError, "the context must be a mapping of run settings, e.g. {'ask_mode': 'message'}, not Settings"),
        ("message", TypeError, "the context must be a mapping of run settings, e.g. {'ask_mode': 'message'}, not str"),
    ],
)
def test_context_values_of_the_wrong_type_or_range_are_clear_errors(context, error, message):
    graph, retriever, config = build(ScriptedClarifier(pre=[None], post=[None]))
    with pytest.raises(error) as caught:
        graph.invoke(user("q"), config, context=context)
    assert str(caught.value) == message and retriever.queries == []


def test_the_context_keys_are_the_run_settings_each_with_a_type():
    assert list(Context.__annotations__) == list(RUN_SETTINGS) == list(accepted_types())
    assert accepted_types()["threshold"] == (float, int) and accepted_types()["ask_mode"] == (str,)


@pytest.mark.parametrize("inputs", [Command(resume="Nimbus Desktop"), {"messages": []}], ids=["resume", "no messages"])
def test_a_turn_with_no_user_message_on_a_fresh_thread_is_a_clear_error(inputs):
    graph, retriever, config = build(ScriptedClarifier())
    thread = config["configurable"]["thread_id"]
    with pytest.raises(ValueError) as caught:
        graph.invoke(inputs, config)
    assert str(caught.value) == (
        f"no user message to act on in thread '{thread}': send one, as {{'messages': [('user', '...')]}}; "
        "Command(resume=...) answers a clarification question, and none is waiting"
    )
    assert retriever.queries == []


def test_a_refused_input_stays_in_the_thread_and_the_checkpoint_before_it_goes_on_as_the_readme_says():
    """LangGraph stores an input before any node runs, and a node that raises writes nothing: the
    refused message stays, and the question the thread was paused on is no longer waiting."""
    clarifier = ScriptedClarifier(pre=["Which product?", None], post=[None])
    graph, _, config = build(clarifier)
    graph.invoke(user("How do I turn on sync?"), config)
    with pytest.raises(ValueError, match="^no user message to act on"):
        graph.invoke({"messages": [AIMessage("Sure.")]}, config)
    state = graph.get_state(config)
    assert state.values["messages"][-1].text == "Sure." and not state.interrupts

    before = next(s for s in graph.get_state_history(config) if s.metadata["source"] == "input").parent_config
    out = graph.invoke(Command(resume="Nimbus Desktop"), before)
    assert [m.text for m in out["messages"][:3]] == ["How do I turn on sync?", "Which product?", "Nimbus Desktop"]
    assert out["messages"][3].text.startswith(ANSWER_TEXT)
    assert graph.get_state(config).values == out  # the thread goes on from there


# ---------------------------------------------------------------- state, bad input, streaming


def test_thread_state_round_trips_through_json():
    clarifier = ScriptedClarifier(pre=["Which product?", None], post=[None])
    saver = InMemorySaver()
    graph = create_clarifying_rag(
        clarifier=clarifier, retriever=StaticRetriever(PASSAGES),
        answer_model=GenericFakeChatModel(messages=iter([ANSWER_TEXT])), rewriter=echo_rewriter, settings=Settings(),
    ).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "json"}}
    graph.invoke(user("How do I turn on sync?"), config)
    for step in ("paused", "done"):
        values = saver.get_tuple(config).checkpoint["channel_values"]
        plain = {k: v for k, v in values.items() if k != "messages" and not k.startswith("branch:")}
        assert json.loads(json.dumps(plain)) == plain, step
        messages = values["messages"]
        assert load(json.loads(json.dumps(dumpd(messages))), allowed_objects="messages") == messages, step
        if step == "paused":
            graph.invoke(Command(resume="Desktop"), config)
    assert {"query", "documents", "pre_decision", "post_decision", "clarification_rounds", "asked_questions"} <= set(plain)


@pytest.mark.parametrize("text", ["", "   \n\t "])
def test_empty_turn_gets_a_polite_reply_without_any_model(text):
    clarifier = ScriptedClarifier()  # no scripted decision: any call would fail
    graph, retriever, config = build(clarifier, answers=[])
    out = graph.invoke(user(text), config)
    assert out["messages"][-1].text == EMPTY_TURN_REPLY
    assert clarifier.calls == [] and retriever.queries == []
    assert nodes_run(graph, user(text), config) == ["rewrite", "answer"]


@pytest.mark.parametrize("ask_mode", ["interrupt", "message"])
def test_a_blank_reply_to_a_question_declines_it_and_answers_the_clarified_query(ask_mode):
    """No check runs on the reply: the dialog would end on the question (its blank turn dropped),
    which the clarifier refuses, and the user has said no more."""
    clarifier = ScriptedClarifier(pre=["Which product?"])
    graph, retriever, config = build(clarifier)
    context = {"ask_mode": ask_mode}
    graph.invoke(user("How do I turn on sync?"), config, context=context)
    reply = Command(resume="  ") if ask_mode == "interrupt" else user("  ")
    resumed = ["await_reply"] if ask_mode == "interrupt" else []
    assert nodes_run(graph, reply, config, context) == [*resumed, "rewrite", "retrieve", "answer"]
    out = graph.get_state(config).values
    assert retriever.queries == ["How do I turn on sync?"] and len(clarifier.calls) == 1
    assert out["messages"][-1].text.startswith(ANSWER_TEXT) and out["clarification_rounds"] == 1


@pytest.mark.parametrize(
    "reply",
    [HumanMessage("Nimbus Desktop"), ("user", "Nimbus Desktop"), {"role": "user", "content": "Nimbus Desktop"},
     HumanMessage([{"type": "text", "text": "Nimbus Desktop"}])],
    ids=["message", "tuple", "dict", "content blocks"],
)
def test_a_reply_resumed_as_a_message_is_read_by_its_text_not_its_repr(reply):
    clarifier = ScriptedClarifier(pre=["Which product?", None], post=[None])
    graph, retriever, config = build(clarifier)
    graph.invoke(user("How do I turn on sync?"), config)
    out = graph.invoke(Command(resume=reply), config)
    assert out["messages"][2].type == "human" and out["messages"][2].text == "Nimbus Desktop"
    assert clarifier.calls[1][1][-1] == {"role": "user", "content": "Nimbus Desktop"}
    assert retriever.queries == ["Nimbus Desktop"]  # the echo rewriter's query: the reply's text


@pytest.mark.parametrize("reply", [2, {"role": "tool", "content": "2"}], ids=["int", "tool message dict"])
def test_a_reply_of_another_type_is_read_as_its_str(reply):
    """Never an error: LangGraph keeps the resume value, and a node failing on it would fail every
    later resume of the thread the same way."""
    clarifier = ScriptedClarifier(pre=["Which version?", None], post=[None])
    graph, retriever, config = build(clarifier)
    graph.invoke(user("How do I turn on sync?"), config)
    out = graph.invoke(Command(resume=reply), config)
    assert out["messages"][2].text == str(reply) and out["messages"][-1].text.startswith(ANSWER_TEXT)


def test_overlong_turn_is_truncated_with_a_warning_not_a_crash():
    clarifier = ScriptedClarifier(pre=[None], post=[None])
    graph, retriever, config = build(clarifier, max_input_tokens=256)
    with pytest.warns(UserWarning, match="characters; only the first 512"):
        out = graph.invoke(user("sync " * 50_000), config)
    assert len(retriever.queries[0]) == 512
    assert out["messages"][-1].text.startswith(ANSWER_TEXT)


def test_answer_tokens_then_its_sources_stream_in_messages_mode_and_rewrite_tokens_do_not():
    answer_text = "Choose Preferences then Sync [2]"
    rewriter = GenericFakeChatModel(messages=iter(["How do I turn on sync in Nimbus Desktop?"]))
    clarifier = ScriptedClarifier(pre=[None], post=[None])
    graph, retriever, config = build(clarifier, answers=[answer_text], rewriter=rewriter)
    history = {"messages": [HumanMessage("Tell me about Nimbus Desktop."), AIMessage("It is a notes app."),
                            HumanMessage("How do I turn on sync?")]}
    chunks = [(m, meta) for m, meta in graph.stream(history, config, stream_mode="messages")]
    assert all(isinstance(m, AIMessageChunk) for m, _ in chunks) and len(chunks) > 2  # token by token
    assert {meta["langgraph_node"] for _, meta in chunks} == {"answer"}
    assert retriever.queries == ["How do I turn on sync in Nimbus Desktop?"]  # the rewrite was used
    # a client reading only this stream gets the stored answer, Sources list included, as one message
    final = graph.get_state(config).values["messages"][-1]
    assert {m.id for m, _ in chunks} == {final.id}
    assert "".join(m.text for m, _ in chunks) == final.text == (
        f"{answer_text}\n\nSources:\n[1] Sync in Nimbus Cloud (cloud-sync.md)\n[2] Sync in Nimbus Desktop (desktop-sync.md)")
    *tokens, (last, meta) = chunks
    assert last.text == final.text.removeprefix(answer_text) and meta["tags"] == [SOURCES_TAG]
    assert not any(SOURCES_TAG in meta.get("tags", ()) for _, meta in tokens)


def trace_tree(run):
    """A traced run as (name, [its children's trees])."""
    return run.name, [trace_tree(child) for child in run.child_runs]


@pytest.mark.parametrize("way", ["sync", "async"])
def test_a_trace_shows_each_node_once_with_the_models_it_called_under_it(way):
    """A tracer (LangSmith's, or any callback handler) sees one run per node, as LangGraph opens
    it, with the answer model's run right under the answer node's: no same-named run inside each
    node's (a node that was a RunnableLambda opened one more)."""
    graph, _, config = build(ScriptedClarifier(pre=[None], post=[None]))
    collector = RunCollectorCallbackHandler()
    traced = {**config, "callbacks": [collector]}
    if way == "sync":
        graph.invoke(user("How do I turn on sync?"), traced)
    else:
        asyncio.run(graph.ainvoke(user("How do I turn on sync?"), traced))
    name, nodes = trace_tree(collector.traced_runs[0])
    assert [node for node, _ in nodes] == ["rewrite", "pre_check", "retrieve", "post_check", "answer"]
    for node, children in nodes:
        assert node not in [child for child, _ in children], f"{node} holds a run of its own name"
    assert [child for child, _ in dict(nodes)["answer"]] == ["GenericFakeChatModel", "sources"]


def test_building_the_default_graph_loads_nothing(monkeypatch):
    from askbetter.clarifier import assets
    from askbetter.clarifier.local import LocalClarifier
    from askbetter.retrieval.store import ChromaRetriever

    def boom(*args, **kwargs):
        raise AssertionError("loaded at build time")

    monkeypatch.setattr(assets, "load_model", boom)
    monkeypatch.setattr(LocalClarifier, "from_settings", boom)
    monkeypatch.setattr(ChromaRetriever, "from_settings", boom)
    graph = create_clarifying_rag(settings=Settings()).compile(checkpointer=InMemorySaver())
    out = graph.invoke(user(" "), {"configurable": {"thread_id": "lazy"}})  # an empty turn needs no model
    assert out["messages"][-1].text == EMPTY_TURN_REPLY
    with pytest.raises(AssertionError, match="loaded at build time"):  # the first real turn loads
        graph.invoke(user("How do I turn on sync?"), {"configurable": {"thread_id": "lazy"}})


def test_a_clarifier_or_retriever_without_its_method_is_refused_at_build_time():
    class Index:  # neither search nor invoke
        def query(self, text):
            return [{"text": "Choose Preferences > Sync."}]

    with pytest.raises(TypeError) as caught:
        create_clarifying_rag(clarifier=ScriptedClarifier(), retriever=Index(), settings=Settings())
    assert str(caught.value) == (
        "retriever must have a method search(query, k) -> list of passage dicts (askbetter.Retriever) or be a "
        "LangChain retriever (invoke(query) -> list of Documents), not Index"
    )
    with pytest.raises(TypeError, match=r"^clarifier must have a method check\(messages, documents=None\) -> "
                                        r"Decision \(askbetter.Clarifier\), not function$"):
        create_clarifying_rag(clarifier=lambda messages: None, settings=Settings())


@pytest.mark.parametrize(
    "found, error",
    [
        (None, "returned NoneType, not a list of passages"),
        ({"id": "d1", "text": "Choose Sync."}, "returned dict, not a list of passages"),
        ([{"id": "d1", "title": "Sync"}], "returned dict \"{'id': 'd1', 'title': 'Sync'}\", not a passage"),
        ("LangChain Document", "returned Document \"page_content='Choose Sync.'\", not a passage"),
    ],
    ids=["None", "one passage", "no text", "Document"],
)
def test_a_retriever_returning_no_passage_list_is_a_clear_error(found, error):
    from langchain_core.documents import Document

    class Custom:
        def search(self, query, k=4):
            return [Document(page_content="Choose Sync.")] if found == "LangChain Document" else found

    graph = create_clarifying_rag(
        clarifier=ScriptedClarifier(pre=[None], post=[None]), retriever=Custom(),
        answer_model=GenericFakeChatModel(messages=iter([ANSWER_TEXT])), rewriter=echo_rewriter, settings=Settings(),
    ).compile(checkpointer=InMemorySaver())
    with pytest.raises(TypeError) as caught:
        graph.invoke(user("How do I turn on sync?"), {"configurable": {"thread_id": "custom"}})
    assert str(caught.value).startswith(f"Custom.search {error}")


@pytest.mark.parametrize("way", ["invoke", "ainvoke"])
def test_a_clarifiers_numpy_decision_is_checkpointed_as_plain_values(way):
    """A clarifier scoring with numpy (a classifier's probability) gives `numpy.float32` scores
    and `numpy.bool_` decisions, which the checkpointer refused to store ("not msgpack serializable")."""
    import numpy as np

    from askbetter.clarifier.types import Decision

    class NumpyClarifier:
        def check(self, messages, documents=None):
            score = np.float32(0.9)
            return Decision(needs_clarification=score >= 0.5, score=score, question=np.str_("Which product?"),
                            stage="post" if documents else "pre")

    graph = create_clarifying_rag(
        clarifier=NumpyClarifier(), retriever=StaticRetriever(PASSAGES),
        answer_model=GenericFakeChatModel(messages=iter([ANSWER_TEXT])), rewriter=echo_rewriter, settings=Settings(),
    ).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": way}}
    run = graph.invoke if way == "invoke" else lambda *args: asyncio.run(graph.ainvoke(*args))
    out = run(user("How do I turn on sync?"), config)
    assert out["__interrupt__"][0].value == {"question": "Which product?", "score": pytest.approx(0.9), "stage": "pre", "round": 1}
    decision = graph.get_state(config).values["pre_decision"]
    assert [type(decision[key]) for key in ("needs_clarification", "score", "question")] == [bool, float, str]


def test_a_clarifier_returning_no_decision_is_a_clear_error():
    class DictClarifier:
        def check(self, messages, documents=None):
            return {"needs_clarification": False, "score": 0.1}

    graph = create_clarifying_rag(
        clarifier=DictClarifier(), retriever=StaticRetriever(PASSAGES),
        answer_model=GenericFakeChatModel(messages=iter([ANSWER_TEXT])), rewriter=echo_rewriter, settings=Settings(),
    ).compile(checkpointer=InMemorySaver())
    with pytest.raises(TypeError) as caught:
        graph.invoke(user("How do I turn on sync?"), {"configurable": {"thread_id": "dict"}})
    assert str(caught.value) == ("DictClarifier.check returned dict \"{'needs_clarification': False, 'score': 0.1}\", "
                                 "not an askbetter Decision")


def test_passages_without_title_or_id_are_listed_in_the_sources():
    class Custom:
        def search(self, query, k=4):
            return iter([{"text": "Choose Preferences > Sync."}, {"id": "d2", "text": "Admins turn on Cloud Sync."}])

    clarifier = ScriptedClarifier(pre=[None], post=[None])
    graph = create_clarifying_rag(
        clarifier=clarifier, retriever=Custom(),
        answer_model=GenericFakeChatModel(messages=iter([ANSWER_TEXT])), rewriter=echo_rewriter, settings=Settings(),
    ).compile(checkpointer=InMemorySaver())
    out = graph.invoke(user("How do I turn on sync?"), {"configurable": {"thread_id": "custom"}})
    assert out["messages"][-1].text == f"{ANSWER_TEXT}\n\nSources:\n[1] untitled\n[2] d2"
    assert clarifier.calls[1][2] == [{"id": "", "text": "Choose Preferences > Sync."},
                                      {"id": "d2", "text": "Admins turn on Cloud Sync."}]


def test_a_retriever_that_ignores_k_is_cut_to_top_k():
    class Custom:
        def search(self, query, k=4):
            return [{"id": f"d{i}", "text": f"Passage {i}."} for i in range(10)]

    clarifier = ScriptedClarifier(pre=[None], post=[None])
    graph = create_clarifying_rag(
        clarifier=clarifier, retriever=Custom(),
        answer_model=GenericFakeChatModel(messages=iter([ANSWER_TEXT])), rewriter=echo_rewriter, settings=Settings(),
    ).compile(checkpointer=InMemorySaver())
    out = graph.invoke(user("How do I turn on sync?"), {"configurable": {"thread_id": "k"}}, context={"top_k": 3})
    assert [p["id"] for p in out["documents"]] == ["d0", "d1", "d2"]
    assert len(clarifier.calls[1][2]) == 3 and out["messages"][-1].text.endswith("[3] d2")


def test_an_async_run_passes_k_by_name_as_a_sync_run_does():
    class KeywordK:  # `k` keyword-only: the sync node calls `search(query, k=top_k)`
        def search(self, query, *, k=4):
            return [{"id": f"d{i}", "text": f"Passage {i}."} for i in range(k)]

    graph = create_clarifying_rag(
        clarifier=ScriptedClarifier(pre=[None], post=[None]), retriever=KeywordK(),
        answer_model=GenericFakeChatModel(messages=iter([ANSWER_TEXT])), rewriter=echo_rewriter, settings=Settings(),
    ).compile(checkpointer=InMemorySaver())
    turn = graph.ainvoke(user("How do I turn on sync?"), {"configurable": {"thread_id": "k"}}, context={"top_k": 2})
    out = asyncio.run(turn)
    assert [p["id"] for p in out["documents"]] == ["d0", "d1"]


def test_the_default_retriever_reports_a_missing_store_before_the_clarifier_runs(tmp_path):
    from askbetter.retrieval.errors import RetrievalError

    clarifier = ScriptedClarifier()  # no scripted decision: a call would fail
    graph = create_clarifying_rag(
        clarifier=clarifier, answer_model=GenericFakeChatModel(messages=iter([])), rewriter=echo_rewriter,
        settings=Settings(chroma_path=tmp_path / "store"),
    ).compile(checkpointer=InMemorySaver())
    with pytest.raises(RetrievalError, match="there is no Chroma store in"):
        graph.invoke(user("How do I turn on sync?"), {"configurable": {"thread_id": "empty"}})
    assert clarifier.calls == [] and not (tmp_path / "store").exists()


def test_a_bound_or_wrapped_chat_model_answers_rewrites_and_streams():
    model = GenericFakeChatModel(messages=iter(["How do I turn on sync in Nimbus Desktop?", "Choose Sync [2]"]))
    graph = create_clarifying_rag(
        clarifier=ScriptedClarifier(pre=[None], post=[None]), retriever=(retriever := StaticRetriever(PASSAGES)),
        answer_model=model.bind(stop=["\n\n\n"]).with_retry(), settings=Settings(),
    ).compile(checkpointer=InMemorySaver())
    history = {"messages": [HumanMessage("Tell me about Nimbus Desktop."), AIMessage("It is a notes app."),
                            HumanMessage("How do I turn on sync?")]}
    chunks = [m for m, meta in graph.stream(history, {"configurable": {"thread_id": "bound"}}, stream_mode="messages")]
    assert retriever.queries == ["How do I turn on sync in Nimbus Desktop?"]  # the model's rewrite
    assert len(chunks) > 2 and "".join(m.text for m in chunks).startswith("Choose Sync [2]\n\nSources:\n[1] ")


def test_a_system_message_in_the_input_steers_the_answer():
    prompts = []

    def model(prompt):
        prompts.append(prompt)
        return AIMessage("Choisissez Sync [2].")

    graph = create_clarifying_rag(
        clarifier=(clarifier := ScriptedClarifier(pre=[None], post=[None])), retriever=StaticRetriever(PASSAGES),
        answer_model=RunnableLambda(model), rewriter=echo_rewriter, settings=Settings(),
    ).compile(checkpointer=InMemorySaver())
    inputs = {"messages": [SystemMessage("Answer in French."), HumanMessage("How do I turn on sync?")]}
    graph.invoke(inputs, {"configurable": {"thread_id": "system"}})
    system, question = prompts[0]
    assert system.text == f"{ANSWER_INSTRUCTION}\n\nAnswer in French."
    assert question.text == answer_prompt("How do I turn on sync?", PASSAGES)[1].text
    assert clarifier.calls[0][1] == [{"role": "user", "content": "How do I turn on sync?"}]  # the clarifier's input as before


def test_a_chain_returning_a_str_answers_and_rewrites():
    model = GenericFakeChatModel(messages=iter(["How do I turn on sync in Nimbus Desktop?", "Choose Sync [2]"]))
    graph = create_clarifying_rag(
        clarifier=ScriptedClarifier(pre=[None], post=[None]), retriever=(retriever := StaticRetriever(PASSAGES)),
        answer_model=model | StrOutputParser(), settings=Settings(),
    ).compile(checkpointer=InMemorySaver())
    history = {"messages": [HumanMessage("Tell me about Nimbus Desktop."), AIMessage("It is a notes app."),
                            HumanMessage("How do I turn on sync?")]}
    streamed = [m for m, _ in graph.stream(history, {"configurable": {"thread_id": "str"}}, stream_mode="messages")]
    assert retriever.queries == ["How do I turn on sync in Nimbus Desktop?"]  # the chain's rewrite
    # the model's chunks, then (no message id to continue) the stored answer whole, Sources list included
    final = graph.get_state({"configurable": {"thread_id": "str"}}).values["messages"][-1]
    assert final.text.startswith("Choose Sync [2]\n\nSources:\n[1] Sync in Nimbus Cloud")
    assert streamed[-1] == final and "".join(m.text for m in streamed[:-1]) == "Choose Sync [2]"


def test_the_retrieve_step_shows_a_score_only_where_the_retriever_gave_one():
    # id and score are optional in a custom retriever's passages: none is shown as 0.00, and a
    # score that is no number (None) does not stop the CLI's step line
    from askbetter.graph.trace import describe

    passages = [{"id": "d1", "text": "a", "score": 0.812}, {"title": "Parking", "text": "b"},
                {"id": "d3", "text": "c", "score": None}, {"text": "d"}]
    assert describe("retrieve", {"documents": passages}, {}, {}) == (
        "4 passages: [1] d1 (0.81); [2] Parking; [3] d3; [4] untitled")
