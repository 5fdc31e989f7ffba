"""`LocalChatModel` on a tiny random Llama with an in-memory word-level tokenizer (no files, fast)."""

from __future__ import annotations

import pytest
import torch
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from askbetter.clarifier.assets import LoadedModel
from askbetter.nodes.chat_model import LocalChatModel, _until_stop
from tiny_model import tiny_llama, tiny_tokenizer

QUESTION = [HumanMessage("how do i turn on sync")]


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_tokenizer()


def chat_model(model, tokenizer, **kwargs):
    return LocalChatModel(loaded=LoadedModel(model=model, tokenizer=tokenizer), **{"max_new_tokens": 12, **kwargs})


def test_generate_and_stream_give_the_same_greedy_text(tokenizer):
    model = chat_model(tiny_llama(), tokenizer)
    text = model.invoke(QUESTION).text
    chunks = [c.text for c in model.stream(QUESTION)]
    assert len([c for c in chunks if c]) > 1
    assert "".join(chunks) == text
    assert 0 < len(text.split()) <= 12
    assert model.invoke(QUESTION).text == text  # greedy: deterministic


def test_stop_strings_end_the_text(tokenizer):
    model = chat_model(tiny_llama(), tokenizer)
    words = model.invoke(QUESTION).text.split()
    stop = " " + words[2]
    expected = " ".join(words)[: " ".join(words).index(stop)]
    assert model.invoke(QUESTION, stop=[stop]).text == expected
    assert "".join(c.text for c in model.stream(QUESTION, stop=[stop])) == expected


def test_overlong_prompt_is_cut_in_the_middle_with_a_warning(tokenizer):
    model = chat_model(tiny_llama(), tokenizer, max_input_tokens=40)
    long = [SystemMessage("you are a helpful"), HumanMessage("passages " + "nimbus desktop " * 200 + "how do i turn on sync")]
    with pytest.warns(UserWarning, match="more than the 40 allowed"):
        ids = model._prompt_ids(long, tokenizer)
    assert len(ids) <= 40
    decoded = tokenizer.decode(ids)
    assert "how do i turn on sync" in decoded and "helpful" in decoded  # head and question kept
    with pytest.warns(UserWarning):
        assert model.invoke(long).text


def test_overlong_prompt_cuts_the_next_longest_message_when_the_longest_is_not_enough(tokenizer):
    model = chat_model(tiny_llama(), tokenizer, max_input_tokens=70)
    long = [SystemMessage("you are a helpful"), HumanMessage("passages " + "nimbus " * 60),
            AIMessage("answer " + "desktop " * 60), HumanMessage("how do i turn on sync")]
    with pytest.warns(UserWarning, match="more than the 70 allowed"):
        ids = model._prompt_ids(long, tokenizer)
    assert len(ids) <= 70
    decoded = tokenizer.decode(ids)
    assert decoded.startswith("<|im_start|> system you are a helpful")  # the template's head kept
    assert "user passages nimbus" in decoded
    assert decoded.endswith("user how do i turn on sync <|im_end|> <|im_start|> assistant")


def test_peft_model_generates_with_the_adapter_disabled(tokenizer):
    from peft import LoraConfig, get_peft_model

    base = tiny_llama()
    base_text = chat_model(base, tokenizer).invoke(QUESTION).text
    peft_model = get_peft_model(base, LoraConfig(r=4, lora_alpha=64, target_modules=["q_proj", "v_proj", "down_proj"]))
    with torch.no_grad():
        for name, param in peft_model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 2.0)
    peft_model.eval()
    with_adapter = tokenizer.decode(
        peft_model.generate(input_ids=torch.tensor([chat_model(base, tokenizer)._prompt_ids(QUESTION, tokenizer)]),
                            max_new_tokens=12, do_sample=False, pad_token_id=0)[0]
    )
    assert base_text not in with_adapter  # the adapter really changes generation ...
    assert chat_model(peft_model, tokenizer).invoke(QUESTION).text == base_text  # ... and is switched off


@pytest.mark.parametrize(
    "pieces, stop, expected",
    [
        (["Hel", "lo\nWo", "rld"], ["\nW"], ["Hello"]),
        (["Hel", "lo", " world"], [], ["Hel", "lo", " world"]),
        (["ab", "c"], ["x"], ["ab", "c"]),
        (["St", "op now"], ["Stop"], []),
    ],
)
def test_until_stop(pieces, stop, expected):
    assert "".join(_until_stop(iter(pieces), stop)) == "".join(expected)
