"""The clarifier's prompt: the conversation first, the passages after it, then the answer slot.

The model's answer is exactly `CLEAR` or one clarification question. The decision score is read at
the first answer position: P(clarify) = 1 - P(first token of `CLEAR`). The conversation comes
before the passages so that the pre- and post-retrieval prompts share a prefix.

Prompt styles: `tuned` (short instruction, what the adapter is trained on), `tuned-question-last`
(the same, and after the passages the judged turn once more, next to the answer slot, so that a
small model compares the question with the passages where it decides; the pre-retrieval prompt,
with no passages, is `tuned`'s), `zero-shot` and `few-shot` (longer instructions for the prompted
base-model baselines). An adapter's `askbetter_clarifier.json` names the style it was trained on.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal, cast

from askbetter.clarifier.types import Document, Message
from askbetter.clarifier.words import content_words

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedTokenizerBase

PromptStyle = Literal["tuned", "tuned-question-last", "zero-shot", "few-shot"]
PROMPT_STYLES: tuple[str, ...] = ("tuned", "tuned-question-last", "zero-shot", "few-shot")
TUNED_STYLES: tuple[str, ...] = ("tuned", "tuned-question-last")  # the short instruction
CLEAR = "CLEAR"

TUNED_INSTRUCTION = (
    "Decide if the user's last message can be answered as asked. Reply CLEAR if it can; "
    "otherwise reply with one short question asking the user to clarify."
)
ZERO_SHOT_INSTRUCTION = (
    "You check questions before a search assistant answers them. Read the conversation and, if "
    "given, the passages. If the user's last message has only one sensible reading in context, "
    "reply with exactly the word CLEAR. If it is ambiguous (several readings, or the passages "
    "support several different answers) or misses a fact needed to answer, reply with one short "
    "question that asks the user which they mean. Reply with CLEAR or one question, nothing else."
)
FEW_SHOTS: tuple[tuple[str, str], ...] = (
    ("Conversation:\nUser: Who won the world cup?\n\nPassages: none",
     "Which world cup do you mean: the men's or the women's, and which year?"),
    ("Conversation:\nUser: What is the capital of Australia?\n\nPassages: none", CLEAR),
    ("Conversation:\nUser: Tell me about Jaguar.\nAssistant: Do you mean the animal or the car "
     "maker?\nUser: The car maker. When was it founded?\n\nPassages: none", CLEAR),
    ("Conversation:\nUser: How do I reset it?\n\nPassages:\n[1] Router: hold the reset button for "
     "10 seconds.\n[2] Phone: open Settings, then General, then Reset.",
     "Do you want to reset the router or the phone?"),
)

# share of the remaining token budget that older dialog turns may take; passages get the rest
HISTORY_SHARE = 0.35
# the judged turn may take at most this share of the whole budget
LAST_TURN_SHARE = 0.5
# an earlier assistant turn may take at most this share of the history's budget (its head), so
# that a long answer does not push the user's own earlier turns out
ASSISTANT_TURN_SHARE = 0.5
# when a passage must be cut, a word of the judged turn counts this many times a history word
# in choosing which part of it to keep
LAST_TURN_WEIGHT = 2
# tokens kept back from the content budget for the section headers and separators
HEADER_TOKENS = 16
# an older turn that does not fit whole keeps its tail only when at least this many tokens are
# left for it, less the tokens of its speaker label ("User: ")
MIN_TAIL_TOKENS = 16
SPEAKER_TOKENS = 3
# where `excerpt` splits a passage into sentences: the split the adapters were trained with
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
# periods that do not end a sentence of a generated question (a decimal point, as in "3.5", has
# no space after it)
_ABBREVIATIONS = ("e.g", "i.e", "etc", "vs", "Mr", "Mrs", "Ms", "Dr")
# in a generated question a sentence ends at ".", "!" or "?", or at a closing quote or bracket
# right after one, but not at an abbreviation's period
_STOP = (r"(?:(?<=[.!?])|(?<=[.!?][\"'\u201d\u2019)\]]))"
         + "".join(rf"(?<!\b{re.escape(a)}\.)" for a in _ABBREVIATIONS))
_QUESTION_SENTENCE_END = re.compile(rf"{_STOP}\s+", re.IGNORECASE)
_ENDS_A_SENTENCE = re.compile(rf"{_STOP}$", re.IGNORECASE)


def decode(tokenizer: PreTrainedTokenizerBase, ids: list[int] | torch.Tensor, **options: bool) -> str:
    """One sequence's `ids` as text (the tokenizer's `decode` is typed for a batch of them too, which
    decodes to a list); `options` as `decode` takes them (`skip_special_tokens=True`)."""
    return cast(str, tokenizer.decode(ids, **options))


def cut_middle(tokenizer: PreTrainedTokenizerBase, ids: list[int], keep: int, marker: str) -> str:
    """`ids` decoded with only `keep` of them, the first half (rounded down) and the last, and
    `marker` where the middle was."""
    head = keep // 2
    return decode(tokenizer, ids[:head]) + marker + decode(tokenizer, ids[len(ids) - (keep - head):])


def _cut(tokenizer: PreTrainedTokenizerBase, text: str, max_tokens: int,
         keep: Literal["head", "tail", "ends"] = "head") -> str:
    ids = tokenizer(text, add_special_tokens=False).input_ids
    if len(ids) <= max_tokens:
        return text
    if max_tokens <= 0:
        return ""
    if keep == "ends":
        return cut_middle(tokenizer, ids, max_tokens, " ... ")
    kept = ids[:max_tokens] if keep == "head" else ids[-max_tokens:]
    marker = " ..." if keep == "head" else "... "
    body = decode(tokenizer, kept)
    return body + marker if keep == "head" else marker + body


def excerpt(tokenizer: PreTrainedTokenizerBase, text: str, max_tokens: int, focus: dict[str, int]) -> str:
    """`text` on one line, cut to `max_tokens`: of the cuts that start at a sentence (or line) and
    run on until the budget ends, the one whose distinct words carry the most `focus` weight; the
    earliest on a tie, so a passage that shares no focus word keeps its head. Cuts are marked
    with "...".

    A long passage often names what the question is about far from its start (the languages that
    descended from Common Brittonic, in its third sentence); the head alone would hide it.
    """
    sentences = [" ".join(s.split()) for s in _SENTENCE_END.split(text) if s.strip()]
    whole = " ".join(sentences)
    if _n_tokens(tokenizer, whole) <= max_tokens:
        return whole
    ids = [tokenizer(s, add_special_tokens=False).input_ids for s in sentences]
    best_weight, best = -1, ""
    for start in range(len(sentences)):
        room = max_tokens - (2 if start else 0)  # room for the leading "..."
        parts = ["..."] if start else []
        for k in range(start, len(sentences)):
            if len(ids[k]) + 1 > room:  # the head of the sentence that does not fit
                head = decode(tokenizer, ids[k][: room - 2]).strip() if room > 4 else ""
                parts.append(f"{head} ..." if head else "...")
                break
            parts.append(sentences[k])
            room -= len(ids[k]) + 1
        kept = " ".join(parts)
        weight = sum(focus.get(w, 0) for w in content_words(kept))
        if weight > best_weight:
            best_weight, best = weight, kept
    return best


def focus_weights(messages: list[Message]) -> dict[str, int]:
    """Content words of the conversation, the judged (last) turn's weighted `LAST_TURN_WEIGHT`."""
    focus = dict.fromkeys(content_words(" ".join(m["content"] for m in messages[:-1])), 1)
    focus.update(dict.fromkeys(content_words(messages[-1]["content"]), LAST_TURN_WEIGHT))
    return focus


