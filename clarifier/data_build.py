"""`askbetter data build`: the raw datasets -> train/dev/test files in the example schema.

Each converter of `SOURCES` turns one dataset into `(group, example)` pairs; `source_rewrites`
serves two, over three datasets (questions their history resolves, and the same questions with
their pronoun left unresolved); `source_topic_shift` asks some of AmbigNQ's questions again after
another dialog; `source_referents` sets CANARD's pronoun questions over passages that name
two referents, `source_followups` its follow-ups that their dialog settles over passages,
`source_answers` TREC iKAT's follow-ups over its grounded answers as passages, `source_named_pair`
CANARD's pronoun questions after an opening that names one candidate or two. Beside them
`source_written` reads the project's written turns (a folder of its own, not raw data). The build then
1. drops examples whose input repeats an earlier one (same setting, messages and documents),
   and all of them when they disagree on the label;
2. balances each source and setting: `NEGATIVES_PER_CLARIFY` negatives per clarify example,
   `HARD_NEGATIVE_SHARE` of them hard negatives where there are enough (a source and setting
   without clarify examples, like the rewrite sets, keeps all);
3. caps sources to a share of the total (`MAX_SHARE`: OR-ShARC teaches "ask for a missing fact",
   not ambiguity, AmbigNQ, being large, would otherwise swamp the rest, and the rewrite sets
   would outnumber every other `pre` source); the written turns and the named pairs
   (`UNCOUNTED`) are kept beside that total, uncapped, so that they change no other source's
   examples;
4. sets a share of AmbigNQ's `post` examples among other passages, as a retriever returns them
   (`crowding`; in place, so every count stays), from the passages of the split its group is in;
5. adds, for a share of the AmbigNQ questions the caps kept ambiguous, one of the two readings
   their `post` example shows, asked as it is, alone and over those very passages (hard
   negatives: `source_ambignq.convert_disambiguated`; last, so that every other example stays);
6. splits 80/10/10 by a hash of the group id and the seed, so a conversation (for CANARD, the
   dialogs over one Wikipedia section), story, dialogue, rule page or question lies in one split
   only, and shuffles each file deterministically (a prefix of a file is a representative
   sample).
Every choice is a hash of the seed and an id, so the same raw data and seed give the same files.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from tqdm import tqdm

from askbetter.clarifier import (
    crowding,
    source_abg_coqa,
    source_ambignq,
    source_answers,
    source_followups,
    source_named_pair,
    source_or_sharc,
    source_pacific,
    source_referents,
    source_rewrites,
    source_topic_shift,
    source_written,
)
from askbetter.clarifier.examples import Example, needs_clarification, write_examples
from askbetter.clarifier.source_common import (
    SPLITS,
    Converted,
    RawDataError,
    split_of,
    stable_fraction,
)
from askbetter.text import write_together

logger = logging.getLogger(__name__)

NEGATIVES_PER_CLARIFY = 1.0
HARD_NEGATIVE_SHARE = 0.6
MAX_SHARE = {"or-sharc": 0.15, "rewrites": 0.2, "ambignq": 0.45, "unresolved": 0.08}
# uncapped and left out of the total that the shares are of: the shares bind most of it, so
# every example added to the total would let the capped sources grow by several more
NAMED_PAIR = "named-pair"
UNCOUNTED = {source_written.SOURCE, NAMED_PAIR}


@dataclass(frozen=True)
class Source:
    """One converter: its name, the raw folders it reads, and whether the build needs it."""

    name: str
    folders: tuple[str, ...]
    convert: Callable[[Path, int], Iterator[Converted]]
    required: bool


SOURCES = (
    Source("abg-coqa", source_abg_coqa.FOLDERS, source_abg_coqa.convert, True),
    Source("pacific", source_pacific.FOLDERS, source_pacific.convert, True),
    Source("ambignq", source_ambignq.FOLDERS, source_ambignq.convert, True),
    Source("or-sharc", source_or_sharc.FOLDERS, source_or_sharc.convert, False),
    Source("rewrites", source_rewrites.FOLDERS, source_rewrites.convert, False),
    Source("unresolved", source_rewrites.FOLDERS, source_rewrites.convert_unresolved, False),
    Source("topic-shift", source_topic_shift.FOLDERS, source_topic_shift.convert, False),
    Source("referents", source_referents.FOLDERS, source_referents.convert, False),
    Source("followups", source_followups.FOLDERS, source_followups.convert, False),
    Source("answers", source_answers.FOLDERS, source_answers.convert, False),
    Source("answers-unresolved", source_answers.FOLDERS, source_answers.convert_unresolved,
           False),
    Source(NAMED_PAIR, source_named_pair.FOLDERS, source_named_pair.convert, False),
)

ALL_FOLDERS = tuple(dict.fromkeys(f for s in SOURCES for f in s.folders))
CountKey = tuple[str, str, str, str, str]  # split, source, setting, kind, label
Stratum = tuple[str, str, bool | str, bool]  # source, setting, label or kind, has a history


class Item(NamedTuple):
    """An example with the converter that made it, its group and the split of that group."""

    converter: str
    group: str
    example: Example
    split: str


@dataclass
class BuildReport:
    """What a build wrote: example counts per (split, source, setting, kind, label), where label
    is "clarify" or "clear", the files, the dataset folders skipped as absent, the examples
    dropped as repeated inputs, and the wall time."""

    counts: Counter[CountKey] = field(default_factory=Counter)
    files: dict[str, Path] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    repeats_dropped: int = 0
    seconds: float = 0.0

    def total(self, split: str | None = None) -> int:
        return sum(n for k, n in self.counts.items() if split in (None, k[0]))


def build_dataset(
    raw_dir: Path, out_dir: Path, seed: int = 13, progress: bool = True,
    written: Path | None = source_written.FOLDER,
) -> BuildReport:
    """Convert the datasets under `raw_dir` and the written turns in `written` (none: None),
    write `out_dir/{train,dev,test}.jsonl`, return counts.
    A build in `out_dir` already is replaced (its three files, once all three new ones are written:
    a build stopped before leaves it whole, and a Ctrl-C while they replace it waits until all
    three have); other files there stay.

    Raises FileNotFoundError when `raw_dir` or a required dataset folder is missing
    (NotADirectoryError when `raw_dir` is a file), and RawDataError (a ValueError) naming the file
    when a raw file is missing or malformed (a written file too). Absent optional datasets are
    skipped with a warning and listed in the report.
    """
    start = time.perf_counter()
    raw_dir, out_dir = Path(raw_dir), Path(out_dir)
    report = BuildReport()
    sources = _present_sources(raw_dir, report)
    items: list[Item] = []
    for source in tqdm(sources, desc="data build", unit="source", disable=not progress):
        with raw_records(source.name, [raw_dir / f for f in source.folders]):
            items += [Item(source.name, g, ex, split_of(g, seed))
                      for g, ex in source.convert(raw_dir, seed)]
    if written is not None:
        items += [Item(source_written.SOURCE, g, ex, split_of(g, seed))
                  for g, ex in source_written.convert(written)]
    _check_unique_ids(it.example for it in items)
    unique = _drop_repeats(items)
    report.repeats_dropped = len(items) - len(unique)
    kept = _cap_shares(_balance(unique, seed), seed)
    with raw_records("crowding", [raw_dir / "canard"]):
        pools = crowding.passage_pools(raw_dir, seed)
    kept = [it._replace(example=crowding.crowd(it.example, pools.get(it.split, []), seed))
            for it in kept]
    with raw_records("ambignq", [raw_dir / f for f in source_ambignq.FOLDERS]):
        questions = source_ambignq.questions_of(raw_dir)  # as `ambignq` read them (parsed once)
    kept += _disambiguated_twins(kept, questions, seed)  # an error here is the build's own
    splits: dict[str, list[Example]] = {s: [] for s in SPLITS}
    for _, _, ex, split in kept:
        splits[split].append(ex)
        label = "clarify" if needs_clarification(ex) else "clear"
        report.counts[(split, ex["source"], ex["setting"], ex["kind"], label)] += 1
    for split, examples in splits.items():
        examples.sort(key=lambda ex: stable_fraction(seed, "order", ex["id"]))
        report.files[split] = out_dir / f"{split}.jsonl"
    # every split written before any replaces the last build's: never a mix of two
    write_together({report.files[split]: functools.partial(write_examples, examples=examples)
                    for split, examples in splits.items()},
                   "the new build in --out is whole: it had begun to replace the last one")
    report.seconds = time.perf_counter() - start
    return report


@contextmanager
def raw_records(converter: str, folders: list[Path]) -> Iterator[None]:
    """Report a raw record that a converter cannot read as a RawDataError naming its dataset
    folders: a field deeper than those `source_common.field` checks that is missing, null or of
    another type, or a blank question (`make_example` refuses it). The converters index the
    datasets' published structure directly; the message gives the error and the converter's
    line, for a dataset file that was cut or edited (or a converter's bug)."""
    try:
        yield
    except RawDataError:
        raise
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
        frame = _converter_frame(exc)
        raise RawDataError(
            f"{converter}: a record under {', '.join(map(str, folders))} is not in the form the "
            f"build reads ({type(exc).__name__}: {exc}, at {Path(frame.filename).name}:{frame.lineno}); "
            f"is each file whole, as the dataset publishes it?") from exc


# shared helpers the converters call: the line worth naming is their caller's
_HELPER_FILES = ("source_common.py", "examples.py")


def _converter_frame(exc: BaseException) -> traceback.FrameSummary:
    """Where `exc` left the converter: the innermost frame of this package's own files outside
    the shared helpers (`make_example` refuses a blank question in examples.py, but the record
    was read in the converter), else the innermost frame."""
    frames = traceback.extract_tb(exc.__traceback__)
    own = [f for f in frames
           if Path(f.filename).parent == Path(__file__).parent and Path(f.filename).name not in _HELPER_FILES]
    return own[-1] if own else frames[-1]


def _disambiguated_twins(kept: list[Item], questions: Sequence[source_ambignq.Question],
                         seed: int) -> list[Item]:
    """`source_ambignq.convert_disambiguated`'s examples for the AmbigNQ ambiguous questions the
    caps kept (of `questions`, `source_ambignq.questions_of`), from their `post` examples as
    crowding left them (added last, so that every other example stays as it is)."""
    partners = {it.group: it.example for it in kept if it.converter == "ambignq"
                and it.example["kind"] == "ambiguous" and it.example["setting"] == "post"}
    return [Item("disambiguated", g, ex, split_of(g, seed))
            for g, ex in source_ambignq.convert_disambiguated(questions, seed, partners)]


def _present_sources(raw_dir: Path, report: BuildReport) -> list[Source]:
    if raw_dir.is_file():
        raise NotADirectoryError(f"raw data folder {raw_dir} is a file: name the folder holding the datasets")
    if not raw_dir.is_dir():
        raise FileNotFoundError(f"raw data folder not found: {raw_dir}")
    present = []
    for source in SOURCES:
        missing = [f for f in source.folders if not (raw_dir / f).is_dir()]
        if len(missing) < len(source.folders):
            present.append(source)
            if missing:
                logger.warning("%s: skipping absent folder(s) %s", source.name, ", ".join(missing))
                report.skipped += missing
        elif source.required:
            raise FileNotFoundError(
                f"dataset folder {raw_dir / missing[0]} not found (needed for {source.name}); "
                f"{raw_dir} should hold {', '.join(ALL_FOLDERS)}"
            )
        else:
            logger.warning("%s: skipping, folder(s) %s absent", source.name, ", ".join(missing))
            report.skipped += missing
    report.skipped = list(dict.fromkeys(report.skipped))  # a folder can serve two converters
    return present


def _check_unique_ids(examples: Iterable[Example]) -> None:
    seen: set[str] = set()
    for ex in examples:
        if ex["id"] in seen:
            raise RawDataError(f"two examples share the id {ex['id']!r}; the raw data repeats it")
        seen.add(ex["id"])


def _drop_repeats(items: list[Item]) -> list[Item]:
    """Keep the first of examples with the same input (setting, messages, documents); drop all
    of them when their labels disagree."""

    def key(ex: Example) -> str:
        return json.dumps([ex["setting"], ex["messages"], ex["documents"]], sort_keys=True)

    labels: dict[str, set[bool]] = defaultdict(set)
    for it in items:
        labels[key(it.example)].add(needs_clarification(it.example))
    seen: set[str] = set()
    out = []
    for it in items:
        k = key(it.example)
        if k not in seen and len(labels[k]) == 1:
            out.append(it)
        seen.add(k)
    return out


def _keep(items: list[Item], k: int, seed: int, by_group: bool = False) -> list[Item]:
    """A deterministic sample of `k` items, in their original order: those of lowest hash of
    (seed, example id), or of (seed, group) first when `by_group`, so that whole groups go."""
    if k >= len(items):
        return items

    def rank(it: Item) -> tuple[float, float]:
        by_id = stable_fraction(seed, "keep", it.example["id"])
        return (stable_fraction(seed, "keep", it.group) if by_group else 0.0, by_id)

    chosen = {it.example["id"] for it in sorted(items, key=rank)[:k]}
    return [it for it in items if it.example["id"] in chosen]


def _role(ex: Example) -> str:
    if needs_clarification(ex):
        return "clarify"
    return "hard-negative" if ex["kind"] == "hard-negative" else "clear"


def _balance(items: list[Item], seed: int) -> list[Item]:
    """Per converter and setting, keep `NEGATIVES_PER_CLARIFY` negatives per clarify example,
    hard negatives filling `HARD_NEGATIVE_SHARE` of them and plain clear ones the rest (either
    kind making up for the other when short). Cells without clarify examples keep everything."""
    cells: dict[tuple[str, str], dict[str, list[Item]]] = defaultdict(lambda: defaultdict(list))
    for it in items:
        cells[(it.converter, it.example["setting"])][_role(it.example)].append(it)
    out: list[Item] = []
    for roles in cells.values():
        clarify, hard, clear = roles["clarify"], roles["hard-negative"], roles["clear"]
        if not clarify:
            out += hard + clear
            continue
        budget = math.ceil(NEGATIVES_PER_CLARIFY * len(clarify))
        n_hard = min(len(hard), max(math.ceil(HARD_NEGATIVE_SHARE * budget), budget - len(clear)))
        out += clarify + _keep(hard, n_hard, seed) + _keep(clear, budget - n_hard, seed)
    return out


def _cap_shares(items: list[Item], seed: int) -> list[Item]:
    """Downsample the converters of `MAX_SHARE`, whole groups at a time, to at most their share
    of the final total (of the converters outside `UNCOUNTED`, which are kept whole)."""
    by_converter: dict[str, list[Item]] = defaultdict(list)
    for it in items:
        by_converter[it.converter].append(it)
    sizes = {name: len(members) for name, members in by_converter.items() if name not in UNCOUNTED}
    limits = share_limits(sizes, {k: v for k, v in MAX_SHARE.items() if k in sizes})
    return [
        it
        for name, members in by_converter.items()
        for it in (members if name in UNCOUNTED else _keep(members, limits[name], seed, by_group=True))
    ]


def share_limits(sizes: dict[str, int], shares: dict[str, float]) -> dict[str, int]:
    """How many of each part to keep so that every part in `shares` is at most that share of the
    kept total, keeping as much as possible. Parts without a share are kept whole."""
    binding = dict(shares)
    while True:
        free = sum(n for name, n in sizes.items() if name not in binding)
        total = free / (1 - sum(binding.values())) if binding else free
        loose = {name for name, share in binding.items() if sizes[name] <= share * total}
        if not loose:
            break
        for name in loose:
            del binding[name]
    return {name: int(binding[name] * total) if name in binding else n for name, n in sizes.items()}


class UnknownGroup(ValueError):
    """A source or source and setting to leave out that no example has (or groups that leave out
    every example: `train` checks that)."""


def leave_out(examples: list[Example], groups: Iterable[str]) -> list[Example]:
    """The examples outside `groups`, each a source ("ambignq") or a source and setting
    ("ambignq:pre"), for training without a source the model cannot learn from (AmbigNQ's `pre`
    questions, whose label is world knowledge, teach it to ask on plain factual questions).
    A group that matches no example is an error (a misspelt source would otherwise leave out
    nothing)."""
    groups = list(groups)
    if not groups:
        return examples
    matched: Counter[str] = Counter()
    kept = []
    for ex in examples:
        names = (ex["source"], f"{ex['source']}:{ex['setting']}")
        hit = next((g for g in groups if g in names), None)
        if hit is None:
            kept.append(ex)
        else:
            matched[hit] += 1
    if missing := [g for g in groups if not matched[g]]:
        present = sorted({f"{ex['source']}:{ex['setting']}" for ex in examples})
        raise UnknownGroup(f"{', '.join(missing)} matches no example; there are {', '.join(present)}")
    return kept


def balanced_sample(examples: list[Example], n: int, seed: int = 13, power: float = 1.0,
                    by_kind: bool = False, source_weights: Mapping[str, float] | None = None,
                    ) -> list[Example]:
    """A sample of `n` examples stratified by (source, setting, label, whether the judged turn has
    a history, so that a source's few turns after a dialog are not drowned by its many opening
    ones, see `source_topic_shift`), with the label split into kinds when `by_kind` (so that a
    source's clear questions are not drowned by its hard negatives): each stratum gets a share
    in proportion to its size to the `power` (1: proportional; 0.5: small strata get more than
    their share, large ones less; 0: equal), times its source's weight in `source_weights` (1 for
    a source it does not name), largest remainders, at least one each while `n` allows, never more
    than it has. Members are chosen by a hash of the seed and id; returned in a
    deterministic shuffled order."""
    if n >= len(examples):
        chosen = list(examples)
    else:
        strata: dict[Stratum, list[Example]] = defaultdict(list)
        for ex in examples:
            label_or_kind = ex["kind"] if by_kind else needs_clarification(ex)
            key: Stratum = (ex["source"], ex["setting"], label_or_kind, len(ex["messages"]) > 1)
            strata[key].append(ex)
        weights = source_weights or {}
        quotas = _quotas({k: len(v) for k, v in strata.items()}, n,
                         {k: len(v) ** power * weights.get(k[0], 1.0) for k, v in strata.items()})
        chosen = []
        for key, members in strata.items():
            members = sorted(members, key=lambda ex: stable_fraction(seed, "sample", ex["id"]))
            chosen += members[: quotas[key]]
    return sorted(chosen, key=lambda ex: stable_fraction(seed, "sample-order", ex["id"]))


def _quotas(sizes: dict[Stratum, int], n: int, weights: dict[Stratum, float]) -> dict[Stratum, int]:
    """Split `n` over parts in proportion to their `weights` (largest remainder), each part
    getting at least one while `n` allows and never more than its size."""
    total = sum(weights.values())
    exact = {k: n * w / total for k, w in weights.items()}
    floor = 1 if n >= len(sizes) else 0
    quotas = {k: min(sizes[k], max(floor, math.floor(x))) for k, x in exact.items()}
    by_remainder = sorted(sizes, key=lambda k: (exact[k] - math.floor(exact[k]), sizes[k]))[::-1]
    while sum(quotas.values()) < n:
        for k in by_remainder:
            if sum(quotas.values()) >= n:
                break
            if quotas[k] < sizes[k]:
                quotas[k] += 1
    while sum(quotas.values()) > n:  # the at-least-one rule overshot: take from the largest
        k = max(quotas, key=quotas.__getitem__)
        quotas[k] -= 1
    return quotas


def format_counts(report: BuildReport) -> str:
    """A readable table: one row per source, setting, kind and label, one column per split and
    the total; then the totals, per setting, the share of clarify examples and the share of hard
    negatives among the negatives."""
    columns: tuple[str | None, ...] = (*SPLITS, None)  # None: all splits

    def count(split: str | None, keep: Callable[[CountKey], bool] = lambda k: True) -> int:
        return sum(n for k, n in report.counts.items() if split in (None, k[0]) and keep(k))

    def share(part: Callable[[CountKey], bool], whole: Callable[[CountKey], bool]) -> list[str]:
        return [
            f"{100 * count(s, part) / count(s, whole):.1f}%" if count(s, whole) else "-"
            for s in columns
        ]

    def is_clarify(k: CountKey) -> bool:
        return k[4] == "clarify"

    def is_negative(k: CountKey) -> bool:
        return k[4] == "clear"

    def is_hard(k: CountKey) -> bool:
        return is_negative(k) and k[3] == "hard-negative"

    body = [
        [*row, *(str(count(s, lambda k: k[1:] == row)) for s in columns)]
        for row in sorted({k[1:] for k in report.counts})
    ]
    summary = [
        ["total", "", "", "", *(str(count(s)) for s in columns)],
        *(
            [f"  {st}", "", "", "", *(str(count(s, lambda k: k[2] == st)) for s in columns)]
            for st in ("pre", "post")
        ),
        ["clarify share", "", "", "", *share(is_clarify, lambda k: True)],
        ["hard-neg share of negatives", "", "", "", *share(is_hard, is_negative)],
    ]
    header = ["source", "setting", "kind", "label", *SPLITS, "total"]
    widths = [max(len(r[i]) for r in [header, *body, *summary]) for i in range(len(header))]

    def line(row: list[str]) -> str:
        cells = (c.ljust(w) if i < 4 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
        return "  ".join(cells).rstrip()

    rule = "-" * len(line(header))
    notes = [f"built in {report.seconds:.1f} s; dropped {report.repeats_dropped} repeated inputs"]
    if report.skipped:
        notes.append(f"skipped absent dataset folders: {', '.join(report.skipped)}")
    return "\n".join([line(header), rule, *map(line, body), rule, *map(line, summary), *notes])
