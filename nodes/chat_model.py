"""`LocalChatModel`: a LangChain chat model over the locally loaded causal LM.

It shares the clarifier's model: `askbetter.clarifier.assets.load_model` caches one copy per
process, and when that copy carries the LoRA adapter, generation runs inside
`model.disable_adapter()`, so answers and rewrites come from the base model. Decoding is greedy.
A prompt longer than `max_input_tokens` is cut (the middle of its longest message, then of the next
longest while that is not enough) with a warning.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables.config import run_in_executor
from pydantic import ConfigDict, PrivateAttr

from askbetter import torch_thread
from askbetter.clarifier.prompt import cut_middle
from askbetter.settings import Settings

# tokens kept free for the chat template's markers when a message is cut
_TEMPLATE_SLACK = 16
_CUT_MARKER = " [...] "


class LocalChatModel(BaseChatModel):
    """Greedy chat generation with a local transformers model.

    `loaded` is an `askbetter.clarifier.assets.LoadedModel`; when None it is loaded from `settings`
    on first use (the same cached copy the clarifier uses).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    loaded: Any = None
    settings: Settings | None = None
    max_new_tokens: int | None = None  # default: settings.max_answer_tokens
    max_input_tokens: int | None = None  # default: settings.max_input_tokens
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "askbetter-local"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"max_new_tokens": self._max_new_tokens()}

    def _settings(self) -> Settings:
        return self.settings or Settings.from_env()

    def _max_new_tokens(self) -> int:
        return self.max_new_tokens or self._settings().max_answer_tokens

    def _loaded(self) -> Any:
        with self._lock:
            if self.loaded is None:
                from askbetter.clarifier.assets import load_model

                self.loaded = load_model(self._settings())
        return self.loaded

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        text = "".join(self._pieces(messages, stop))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for piece in self._pieces(messages, stop):
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        text = "".join([piece async for piece in self._apieces(messages, stop)])
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        async for piece in self._apieces(messages, stop):
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager:
                await run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk

    async def _apieces(self, messages: list[BaseMessage], stop: list[str] | None) -> AsyncIterator[str]:
        """`_pieces` for async callers, each piece read in an executor thread. A cancelled caller
        halts the generation here, at once: LangChain's default `_astream` and `_agenerate` only
        dropped the sync stream (which halts it when closed), and whatever keeps the cancellation's
        traceback (a callback that keeps the error) kept it open, so generation ran on to its end."""
        halt = threading.Event()
        pieces = self._pieces(messages, stop, halt)
        try:
            while (piece := await run_in_executor(None, next, pieces, None)) is not None:
                yield piece
        finally:
            halt.set()

    def _pieces(self, messages: list[BaseMessage], stop: list[str] | None,
                halt: threading.Event | None = None) -> Iterator[str]:
        """Generate on the models' thread (`askbetter.torch_thread`) and yield the decoded text as it
        comes, up to the first stop string.

        Generation halts as soon as a stop string shows up, `halt` is set (from any thread) or the
        caller closes or drops the stream."""
        import torch
        from transformers import TextIteratorStreamer

        from askbetter.clarifier.assets import halt_on, pad_token_id

        loaded = self._loaded()
        tokenizer, model = loaded.tokenizer, loaded.model
        input_ids = self._prompt_ids(messages, tokenizer)
        streamer = TextIteratorStreamer(tokenizer, skip_prompt=True, skip_special_tokens=True)
        pad_id = pad_token_id(tokenizer)
        halt = halt if halt is not None else threading.Event()

        def run() -> None:
            try:
                with loaded.lock, torch.inference_mode(), _base_model(model):
                    model.generate(
                        input_ids=torch.tensor([input_ids], device=model.device),
                        attention_mask=torch.ones(1, len(input_ids), dtype=torch.long, device=model.device),
                        max_new_tokens=self._max_new_tokens(),
                        do_sample=False,
                        streamer=streamer,
                        pad_token_id=pad_id,
                        stopping_criteria=halt_on(halt),
                    )
            except BaseException:  # raised again in the caller's thread by `result()` below
                streamer.end()
                raise

        generation = torch_thread.submit(run)  # on the models' thread, read here as it comes
        try:
            yield from _until_stop(streamer, stop or [], on_stop=halt.set)
        finally:
            halt.set()
            generation.exception()  # waits until it has stopped
        generation.result()

    def _prompt_ids(self, messages: list[BaseMessage], tokenizer: Any) -> list[int]:
        chat = [{"role": _role(m), "content": m.text} for m in messages]
        limit = self.max_input_tokens or self._settings().max_input_tokens
        ids = _template_ids(tokenizer, chat)
        if len(ids) <= limit:
            return ids
        warnings.warn(
            f"The prompt has {len(ids)} tokens, more than the {limit} allowed; its longest message "
            "was cut in the middle (and the next longest, while it was not enough).",
            stacklevel=2,
        )
        excess = len(ids) - limit + _TEMPLATE_SLACK
        for i in sorted(range(len(chat)), key=lambda i: len(chat[i]["content"]), reverse=True):
            content_ids = tokenizer(chat[i]["content"], add_special_tokens=False).input_ids
            keep = max(0, len(content_ids) - excess)
            chat[i]["content"] = cut_middle(tokenizer, content_ids, keep, _CUT_MARKER)
            excess -= len(content_ids) - keep
            if excess <= 0:
                break
        return _template_ids(tokenizer, chat)[-limit:]


def _role(message: BaseMessage) -> str:
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, HumanMessage):
        return "user"
    return "assistant" if isinstance(message, AIMessage) else "user"


def _template_ids(tokenizer: Any, chat: list[dict[str, str]]) -> list[int]:
    text = tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
    return list(tokenizer(text, add_special_tokens=False).input_ids)


def _base_model(model: Any) -> contextlib.AbstractContextManager[Any]:
    """Run a PeftModel without its adapter; any other model as it is."""
    from peft import PeftModel

    return model.disable_adapter() if isinstance(model, PeftModel) else contextlib.nullcontext()


def _until_stop(pieces: Iterator[str], stop: list[str], on_stop: Callable[[], None] = lambda: None) -> Iterator[str]:
    """Pass `pieces` through, ending before the first stop string (which may span pieces); then
    call `on_stop`. Text that could be the start of a stop string is held back until it is not."""
    if not stop:
        yield from pieces
        return
    hold = max(len(s) for s in stop) - 1
    buffer = ""
    for piece in pieces:
        buffer += piece
        cut = min((i for i in (buffer.find(s) for s in stop) if i >= 0), default=-1)
        if cut >= 0:
            on_stop()
            if buffer[:cut]:
                yield buffer[:cut]
            return
        if len(buffer) > hold:
            yield buffer[: len(buffer) - hold]
            buffer = buffer[len(buffer) - hold :]
    if buffer:
        yield buffer
