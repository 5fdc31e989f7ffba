"""`LocalClarifier.question` over a model that answers with a scripted text: what it shows of a
question the generation cap cut off."""

import pytest
import torch
from tokenizers import AddedToken
from transformers import GenerationConfig

from askbetter.clarifier.assets import LoadedModel
from askbetter.clarifier.local import LocalClarifier, end_of_sequence_ids
from tiny_model import WORDS, tiny_tokenizer

TOKENIZER = tiny_tokenizer((*WORDS, ".", "?", ",", "There", "two", "offices", "Which", "office", "one", "mean"))
TURN = [{"role": "user", "content": "how do i turn on sync"}]


class ScriptedModel:
    """Answers every prompt with `text`, as `generate` would: `max_new_tokens` at most, and not
    past an end-of-sequence id of its generation config (`eos_token_id`, the tokenizer's when
    not given)."""

    device = torch.device("cpu")

    def __init__(self, text: str, tokenizer=TOKENIZER, eos_token_id: int | list[int] | None = None) -> None:
        self.ids = tokenizer(text, add_special_tokens=False).input_ids
        eos = tokenizer.eos_token_id if eos_token_id is None else eos_token_id
        self.generation_config = GenerationConfig(eos_token_id=eos)

    def generate(self, input_ids: torch.Tensor, max_new_tokens: int, **kwargs) -> torch.Tensor:
        eos = self.generation_config.eos_token_id
        eos = [eos] if isinstance(eos, int) else eos
        new = self.ids[:max_new_tokens]
        stop = next((i for i, t in enumerate(new) if t in eos), None)
        if stop is not None:
            new = new[: stop + 1]
        return torch.cat([input_ids, torch.tensor([new])], dim=1)


@pytest.mark.parametrize(("answer", "cap", "shown"), [
    ("There are two offices . Which one do you mean ?", 40, "There are two offices. Which one do you mean?"),
    ("There are two offices . Which one do you mean ?", 8, "There are two offices."),
    ("Which office do you mean , sync", 4, "Which office do you..."),
    ("Which office do you mean <|im_end|>", 6, "Which office do you mean"),  # it ended at the cap
    ("Which office do you mean", 40, "Which office do you mean"),  # it ended before the cap
    ("Which office <|im_end|> do you mean", 4, "Which office"),  # it ended before the cap, at its end of turn
])
def test_a_question_cut_off_at_the_cap_ends_at_its_last_whole_sentence(answer: str, cap: int, shown: str) -> None:
    clarifier = LocalClarifier(LoadedModel(ScriptedModel(answer), TOKENIZER), max_question_tokens=cap)
    assert clarifier.question(TURN) == shown


def test_a_special_token_that_ends_no_sequence_does_not_hide_the_cap() -> None:
    # generation went on past <|im_start|> (special, but not an end of sequence) to the cap
    answer = "Which office do you mean , sync <|im_start|>"
    clarifier = LocalClarifier(LoadedModel(ScriptedModel(answer), TOKENIZER), max_question_tokens=8)
    assert clarifier.question(TURN) == "Which office do you mean, sync..."


def test_a_generation_that_stopped_on_an_end_of_sequence_id_of_the_generation_config_was_not_capped() -> None:
    # as Llama 3's <|eot_id|>: an end of turn that the generation config lists, special to the
    # tokenizer's decoding but not among its `all_special_ids`
    tokenizer = tiny_tokenizer((*WORDS, "Which", "office", "mean"))
    tokenizer.add_tokens([AddedToken("<|eot|>", special=True)])
    eot = tokenizer.convert_tokens_to_ids("<|eot|>")
    assert eot not in tokenizer.all_special_ids
    model = ScriptedModel("Which office do you mean <|eot|>", tokenizer, [tokenizer.eos_token_id, eot])
    clarifier = LocalClarifier(LoadedModel(model, tokenizer), max_question_tokens=6)
    assert clarifier.question(TURN) == "Which office do you mean"


# 2: the tokenizer's <|im_end|>
@pytest.mark.parametrize(("config_eos", "ids"), [(None, {2}), (2, {2}), (7, {2, 7}), ([2, 7, 8], {2, 7, 8})])
def test_the_end_of_sequence_ids_are_the_generation_configs_and_the_tokenizers(config_eos, ids: set[int]) -> None:
    model = ScriptedModel("Which office")
    model.generation_config.eos_token_id = config_eos
    assert end_of_sequence_ids(LoadedModel(model, TOKENIZER)) == ids
