"""Baselines side by side: trivial clarifiers, the prompted base model and the adapter, one table.

`run_baselines` is what `askbetter eval FILE.jsonl --baselines` runs: always-clarify,
never-clarify, the base model prompted zero-shot and few-shot, and the adapter, each scored by
`evaluate`, then `format_table` lays the reports out as a Markdown table shaped like the paper's.

Thresholds: the base model is judged at the one it has without an adapter (0.5), the adapter at
its stored, dev-picked one; `ASKBETTER_THRESHOLD`, when set, replaces both. The trivial systems'
constant scores give AUC 0.5; always-clarify's question (`GENERIC_QUESTION`) is scored against
every reference. A system whose scores are not all finite (a float16 model's overflow) has no
classification figures (`n_not_finite` in its report; "n/a" in its row, whose name says so, and a
warning); the other systems are reported as usual.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from askbetter.clarifier.assets import require_adapter
from askbetter.clarifier.evaluate import (
    evaluate,
    fmt_decimal,
    fmt_percent,
    load_examples,
    local_clarifier,
    resolve_settings,
    system_name,
    write_json,
)
from askbetter.clarifier.examples import Example
from askbetter.clarifier.metrics import Encoder, not_finite_message
from askbetter.clarifier.prompt import PromptStyle
from askbetter.clarifier.types import Clarifier, Decision, Document, Message, stage_of
from askbetter.settings import Settings
from askbetter.text import write_lines, write_together

log = logging.getLogger(__name__)

#: AlwaysClarify's question: shows what a generic question scores on question quality.
GENERIC_QUESTION = "Could you clarify what you mean?"

Report = dict[str, Any]


class AlwaysClarify:
    """Asks every time, with the same generic question."""

    name = "always-clarify"

    def check(self, messages: list[Message], documents: list[Document] | None = None) -> Decision:
        return Decision(True, 1.0, GENERIC_QUESTION, stage_of(documents))


class NeverClarify:
    """Never asks."""

    name = "never-clarify"

    def check(self, messages: list[Message], documents: list[Document] | None = None) -> Decision:
        return Decision(False, 0.0, None, stage_of(documents))


def compare(
    examples: list[Example],
    systems: Mapping[str, Clarifier | Callable[[], Clarifier]],
    *,
    embedder: Encoder | None = None,
    generate_questions: bool = True,
    progress: bool = True,
) -> list[Report]:
    """One `evaluate` report per system, in order, each named by its key (`generate_questions`:
    see `evaluate`).

    A system is a clarifier or a zero-argument function that builds one just before its run, so
    that local models load in order (the base model alone before an adapter is attached).
    """
    reports = []
    for name, system in systems.items():
        clarifier = system if isinstance(system, Clarifier) else system()
        report = evaluate(examples, clarifier, embedder=embedder, generate_questions=generate_questions,
                          progress=progress, system=name)
        if report["n_not_finite"]:
            log.warning("%s: %s", name, not_finite_message(report["n_not_finite"], report["n"]))
        reports.append(report)
    return reports


def _setting_column(scope: str, key: str, fmt: Callable[[Any], str]) -> Callable[[Report], str]:
    """A cell showing `key` for one setting ("pre", "post") or overall ("all")."""

    def cell(report: Report) -> str:
        figures = report if scope == "all" else report["by_setting"][scope]
        return fmt(figures[key])

    return cell


#: The table's columns after the system's name: (header, cell from a report).
COLUMNS: list[tuple[str, Callable[[Report], str]]] = [
    (f"{scope} {header}", _setting_column(scope, key, fmt))
    for scope in ("pre", "post", "all")
    for header, key, fmt in (
        ("acc", "accuracy", fmt_percent),
        ("F1-clarify", "f1_clarify", fmt_percent),
        ("macro-F1", "macro_f1", fmt_percent),
        ("AUC", "auc", fmt_decimal),
    )
] + [
    ("hard-neg acc", lambda r: fmt_percent(r["by_kind"].get("hard-negative", {}).get("accuracy"))),
    ("ROUGE-L", lambda r: fmt_decimal(r["rouge_l"])),
    ("embed-sim", lambda r: fmt_decimal(r["embed_sim"])),
    ("one question", lambda r: fmt_percent(r["one_question_share"])),
    ("sec/example", lambda r: fmt_decimal(r["sec_per_example"], 3)),
]


def format_table(reports: list[Report]) -> str:
    """A Markdown table: one row per report (system), classification per setting and overall,
    hard-negative accuracy, question quality, seconds per example."""
    header = ["system", *(name for name, _ in COLUMNS)]
    lines = [
        _row(header),
        _row([":--", *("--:" for _ in COLUMNS)]),
        *(_row([_system(r), *(cell(r) for _, cell in COLUMNS)]) for r in reports),
    ]
    return "\n".join(lines)


def _system(report: Report) -> str:
    """The system's name, and how many of its scores are not finite where some are (its
    classification cells read n/a)."""
    bad = report["n_not_finite"]
    return f"{report['system']} ({bad} of {report['n']} scores not finite)" if bad else report["system"]


def run_baselines(
    path: Path,
    *,
    limit: int | None,
    adapter: str | None = None,
    json_out: Path | None = None,
    markdown_out: Path | None = None,
    base_model: str | None = None,
    settings: Settings | None = None,
    generate_questions: bool = True,
) -> list[Report]:
    """`askbetter eval FILE.jsonl --baselines [--no-questions]`: score always-clarify,
    never-clarify, the base model zero-shot and few-shot, and the adapter (default: the
    settings', i.e. the bundled one) on the first `limit` examples; write the reports as JSON and
    the table as Markdown where asked; return the reports. ValueError, before any example is read,
    where the adapter is none: its row would repeat the base model's."""
    settings = resolve_settings(settings, base_model)
    adapter = adapter or settings.adapter
    require_adapter(adapter, "--baselines")
    examples = load_examples(path, limit)

    def local(adapter: str, prompt_style: PromptStyle | None) -> Callable[[], Clarifier]:
        return lambda: local_clarifier(settings, adapter=adapter, prompt_style=prompt_style)

    systems: dict[str, Clarifier | Callable[[], Clarifier]] = {
        AlwaysClarify.name: AlwaysClarify(),
        NeverClarify.name: NeverClarify(),
        system_name("none", "zero-shot"): local("none", "zero-shot"),
        system_name("none", "few-shot"): local("none", "few-shot"),
        system_name(adapter, None): local(adapter, None),  # the style it was trained on
    }
    reports = compare(examples, systems, generate_questions=generate_questions)
    outputs = [(json_out, functools.partial(write_json, obj=reports)),
               (markdown_out, functools.partial(write_table, reports=reports))]
    # together: a stop leaves the last run's pair or this one's, never this run's report beside the
    # last run's table
    write_together({path: write for path, write in outputs if path is not None},
                   "this run's output is written whole")
    return reports


def write_table(path: Path, reports: list[Report]) -> None:
    """`format_table` as a Markdown file, atomically (`askbetter.text.write_lines`)."""
    write_lines(path, [format_table(reports) + "\n"])


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"
