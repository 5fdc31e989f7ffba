"""A tiny random Llama and an in-memory word-level tokenizer in SmolLM2's chat format, for unit
tests that need a real transformers model but no files (fast); and how a test counts a model's
forward passes after it cancels a turn (the real models' tests too)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pytest
import torch

from askbetter import torch_thread

WORDS = ("<unk> <|im_start|> <|im_end|> system user assistant you are a helpful sync nimbus desktop how do i "
         "turn on the question answer passages cite preferences open choose").split()
TEMPLATE = (
    "{% for m in messages %}<|im_start|> {{ m['role'] }} {{ m['content'] }} <|im_end|> {% endfor %}"
    "{% if add_generation_prompt %}<|im_start|> assistant {% endif %}"
)


def tiny_tokenizer(words: Sequence[str] = WORDS):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.decoder = decoders.WordPiece()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", eos_token="<|im_end|>",
                                        chat_template=TEMPLATE)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    return tokenizer


def tiny_llama(seed: int = 0):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(WORDS), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=256,
                         bos_token_id=1, eos_token_id=2, pad_token_id=0)
    return LlamaForCausalLM(config).eval()


def slowed_tiny_model(seconds_a_step: float = 0.0, steps: list[int] | None = None):
    """The tiny model and tokenizer as a `LoadedModel`, each forward pass `seconds_a_step` longer (a
    generation long enough to watch, cancel or overlap); each pass appends 1 to `steps` when given
    (to count them)."""
    from askbetter.clarifier.assets import LoadedModel

    model = tiny_llama()
    model.forward = counted(model.forward, steps, seconds_a_step)
    return LoadedModel(model=model, tokenizer=tiny_tokenizer())


def counted(forward: Callable[..., Any], steps: list[int] | None, seconds_a_step: float = 0.0) -> Callable[..., Any]:
    """`forward` (a model's), `seconds_a_step` slower, appending 1 to `steps` (when given) at each call."""

    def slow_forward(*args: Any, **kwargs: Any) -> Any:
        time.sleep(seconds_a_step)
        if steps is not None:
            steps.append(1)
        return forward(*args, **kwargs)

    return slow_forward


async def steps_after_a_cancel(run: Callable[[], Awaitable[Any]], steps: list[int], at: int = 3) -> int:
    """Run `run()` as a task and cancel it once the model has made `at` forward passes (`counted`);
    the passes made after the cancel, counted once the models' thread is free (a generation that
    runs on after the cancel counts in full)."""
    task = asyncio.create_task(run())
    while len(steps) < at:
        await asyncio.sleep(0.001)
    task.cancel()
    at_cancel = len(steps)
    with pytest.raises(asyncio.CancelledError):
        await task
    await torch_thread.arun(lambda: None)  # queued after the generation
    return len(steps) - at_cancel
