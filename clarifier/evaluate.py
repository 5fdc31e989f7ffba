"""Score a clarifier on examples: the engine of `askbetter eval FILE.jsonl`.

`evaluate` runs a clarifier over examples (see `askbetter.clarifier.examples`) and returns a
JSON-ready report whose keys are `REPORT_KEYS`:

- `system`: the system's name; `threshold`: its decision threshold, or None if it has none;
- `n`, `n_clarify`: examples and examples that need clarification;
- `n_not_finite`: scores that are NaN or infinite (a float16 model's overflow); when there are
  any, no figure of the scores or of the decisions taken on them can be computed: the
  classification figures below are None (`by_setting` keeps its counts), `by_kind` and
  `by_source` are empty;
- `accuracy`, `precision_clarify`, `recall_clarify`, `f1_clarify`, `macro_f1`, `auc` over all
  examples ("clarify" is the positive class; precision, recall and F1 are None where they count
  nothing (`metrics.classification`), macro-F1 averages the classes present, `auc` is None when
  only one class is present);
- `by_setting`: `{"pre": {...}, "post": {...}}`, the same figures per setting;
- `by_kind`: `{kind: {"accuracy", "n"}}` for each kind present (hard negatives: `hard-negative`);
- `by_source`: `{source: {setting: {"accuracy", "auc", "n"}}}` for each source and setting present;
- `rouge_l` (mean ROUGE-L F-measure, `rouge_score` with Porter stemming), `embed_sim` (mean
  cosine of all-MiniLM-L6-v2 embeddings), `one_question_share` (`metrics.is_one_question`),
  `n_questions`: question quality over the examples that have a reference question (their
  `clarification`) and where the system asked one, each question as the system returned it
  (the local clarifier's: its output's first line up to the first "?", or a fixed fallback
  question) against that reference (None when there are none);
- `sec_per_example`: mean wall time of one decision, question generation included.

`run_eval` is the command itself; `format_report` prints a report for people.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from askbetter.clarifier import metrics
from askbetter.clarifier.assets import names_no_adapter
from askbetter.clarifier.examples import Example, check_documents, check_limit, needs_clarification, read_examples
from askbetter.clarifier.prompt import PromptStyle
from askbetter.clarifier.types import Clarifier, Decision, Document, Message, stage_of
from askbetter.settings import BUNDLED_EMBEDDING_MODEL, Settings
from askbetter.text import write_lines, write_together

REPORT_KEYS = (
    "system",
    "threshold",
    *metrics.CLASSIFICATION_KEYS,
    "n_not_finite",
    "by_setting",
    "by_kind",
    "by_source",
    "rouge_l",
    "embed_sim",
    "one_question_share",
    "n_questions",
    "sec_per_example",
)


@dataclass(frozen=True)
class Prediction:
    """One example's outcome, as written to the `--predictions` file for error analysis."""

    id: str
    source: str
    setting: str
    kind: str
    label: bool  # the example needs clarification
    score: float
    decision: bool  # the system asked for clarification
    question: str | None  # the system's question, None when it did not ask
    reference: str | None  # the example's reference question
    seconds: float


def load_examples(path: str | Path, limit: int | None = None) -> list[Example]:
    """The first `limit` examples of a JSONL file (all when None).

    Raises FileNotFoundError for a missing file, `ExampleFormatError` (file:line) for a broken
    line, and ValueError for a limit below 1 or a file without examples.
    """
    check_limit(limit)
    examples = read_examples(path)
    if not examples:
        raise ValueError(f"no examples in {path}")
    return examples[:limit]


def predict(
    examples: Sequence[Example],
    clarifier: Clarifier,
    *,
    generate_questions: bool = True,
    progress: bool = True,
    desc: str = "eval",
) -> list[Prediction]:
    """Decide on every example, timing each decision; `post` examples pass their documents,
    `pre` examples none.

    With `generate_questions=False`, a clarifier that can score without writing a question (a
    `score(messages, documents)` method and a `threshold`, as `LocalClarifier` has) is run that
    way; any other is run through `check` and its questions are dropped.
    """
    predictions = []
    for ex in tqdm(examples, desc=desc, unit="ex", disable=not progress):
        documents = check_documents(ex)
        start = time.perf_counter()
        decision = _decide(clarifier, ex["messages"], documents, generate_questions)
        seconds = time.perf_counter() - start
        asked = decision.needs_clarification and generate_questions
        predictions.append(
            Prediction(
                id=ex["id"],
                source=ex["source"],
                setting=ex["setting"],
                kind=ex["kind"],
                label=needs_clarification(ex),
                score=float(decision.score),
                decision=bool(decision.needs_clarification),
                question=decision.question if asked else None,
                reference=ex["clarification"],
                seconds=seconds,
            )
        )
    return predictions


