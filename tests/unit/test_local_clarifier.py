"""`LocalClarifier.question` over a model that answers with a scripted text: what it shows of a
question the generation cap cut off."""

import pytest
import torch

from askbetter.clarifier.assets import LoadedModel
from askbetter.clarifier.local import LocalClarifier
from tiny_model import WORDS, tiny_tokenizer

TOKENIZER = tiny_tokenizer((*WORDS, ".", "?", ",", "There", "two", "offices", "Which", "office", "one", "mean"))
TURN = [{"role": "user", "content": "how do i turn on sync"}]


class ScriptedModel:
    """Answers every prompt with `text`, as `generate` would: `max_new_tokens` at most, and not
    past an end-of-turn token."""

    device = torch.device("cpu")

    def __init__(self, text: str) -> None:
        self.ids = TOKENIZER(text, add_special_tokens=False).input_ids

    def generate(self, input_ids: torch.Tensor, max_new_tokens: int, **kwargs) -> torch.Tensor:
        new = self.ids[:max_new_tokens]
        if TOKENIZER.eos_token_id in new:
            new = new[: new.index(TOKENIZER.eos_token_id) + 1]
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
