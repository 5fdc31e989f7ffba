"""`create_clarifying_rag`: the clarifying RAG turn as an uncompiled LangGraph `StateGraph`.

```
START -> rewrite -> pre_check --ask--> ask_user --interrupt--> await_reply -> rewrite
                     | clear              \\--message--> END
                     v
                  retrieve -> post_check --ask--> ask_user
                                  | clear
                                  v
                                answer -> END
```

The caller compiles it and chooses the checkpointer (interrupt mode and multi-turn threads need
one): `create_clarifying_rag().compile(checkpointer=InMemorySaver())`. Run settings come through
`context=` at invoke time (see `askbetter.graph.context.Context`). Async runs (`ainvoke`,
`astream`) await the rewrite's, the checks' and the answer's models (cancelling a run halts a
generation at its next token) and a retriever's `asearch` where it has one (a LangChain retriever's
`ainvoke`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from langchain_core.documents import Document
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime, get_runtime

from askbetter.clarifier.types import Clarifier
from askbetter.graph import routing
from askbetter.graph.context import Context, default_context, resolve_context
from askbetter.graph.defaults import LazyClarifier, LazyRetriever, REWRITE_MAX_NEW_TOKENS, local_chat_model
from askbetter.graph.routing import ANSWER, ASK_USER, AWAIT_REPLY, POST_CHECK, PRE_CHECK, RETRIEVE, REWRITE
from askbetter.graph.state import InputState, RagState
from askbetter.nodes.answer import aanswer, answer
from askbetter.nodes.ask_user import ask_user, await_reply
from askbetter.nodes.messages import ChatModel, last_user_text
from askbetter.nodes.post_check import apost_check, post_check
from askbetter.nodes.pre_check import apre_check, pre_check
from askbetter.nodes.retrieve import aretrieve, retrieve
from askbetter.nodes.rewrite import Rewriter, arewrite, rewrite
from askbetter.retrieval.langchain import LangChainRetriever
from askbetter.retrieval.types import Retriever
from askbetter.settings import Settings

Update = dict[str, Any]


def create_clarifying_rag(
    clarifier: Clarifier | None = None,
    retriever: Retriever | Runnable[str, list[Document]] | None = None,
    answer_model: ChatModel | None = None,
    rewriter: Rewriter | None = None,
    settings: Settings | None = None,
) -> StateGraph[RagState, Context, InputState, RagState]:
    """Build the graph. Every component is optional; defaults come from `settings`
    (`Settings.from_env()` if None) and are built on first use, not here:

    - `clarifier`: `LocalClarifier.from_settings(settings)`;
    - `retriever`: a `Retriever` (`search(query, k)`), or a LangChain retriever as it is
      (`vectorstore.as_retriever()`, any `BaseRetriever`, or a runnable returning `Document`s:
      `LangChainRetriever` maps its documents to passages; its own k should be at least the run's
      `top_k`); default `ChromaRetriever` over the configured Chroma collection;
    - `answer_model`: any chat model, bound or wrapped too (`.bind(...)`, `.with_retry()`), or a
      chain ending in one (`prompt | model | StrOutputParser()`: a str result is read too); default
      the local base model as a `LocalChatModel` (sharing the clarifier's copy);
    - `rewriter`: a callable `(messages) -> query`, or a chat model (or chain, as for `answer_model`)
      prompted to rewrite; default the answer model when one is given, else the local model.

    A `clarifier` without `check`, or a `retriever` with no `search` that is no LangChain runnable
    either, raises TypeError here.
    """
    require_component(clarifier, Clarifier, "clarifier", "check(messages, documents=None) -> Decision")
    if isinstance(retriever, Runnable) and not isinstance(retriever, Retriever):
        retriever = LangChainRetriever(retriever)
    require_component(retriever, Retriever, "retriever", "search(query, k) -> list of passage dicts",
                      "or be a LangChain retriever (invoke(query) -> list of Documents)")
    settings = settings or Settings.from_env()
    defaults = default_context(settings)
    clarifier = clarifier if clarifier is not None else LazyClarifier(settings)
    retriever = retriever if retriever is not None else LazyRetriever(settings)
    if rewriter is None:
        rewriter = answer_model if answer_model is not None else local_chat_model(settings, REWRITE_MAX_NEW_TOKENS)
    if answer_model is None:
        answer_model = local_chat_model(settings)
    max_query_chars = 2 * settings.max_input_tokens  # about half the model's budget, at ~4 chars a token

    def run_context() -> Context:
        """The run's settings: its context over the graph's defaults, off the runtime in the run's
        config (`get_runtime`; the defaults alone where there is none, as `update_state` runs the
        edges)."""
        runtime: Runtime[Context] | None = get_runtime(Context)
        return resolve_context(runtime.context if runtime is not None else None, defaults)

    def rewrite_node(state: RagState) -> Update:
        if (store := start_turn(state)) is not None:
            store.get()
        return rewrite(state, rewriter=rewriter, max_query_chars=max_query_chars)

    async def arewrite_node(state: RagState) -> Update:
        if (store := start_turn(state)) is not None:
            await store.aget()
        return await arewrite(state, rewriter=rewriter, max_query_chars=max_query_chars)

    def start_turn(state: RagState) -> LazyRetriever | None:
        """Check that the turn has a user message (`require_user_turn`, given the run's config);
        the default retriever when it is to be opened now, so that a missing or empty store says
        so before the clarifier's model loads."""
        require_user_turn(state, get_config())
        if isinstance(retriever, LazyRetriever) and last_user_text(state["messages"]):
            return retriever
        return None

    def pre_check_node(state: RagState) -> Update:
        return pre_check(state, clarifier=clarifier, threshold=threshold())

    async def apre_check_node(state: RagState) -> Update:
        return await apre_check(state, clarifier=clarifier, threshold=threshold())

    def retrieve_node(state: RagState) -> Update:
        return retrieve(state, retriever=retriever, top_k=top_k())

    async def aretrieve_node(state: RagState) -> Update:
        return await aretrieve(state, retriever=retriever, top_k=top_k())

    def post_check_node(state: RagState) -> Update:
        return post_check(state, clarifier=clarifier, threshold=threshold())

    async def apost_check_node(state: RagState) -> Update:
        return await apost_check(state, clarifier=clarifier, threshold=threshold())

    def threshold() -> float | None:
        """The run's threshold, read in a node that is a `TwoWayNode` (LangGraph passes a runnable
        no `runtime`)."""
        return run_context()["threshold"]

    def top_k() -> int:
        """The run's `top_k`, read as `threshold` is."""
        return run_context()["top_k"]

    def ask_user_node(state: RagState) -> Update:
        return ask_user(state, run_context()["ask_mode"])

    def await_reply_node(state: RagState) -> Update:
        return await_reply(state)

    def answer_node(state: RagState) -> Update:
        return answer(state, model=answer_model)

    async def aanswer_node(state: RagState) -> Update:
        return await aanswer(state, model=answer_model)

    def edge(route: Callable[[Mapping[str, Any], Context], str]) -> Callable[[RagState], str]:
        def branch(state: RagState) -> str:
            # the runtime read off the run's config, not injected as a parameter: `update_state` (a
            # LangGraph server's edit of a thread's state too) runs the edges with none, where an
            # injected one is an error (langgraph#6340)
            return route(state, run_context())

        return branch

    builder = StateGraph(RagState, context_schema=Context, input_schema=InputState)
    # the nodes that generate text have both ways: async runs await their models, so cancelling a
    # run stops its generation at the next token
    builder.add_node(REWRITE, TwoWayNode(REWRITE, rewrite_node, arewrite_node))
    builder.add_node(PRE_CHECK, TwoWayNode(PRE_CHECK, pre_check_node, apre_check_node))
    # a retriever with `asearch` (a LangChain one) is awaited in async runs, any other's `search`
    # runs in an executor thread
    builder.add_node(RETRIEVE, TwoWayNode(RETRIEVE, retrieve_node, aretrieve_node))
    builder.add_node(POST_CHECK, TwoWayNode(POST_CHECK, post_check_node, apost_check_node))
    builder.add_node(ASK_USER, ask_user_node)
    builder.add_node(AWAIT_REPLY, await_reply_node)
    builder.add_node(ANSWER, TwoWayNode(ANSWER, answer_node, aanswer_node))
    builder.add_edge(START, REWRITE)
    builder.add_conditional_edges(REWRITE, edge(routing.after_rewrite), [PRE_CHECK, RETRIEVE, ANSWER])
    builder.add_conditional_edges(PRE_CHECK, edge(routing.after_pre_check), [ASK_USER, RETRIEVE])
    builder.add_conditional_edges(RETRIEVE, edge(routing.after_retrieve), [POST_CHECK, ANSWER])
    builder.add_conditional_edges(POST_CHECK, edge(routing.after_post_check), [ASK_USER, ANSWER])
    builder.add_conditional_edges(ASK_USER, edge(routing.after_ask_user), [AWAIT_REPLY, END])
    builder.add_edge(AWAIT_REPLY, REWRITE)
    builder.add_edge(ANSWER, END)
    return builder


class TwoWayNode(Runnable[RagState, Update]):
    """A node that runs `func` in sync runs (`invoke`, `stream`) and awaits `afunc` in async ones.

    Unlike a `RunnableLambda` it opens no run of its own for the tracer: LangGraph already opens
    the node's run (named after the node), which the models called inside report to; a
    `RunnableLambda` showed in each trace as a node run holding a same-named child run."""

    def __init__(self, name: str, func: Callable[[RagState], Update],
                 afunc: Callable[[RagState], Awaitable[Update]]) -> None:
        self.name = name
        self.func, self.afunc = func, afunc

    def invoke(self, input: RagState, config: RunnableConfig | None = None, **kwargs: Any) -> Update:
        return self.func(input)

    async def ainvoke(self, input: RagState, config: RunnableConfig | None = None, **kwargs: Any) -> Update:
        return await self.afunc(input)


def require_component(component: object, protocol: type, name: str, method: str, alternative: str = "") -> None:
    """TypeError at build time, not on the first turn, when `component` (if given) lacks the
    protocol's method (and is not the `alternative` the message names): say, a function passed as
    the clarifier."""
    if component is not None and not isinstance(component, protocol):
        other = f" {alternative}" if alternative else ""
        raise TypeError(
            f"{name} must have a method {method} (askbetter.{protocol.__name__}){other}, "
            f"not {type(component).__name__}"
        )


def require_user_turn(state: RagState, config: RunnableConfig) -> None:
    """A turn starts from a user message (new, or the reply to a question); without one (an input
    with no messages or another message last, or a `Command(resume=...)` on a fresh thread: the
    node cannot tell them apart) raise ValueError rather than answer nothing. (On a thread whose
    last turn ended, LangGraph itself runs no node for such a resume and drops it.) A refused
    input stays in the thread: LangGraph stored it before this node ran (README: how to go on from
    the checkpoint before it)."""
    messages = state.get("messages") or []
    if not messages or messages[-1].type != "human":
        thread = config.get("configurable", {}).get("thread_id")
        raise ValueError(
            f"no user message to act on in thread {thread!r}: send one, as {{'messages': [('user', "
            "'...')]}; Command(resume=...) answers a clarification question, and none is waiting"
        )