def summarize(
    predictions: Sequence[Prediction],
    *,
    system: str,
    threshold: float | None = None,
    embedder: metrics.Encoder | None = None,
) -> dict[str, Any]:
    """The report (keys `REPORT_KEYS`) for a list of predictions.

    Question quality needs an embedder; MiniLM is loaded only when there are questions to score
    and none is given.
    """
    references, questions = metrics.question_pairs(
        [p.reference for p in predictions], [p.question for p in predictions]
    )
    if questions and embedder is None:
        embedder = _minilm()
    not_finite = metrics.count_not_finite([p.score for p in predictions])
    report: dict[str, Any] = {
        "system": system,
        "threshold": None if threshold is None else float(threshold),
        "n_not_finite": not_finite,
        **(_not_computed(predictions) if not_finite else _classification(predictions)),
        **metrics.question_quality(references, questions, embedder),
        "sec_per_example": _mean([p.seconds for p in predictions]),
    }
    return {key: report[key] for key in REPORT_KEYS}


def _classification(predictions: Sequence[Prediction]) -> dict[str, Any]:
    """The report's classification figures: overall, `by_setting`, `by_kind`, `by_source`."""
    labels = [p.label for p in predictions]
    decisions = [p.decision for p in predictions]
    scores = [p.score for p in predictions]
    settings = [p.setting for p in predictions]
    return {
        **metrics.classification(labels, decisions, scores),
        "by_setting": metrics.by_setting(labels, decisions, scores, settings),
        "by_kind": metrics.by_kind(labels, decisions, [p.kind for p in predictions]),
        "by_source": metrics.by_source(labels, decisions, scores, [p.source for p in predictions], settings),
    }


def _not_computed(predictions: Sequence[Prediction]) -> dict[str, Any]:
    """`_classification`'s keys for scores that are not all finite: no figure, the counts kept."""
    return {
        **metrics.not_computed([p.label for p in predictions]),
        "by_setting": {s: metrics.not_computed([p.label for p in predictions if p.setting == s])
                       for s in metrics.SETTINGS},
        "by_kind": {},
        "by_source": {},
    }


def evaluate(
    examples: list[Example],
    clarifier: Clarifier,
    *,
    embedder: metrics.Encoder | None = None,
    generate_questions: bool = True,
    progress: bool = True,
    system: str | None = None,
) -> dict[str, Any]:
    """Run `clarifier` on `examples` and return the report (see the module docstring).

    `system` names it in the report (default: its `name` attribute, else its class name); its
    `threshold` attribute, if any, is reported too. With `generate_questions=False` no questions
    are written or scored (see `predict`): a faster, classification-only run.
    """
    name = system or getattr(clarifier, "name", None) or type(clarifier).__name__
    predictions = predict(
        examples, clarifier, generate_questions=generate_questions, progress=progress, desc=name
    )
    return summarize(
        predictions,
        system=name,
        threshold=getattr(clarifier, "threshold", None),
        embedder=embedder,
    )


def run_eval(
    path: Path,
    *,
    adapter: str | None,
    base_model: str | None,
    limit: int | None,
    json_out: Path | None,
    prompt_style: PromptStyle | None = None,
    settings: Settings | None = None,
    predictions_out: Path | None = None,
    generate_questions: bool = True,
) -> dict[str, Any]:
    """`askbetter eval FILE.jsonl [--adapter PATH|none] [--base-model ID] [--limit N] [--json OUT]
    [--predictions OUT.jsonl]`: evaluate the local clarifier on the first `limit` examples,
    write the report and the per-example predictions where asked (together:
    `askbetter.text.write_together`), and return the report."""
    examples = load_examples(path, limit)
    settings = resolve_settings(settings, base_model)
    adapter = adapter or settings.adapter
    clarifier = local_clarifier(settings, adapter=adapter, prompt_style=prompt_style)
    name = system_name(adapter, getattr(clarifier, "prompt_style", prompt_style))
    predictions = predict(examples, clarifier, generate_questions=generate_questions, desc=name)
    # no figures: a report of them would be misread (and before `summarize`, which may load MiniLM)
    if bad := metrics.count_not_finite([p.score for p in predictions]):
        if predictions_out is not None:  # the run's output is kept all the same
            write_predictions(predictions_out, predictions)
        raise ValueError(metrics.not_finite_message(bad, len(predictions)))
    report = summarize(predictions, system=name, threshold=getattr(clarifier, "threshold", None))
    outputs = [(predictions_out, functools.partial(write_predictions, predictions=predictions)),
               (json_out, functools.partial(write_json, obj=report))]
    # together: a stop leaves the last run's pair or this one's, never this run's predictions beside
    # the last run's report
    write_together({path: write for path, write in outputs if path is not None},
                   "this run's output is written whole")
    return report