def _n_tokens(tokenizer: PreTrainedTokenizerBase, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=False).input_ids)


def _line(message: Message) -> str:
    speaker = "User" if message["role"] == "user" else "Assistant"
    return f"{speaker}: {message['content'].strip()}"


def render_user_content(
    messages: list[Message],
    documents: list[Document] | None,
    tokenizer: PreTrainedTokenizerBase,
    max_tokens: int,
    question_last: bool = False,
) -> str:
    """The conversation and the passages as one user message, fitted into `max_tokens`.

    The judged (last) turn is kept whole unless it alone exceeds half the budget (then its middle
    is cut, keeping its head and the question that often ends it, with a warning); an earlier
    assistant turn keeps the head that fits in half the history's budget; older turns are dropped
    oldest-first; passages share what is left evenly,
    each cut to the sentences the conversation is most about (`excerpt`). With `question_last`
    and passages, the judged turn follows them once more (its tokens come out of the passages'
    share).
    """
    dialog = [m for m in messages if m["role"] in ("user", "assistant") and m["content"].strip()]
    if not dialog or dialog[-1]["role"] != "user":
        raise ValueError("the conversation must end with a non-empty user turn")
    last = _line(dialog[-1])
    last_budget = int(max_tokens * LAST_TURN_SHARE)
    if _n_tokens(tokenizer, last) > last_budget:
        warnings.warn(
            f"The user turn is longer than {last_budget} tokens; its middle was cut for the "
            "clarifier.", stacklevel=3)
        last = _cut(tokenizer, last, last_budget, keep="ends")
    docs = [d for d in (documents or []) if d.get("text", "").strip()]
    recap = f"\n\nQuestion: {last.partition(': ')[2]}" if question_last and docs else ""
    budget = max_tokens - _n_tokens(tokenizer, last + recap) - HEADER_TOKENS
    history_budget = int(budget * HISTORY_SHARE) if docs else budget
    history: list[str] = []
    used = 0
    for m in reversed(dialog[:-1]):
        line = _line(m)
        if m["role"] == "assistant":
            line = _cut(tokenizer, line, int(history_budget * ASSISTANT_TURN_SHARE))
        n = _n_tokens(tokenizer, line)
        if used + n > history_budget:
            rest = history_budget - used
            if rest > MIN_TAIL_TOKENS:
                speaker, _, content = line.partition(": ")
                tail = _cut(tokenizer, content, rest - SPEAKER_TOKENS, keep="tail")
                history.insert(0, f"{speaker}: {tail}")
                used += rest
            break
        history.insert(0, line)
        used += n
    text = "Conversation:\n" + "\n".join([*history, last]) + "\n\nPassages:"
    if not docs:
        return text + " none"
    per_doc = max(8, (budget - used) // len(docs) - 4)
    focus = focus_weights(dialog)
    for i, d in enumerate(docs, 1):
        title = " ".join((d.get("title") or "").split())
        head = f"{title}: " if title else ""
        if _n_tokens(tokenizer, head) > per_doc:  # a title longer than its passage's share
            head = f"{_cut(tokenizer, title, per_doc // 2)}: "
        room = max(8, per_doc - _n_tokens(tokenizer, head))
        text += f"\n[{i}] {head}" + excerpt(tokenizer, d["text"], room, focus)
    return text + recap


def build_chat(
    messages: list[Message],
    documents: list[Document] | None,
    tokenizer: PreTrainedTokenizerBase,
    max_tokens: int = 1024,
    style: PromptStyle = "tuned",
) -> list[dict[str, str]]:
    """The chat messages (system, [few shots], user) whose answer is CLEAR or a question."""
    if style not in PROMPT_STYLES:
        raise ValueError(f"prompt style must be one of {PROMPT_STYLES}, not {style!r}")
    instruction = TUNED_INSTRUCTION if style in TUNED_STYLES else ZERO_SHOT_INSTRUCTION
    chat = [{"role": "system", "content": instruction}]
    if style == "few-shot":
        for shot, answer in FEW_SHOTS:
            chat += [{"role": "user", "content": shot}, {"role": "assistant", "content": answer}]
    content = render_user_content(messages, documents, tokenizer, max_tokens,
                                  question_last=style == "tuned-question-last")
    chat.append({"role": "user", "content": content})
    return chat


def prompt_ids(
    messages: list[Message],
    documents: list[Document] | None,
    tokenizer: PreTrainedTokenizerBase,
    max_tokens: int = 1024,
    style: PromptStyle = "tuned",
) -> list[int]:
    """Token ids of the prompt, ending where the answer starts."""
    chat = build_chat(messages, documents, tokenizer, max_tokens, style)
    ids = tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=True)
    if isinstance(ids, Mapping):  # a BatchEncoding
        ids = ids["input_ids"]
    return list(ids)


def clear_token_id(tokenizer: PreTrainedTokenizerBase) -> int:
    """The first token of `CLEAR` as it starts an answer."""
    return tokenizer(CLEAR, add_special_tokens=False).input_ids[0]


def clean_question(text: str, capped: bool = False) -> str:
    """The first line of a generated answer, cut after its first question mark. When the
    generation stopped at its token cap (`capped`) inside that line, a line without a question
    mark that does not end a sentence is unfinished: it ends at its last whole sentence, or, with
    none, with "..." (as a cut passage is marked)."""
    line = next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")
    if "?" in line:
        return line[: line.index("?") + 1]
    if capped and line and "\n" not in text.lstrip() and not _ENDS_A_SENTENCE.search(line):
        ends = [m.start() for m in _QUESTION_SENTENCE_END.finditer(line)]
        return line[: ends[-1]] if ends else line.rstrip(" ,;:-.") + "..."
    return line
