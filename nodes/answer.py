"""The `answer` node: answer the standalone query from the numbered passages, citing them as [n].

Any LangChain chat model works (bound or wrapped too, or a chain ending in one that returns a str).
It is called with `.invoke` (`.ainvoke` in async runs: `aanswer`), so under LangGraph's `messages`
stream mode its tokens stream as they are generated (for models that implement `_stream` or
`_astream`). The returned message keeps the model's id (so streamed chunks and the final message
are one message) and gets a `Sources:` list naming the numbered passages, so every answer shows
what it drew on. The `messages` stream gets that list too, as the message's last chunk (tagged
`SOURCES_TAG`): LangGraph leaves out a node's returned message whose id it has streamed. A str result has no id to continue: LangGraph streams the returned
message whole (after the chunks of a chat model inside the chain, under their own id).

The thread's system messages (a caller's `SystemMessage` in the input, say "Answer in French.")
follow the instruction in the prompt's system message, so they steer the answer; the clarifier and
the rewriter do not see them.

An empty user turn is not sent to any model: the answer is `EMPTY_TURN_REPLY`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import PurePath
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import RunnableConfig

from askbetter.nodes.messages import ChatModel, output_text

EMPTY_TURN_REPLY = "Your message was empty. Please type a question."

ANSWER_INSTRUCTION = (
    "Answer the user's question using only the numbered passages. Cite the passages you "
    "use by their number in square brackets, like [1] or [2]. If the passages do not contain "
    "the answer, say that you do not know."
)
NO_PASSAGES = "No passages were found."
#: in LangGraph's `messages` stream, the chunk holding the answer's `Sources:` list has this tag (its
#: metadata's "tags")
SOURCES_TAG = "askbetter:sources"
_APPENDIX_CONFIG: RunnableConfig = {"tags": [SOURCES_TAG], "run_name": "sources"}


def answer(state: Mapping[str, Any], *, model: ChatModel) -> dict[str, Any]:
    prompt = _prompt(state)
    if prompt is None:
        return {"messages": [AIMessage(EMPTY_TURN_REPLY)]}
    message, appendix = _finish(model.invoke(prompt), state)
    if appendix is not None:
        appendix.invoke([], config=_APPENDIX_CONFIG)
    return {"messages": [message]}


async def aanswer(state: Mapping[str, Any], *, model: ChatModel) -> dict[str, Any]:
    """`answer` for async runs (`ainvoke`, `astream`): the model's `ainvoke`, so a cancelled run
    cancels the model's call (`LocalChatModel` then halts its generation)."""
    prompt = _prompt(state)
    if prompt is None:
        return {"messages": [AIMessage(EMPTY_TURN_REPLY)]}
    message, appendix = _finish(await model.ainvoke(prompt), state)
    if appendix is not None:
        await appendix.ainvoke([], config=_APPENDIX_CONFIG)
    return {"messages": [message]}


def _prompt(state: Mapping[str, Any]) -> list[BaseMessage] | None:
    """The answer model's prompt; None for an empty turn."""
    query = state.get("query", "")
    if not query:
        return None
    steer = [m.text.strip() for m in state.get("messages", []) if isinstance(m, SystemMessage) and m.text.strip()]
    return answer_prompt(query, state.get("documents", []), steer)


def _finish(response: object, state: Mapping[str, Any]) -> tuple[AIMessage, _Appendix | None]:
    """The answer message (the model's text and the Sources list) and, when the message has an id
    the stream knows, the chat model that streams the Sources list as its last chunk."""
    passages = state.get("documents", [])
    appendix = "\n\n" + sources(passages) if passages else ""
    content = output_text(response, "the answer model").strip() + appendix
    if isinstance(response, BaseMessage):
        message = AIMessage(content, id=response.id, response_metadata=response.response_metadata)
    else:
        message = AIMessage(content)
    if not appendix or message.id is None:
        return message, None
    return message, _Appendix(text=appendix, message_id=message.id)


def answer_prompt(query: str, passages: Sequence[Mapping[str, Any]], steer: Sequence[str] = ()) -> list[BaseMessage]:
    """The instruction (and after it the caller's system texts, `steer`), then one user message:
    the numbered passages and the question last (so a chat model that cuts an over-long prompt in
    the middle keeps the question)."""
    numbered = "\n\n".join(
        f"[{i}] {passage_title(p)}\n{' '.join(str(p.get('text', '')).split())}" for i, p in enumerate(passages, 1)
    )
    return [
        SystemMessage("\n\n".join([ANSWER_INSTRUCTION, *steer])),
        HumanMessage(f"Passages:\n{numbered or NO_PASSAGES}\n\nQuestion: {query}"),
    ]


def sources(passages: Sequence[Mapping[str, Any]]) -> str:
    """`Sources:` and one line per numbered passage: title (source)."""
    lines = ["Sources:"]
    for i, p in enumerate(passages, 1):
        where = f" ({_short(str(p['source']))})" if p.get("source") else ""
        lines.append(f"[{i}] {passage_title(p)}{where}")
    return "\n".join(lines)


def _short(source: str) -> str:
    """A file's name, or a URL as it is."""
    return source if "://" in source else PurePath(source).name


def passage_title(passage: Mapping[str, Any]) -> str:
    """How a passage is named to people: its title, else its id, else "untitled"."""
    return str(passage.get("title") or passage.get("id") or "untitled")


class _Appendix(BaseChatModel):
    """Returns `text` as the last chunk of the message `message_id`: a chat model, because
    LangGraph's `messages` stream shows chat models' chunks (and a node's messages it has not
    streamed) only."""

    text: str
    message_id: str

    @property
    def _llm_type(self) -> str:
        return "askbetter-appendix"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(self.text, id=self.message_id))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        # the last chunk: LangChain adds no empty closing chunk (under the run's own id) after it
        yield ChatGenerationChunk(message=AIMessageChunk(content=self.text, id=self.message_id, chunk_position="last"))
