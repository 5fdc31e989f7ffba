"""The local clarifier: a causal LM (plus an optional PEFT adapter) deciding in one forward pass.

The decision is P(clarify) = 1 - P(first token of CLEAR) at the first answer position; the
question is generated only when it asks. Both run on the models' thread (`askbetter.torch_thread`);
`acheck` and `aquestion` await them there, and a cancelled caller halts the question's generation.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import torch

from askbetter import torch_thread
from askbetter.clarifier.assets import (
    CLARIFIER_CONFIG,
    LoadedModel,
    halt_on,
    load_model,
    pad_token_id,
    read_clarifier_config,
)
from askbetter.clarifier.prompt import (
    PROMPT_STYLES,
    PromptStyle,
    clean_question,
    clear_token_id,
    decode,
    prompt_ids,
)
from askbetter.clarifier.types import Decision, Document, Message, stage_of
from askbetter.settings import Settings
from askbetter.text import write_lines

DEFAULT_THRESHOLD = 0.5
FALLBACK_QUESTION = "Could you say a little more about what you mean?"


def adapter_config(adapter: Path | None) -> dict:
    """The clarifier settings stored with an adapter ({} when there are none)."""
    if adapter is None or not (adapter / CLARIFIER_CONFIG).is_file():
        return {}
    return read_clarifier_config(adapter / CLARIFIER_CONFIG)


def write_clarifier_config(path: Path, config: dict) -> None:
    """Write an adapter's clarifier settings (its `CLARIFIER_CONFIG`, read back by
    `adapter_config`) to `path`, atomically (`askbetter.text.write_lines`)."""
    write_lines(path, [json.dumps(config, indent=2) + "\n"])


def end_of_sequence_ids(loaded: LoadedModel) -> set[int]:
    """The ids `generate` stops on: the model's `generation_config.eos_token_id` (an int, a list
    or none), and the tokenizer's end-of-sequence id."""
    eos = loaded.model.generation_config.eos_token_id
    ids = {eos} if isinstance(eos, int) else set(eos or ())
    if loaded.tokenizer.eos_token_id is not None:
        ids.add(loaded.tokenizer.eos_token_id)
    return ids


class LocalClarifier:
    """Implements `askbetter.clarifier.types.Clarifier` with a local causal LM."""

    def __init__(
        self,
        loaded: LoadedModel,
        *,
        threshold: float = DEFAULT_THRESHOLD,
        max_input_tokens: int = 1024,
        max_question_tokens: int = 40,
        prompt_style: PromptStyle = "tuned",
    ) -> None:
        if prompt_style not in PROMPT_STYLES:
            raise ValueError(f"prompt_style must be one of {PROMPT_STYLES}, not {prompt_style!r}")
        self.loaded = loaded
        self.threshold = threshold
        self.max_input_tokens = max_input_tokens
        self.max_question_tokens = max_question_tokens
        self.prompt_style = prompt_style
        self._clear_id = clear_token_id(loaded.tokenizer)

    @classmethod
    def from_settings(
        cls,
        settings: Settings | None = None,
        *,
        adapter: str | None = None,
        prompt_style: PromptStyle | None = None,
    ) -> "LocalClarifier":
        """Build from settings; `adapter` ("bundled", "none" or a path) overrides the setting.

        The threshold is, in order: `settings.threshold`, the one stored with the adapter, 0.5.
        The prompt budget is the adapter's training budget, else `settings.max_input_tokens`.
        The prompt style defaults to the one the adapter was trained on (`tuned` for adapters
        that do not name one), `zero-shot` without an adapter.
        """
        settings = settings or Settings.from_env()
        loaded = load_model(settings, adapter=adapter)
        stored = adapter_config(loaded.adapter)
        threshold = settings.threshold if settings.threshold is not None else stored.get(
            "threshold", DEFAULT_THRESHOLD)
        style = prompt_style or (stored.get("prompt_style", "tuned") if loaded.has_adapter
                                 else "zero-shot")
        # the prompt budget the adapter was trained with, so scores match its threshold
        budget = stored.get("max_input_tokens", settings.max_input_tokens)
        return cls(loaded, threshold=threshold, max_input_tokens=budget,
                   max_question_tokens=settings.max_question_tokens, prompt_style=style)

    def _ids(self, messages: list[Message], documents: list[Document] | None) -> torch.Tensor:
        ids = prompt_ids(messages, documents, self.loaded.tokenizer, self.max_input_tokens,
                         self.prompt_style)
        return torch.tensor([ids], device=self.loaded.model.device)

    @torch_thread.on_torch_thread
    @torch.inference_mode()
    def score(self, messages: list[Message], documents: list[Document] | None = None) -> float:
        """P(clarify) for the last user turn: 1 - P(CLEAR) at the first answer position."""
        ids = self._ids(messages, documents)
        with self.loaded.lock:
            logits = self.loaded.model(input_ids=ids).logits[0, -1]
        p_clear = torch.softmax(logits.float(), dim=-1)[self._clear_id].item()
        return 1.0 - p_clear

    @torch_thread.on_torch_thread
    @torch.inference_mode()
    def question(self, messages: list[Message], documents: list[Document] | None = None,
                 halt: threading.Event | None = None) -> str:
        """Generate one clarification question (CLEAR is suppressed at the first position); one
        cut off at `max_question_tokens` ends at its last whole sentence (`clean_question`).
        Setting `halt` (from any thread) ends the generation at its next token."""
        tok = self.loaded.tokenizer
        ids = self._ids(messages, documents)
        with self.loaded.lock:
            out = self.loaded.model.generate(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=self.max_question_tokens,
                do_sample=False,
                begin_suppress_tokens=[self._clear_id],
                pad_token_id=pad_token_id(tok),
                stopping_criteria=halt_on(halt),
            )
        new = out[0, ids.shape[1]:]
        # stopped by the cap, not by an end-of-sequence token
        capped = (len(new) == self.max_question_tokens
                  and new[-1].item() not in end_of_sequence_ids(self.loaded))
        return clean_question(decode(tok, new, skip_special_tokens=True), capped) or FALLBACK_QUESTION

    async def aquestion(self, messages: list[Message], documents: list[Document] | None = None) -> str:
        """`question` awaited: a cancelled caller halts the generation at its next token."""
        halt = threading.Event()
        try:
            return await torch_thread.arun(self.question, messages, documents, halt)
        finally:
            halt.set()

    def check(self, messages: list[Message], documents: list[Document] | None = None) -> Decision:
        score = self.score(messages, documents)
        return self._decision(score, self.question(messages, documents) if self._asks(score) else None, documents)

    async def acheck(self, messages: list[Message], documents: list[Document] | None = None) -> Decision:
        """`check` awaited: a cancelled caller lets the score's forward pass finish and halts the
        question's generation at its next token (`aquestion`)."""
        score = await torch_thread.arun(self.score, messages, documents)
        question = await self.aquestion(messages, documents) if self._asks(score) else None
        return self._decision(score, question, documents)

    def _asks(self, score: float) -> bool:
        return score >= self.threshold

    def _decision(self, score: float, question: str | None, documents: list[Document] | None) -> Decision:
        return Decision(needs_clarification=question is not None, score=score, question=question,
                        stage=stage_of(documents))