def resolve_settings(settings: Settings | None, base_model: str | None) -> Settings:
    """`settings` (default: from the environment) with `base_model` overriding when given."""
    settings = Settings.from_env() if settings is None else settings
    return dataclasses.replace(settings, base_model=base_model) if base_model else settings


def local_clarifier(settings: Settings, *, adapter: str, prompt_style: PromptStyle | None) -> Clarifier:
    """The local model clarifier (imported here: loading it pulls in torch)."""
    from askbetter.clarifier.local import LocalClarifier

    return LocalClarifier.from_settings(settings, adapter=adapter, prompt_style=prompt_style)


def system_name(adapter: str, prompt_style: str | None) -> str:
    """A short name for a local system: "adapter bundled", "base model, few-shot"..."""
    name = "base model" if names_no_adapter(adapter) else f"adapter {adapter}"
    return f"{name}, {prompt_style}" if prompt_style and prompt_style != "tuned" else name


def write_json(path: Path, obj: object) -> None:
    """`obj` as indented JSON, atomically (`askbetter.text.write_lines`)."""
    write_lines(path, [json.dumps(obj, indent=2, ensure_ascii=False) + "\n"])


def write_predictions(path: Path, predictions: Sequence[Prediction]) -> None:
    """One JSON object per line, the fields of `Prediction`, atomically (`askbetter.text.write_lines`)."""
    write_lines(path, (json.dumps(dataclasses.asdict(p), ensure_ascii=False) + "\n" for p in predictions))


def read_predictions(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a `--predictions` file (`write_predictions`), in order, as dicts."""
    with Path(path).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def format_report(report: dict[str, Any]) -> str:
    """A readable summary: overall and per-setting figures, accuracy per kind, question quality,
    seconds per example."""
    threshold = report["threshold"]
    lines = [
        f"system: {report['system']}"
        + ("" if threshold is None else f"   threshold: {threshold:.3f}")
        + f"   examples: {report['n']} ({report['n_clarify']} need clarification)",
        "",
        f"{'':10}{'accuracy':>10}{'precision':>11}{'recall':>8}{'F1-clarify':>12}"
        f"{'macro-F1':>10}{'AUC':>7}{'n':>7}",
    ]
    for label, f in [("overall", report), *report["by_setting"].items()]:
        lines.append(
            f"{label:10}{fmt_percent(f['accuracy']):>10}{fmt_percent(f['precision_clarify']):>11}"
            f"{fmt_percent(f['recall_clarify']):>8}{fmt_percent(f['f1_clarify']):>12}"
            f"{fmt_percent(f['macro_f1']):>10}{fmt_decimal(f['auc']):>7}{f['n']:>7}"
        )
    lines += ["", "accuracy by kind:"]
    lines += [
        f"  {kind:16}{fmt_percent(f['accuracy']):>8}   n={f['n']}"
        for kind, f in report["by_kind"].items()
    ]
    lines += ["", f"accuracy / AUC by source:{'pre':>19}{'post':>24}"]
    lines += [
        f"  {source:16}"
        + "".join(accuracy_cell(settings.get(s)) for s in metrics.SETTINGS)
        for source, settings in report["by_source"].items()
    ]
    lines += [
        "",
        f"question quality, over the {report['n_questions']} questions asked where a reference "
        "exists:",
        f"  ROUGE-L {fmt_decimal(report['rouge_l'])}   embed-sim {fmt_decimal(report['embed_sim'])}"
        f"   one question {fmt_percent(report['one_question_share'])}",
        "",
        f"seconds per example: {fmt_decimal(report['sec_per_example'], 3)}",
    ]
    return "\n".join(lines)


def accuracy_cell(figures: dict[str, Any] | None) -> str:
    """`  76.0% / 0.812 (n=123)`, right-aligned in 24 characters; blank when the setting is absent."""
    if figures is None:
        return " " * 24
    cell = f"{fmt_percent(figures['accuracy'])} / {fmt_decimal(figures['auc'])} (n={figures['n']})"
    return cell.rjust(24)


def fmt_percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def fmt_decimal(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _decide(
    clarifier: Clarifier,
    messages: list[Message],
    documents: list[Document] | None,
    generate_questions: bool,
) -> Decision:
    score = getattr(clarifier, "score", None)
    threshold = getattr(clarifier, "threshold", None)
    if generate_questions or not callable(score) or threshold is None:
        return clarifier.check(messages, documents)
    value = float(score(messages, documents))
    return Decision(value >= threshold, value, None, stage_of(documents))


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _minilm() -> metrics.Encoder:
    """all-MiniLM-L6-v2, the embedding model of the `embed_sim` figure (whatever the retrieval
    settings say, so that figures stay comparable)."""
    from askbetter.retrieval.embeddings import load_sentence_transformer

    return load_sentence_transformer(BUNDLED_EMBEDDING_MODEL)
