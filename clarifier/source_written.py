"""Turns written for this project (`clarifier/written/*.jsonl`), in domains that none of the
public datasets covers (the folder's README lists them: insurance, HR, history, farming...).

Every other `post` source grounds its readings in one form (AmbigNQ's one-sentence statements,
Abg-CoQA's stories, PACIFIC's tables, OR-ShARC's rules), and a model that learns those forms
does not carry the decision over to the passages a retriever returns elsewhere. These are
scenarios: one vague or specific user turn, in several variants whose labels differ: alone,
after a dialog that resolves it, after a dialog on another subject, over passages that support
two readings or one, with the fact its answer hinges on missing or given; passages of a few
sentences, titled or not, among near-miss ones. Language-model helper sessions wrote them from
`written/WRITING_GUIDE.md` (the folder's README says how they were checked).

Group: the scenario (`written-<writer>-<scenario>`, the id less its variant number), so a
scenario's variants lie in one split; scenarios that share a passage, or a turn that opens its
conversation, are one group (a writer reuses a passage in two scenarios now and then: apart, the
test split would hold text that train has). The files are part of the project, not raw data: the
build reads them beside any raw folder (`askbetter data build --written DIR` reads another
folder of turns in the same form, e.g. a team's own).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from askbetter.clarifier.examples import Example, ExampleFormatError, read_examples
from askbetter.clarifier.source_common import (
    MAX_HISTORY_MESSAGES,
    Converted,
    RawDataError,
    make_example,
    stable_fraction,
    user,
)
from askbetter.clarifier.words import passage_key, turn_key

SOURCE = "written"
ID = re.compile(r"(?P<scenario>.+)-\d+")  # <scenario>-<variant>: written-<writer>-<number>-<variant> here
# an acknowledgement before the judged turn's question ("ok thanks. ", "cool. ", "ok and ..."):
# "ok" or "okay" always, another word only before punctuation and a space ("Right to buy" and
# "Right-to-buy" stay)
_ACKNOWLEDGEMENT = re.compile(
    r"^(?:(?:ok|okay)(?:\s*[,.!:;–—-]+)?(?:\s+|$)"
    r"|(?:thanks|thank you|cheers|great|nice|perfect|cool|right|got it|noted|good|that worked)"
    r"\s*[,.!:;–—-]+(?:\s+|$))+", re.I)
FOLDER = Path(__file__).parent / "written"
# written turns kept out of every build: a held-out set from new domains that no adapter trains on
# (its subfolder is not read by `convert(FOLDER)`, which takes the folder's own files only)
HELDOUT = FOLDER / "heldout"


def convert(folder: Path = FOLDER) -> Iterator[Converted]:
    """Yield (group, example) for every example of the JSONL files in `folder`, file by file in
    name order, each with the source `SOURCE` whatever its file says; the group is the scenario's
    (`groups`).
    FileNotFoundError when there is no such folder or it holds no JSONL file; RawDataError naming
    the file and the example for one the build cannot take as it is."""
    converted: list[tuple[str, Example]] = []
    for path in files_of(folder):
        try:
            examples = read_examples(path)
        except ExampleFormatError as exc:
            raise RawDataError(str(exc)) from exc
        for ex in examples:
            where = f"{path}: example {ex['id']!r}"
            if not (m := ID.fullmatch(ex["id"])):
                raise RawDataError(f"{where}: its id is not <scenario>-<variant number>")
            if len(ex["messages"]) - 1 > MAX_HISTORY_MESSAGES:  # the build would drop the first ones
                raise RawDataError(f"{where}: {len(ex['messages']) - 1} messages before the judged turn, "
                                   f"where the build keeps {MAX_HISTORY_MESSAGES}: shorten its history")
            messages = [*ex["messages"][:-1], user(uncued(ex["messages"][-1]["content"], ex["id"]))]
            try:
                example = make_example(ex["id"], SOURCE, ex["setting"], messages, ex["clarification"],
                                       ex["kind"], ex["documents"])
            except ValueError as exc:  # a `post` example without passages
                raise RawDataError(f"{where}: {exc}") from exc
            converted.append((m["scenario"], example))
    group_of = groups(converted)
    for scenario, example in converted:
        yield f"{SOURCE}:{group_of[scenario]}", example


def groups(examples: list[tuple[str, Example]]) -> dict[str, str]:
    """Each scenario's group: the first in name order of the scenarios it is joined to, directly
    or through others, by a passage (`passage_key`) or a turn that opens its conversation
    (`turn_key`) that both hold."""
    parent = {scenario: scenario for scenario, _ in examples}

    def root(scenario: str) -> str:
        while parent[scenario] != scenario:
            scenario = parent[scenario]
        return scenario

    first_with: dict[str, str] = {}
    for scenario, ex in examples:
        texts = [f"passage:{passage_key(d['text'])}" for d in ex["documents"]]
        if len(ex["messages"]) == 1:
            texts.append(f"turn:{turn_key(ex['messages'][0]['content'])}")
        for text in texts:
            a, b = root(scenario), root(first_with.setdefault(text, scenario))
            parent[max(a, b)] = min(a, b)
    return {scenario: root(scenario) for scenario in parent}


def files_of(folder: Path) -> list[Path]:
    """The folder's JSONL files in name order; FileNotFoundError when there are none."""
    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    if not files:
        raise FileNotFoundError(f"written turns folder not found, or without *.jsonl files: {folder}")
    return files


def uncued(turn: str, example_id: str) -> str:
    """The judged turn without two cues its writers left, whatever its label: the acknowledgement
    before it goes ("ok thanks. when is the next one due?": the first batch opened 35% of the vague
    turns after a dialog that way and 7% of the others), and its first letter is upper or lower
    case by a hash of the id (the first batch began 76% of the vague turns in lower case and 50% of
    the others)."""
    text = _ACKNOWLEDGEMENT.sub("", turn) or turn
    first = text[:1].lower() if stable_fraction(0, SOURCE, "case", example_id) < 0.5 else text[:1].upper()
    return first + text[1:]
