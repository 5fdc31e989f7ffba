"""Pick an adapter's decision threshold on labelled examples and store it with the adapter.

`askbetter train` does this on dev at the end of a run. `askbetter calibrate FILE.jsonl --adapter
PATH` does it again for an existing adapter: after a run that stopped before its threshold was
picked, on another device or dtype (the scores shift a little), or on a user's own labelled data.
The threshold maximises accuracy (`metrics.pick_threshold`); the examples and the result are
recorded under `calibration` in the adapter's `askbetter_clarifier.json`, with the threshold it
replaces (`previous_threshold`). Examples of one label only are refused (no threshold lies between
them) and fewer than `FEW_EXAMPLES` bring a warning. With `--predictions`,
the per-example scores and the decisions at the new threshold are written as `askbetter eval
--predictions` writes them, so that dev needs scoring once per adapter; they move in with the
threshold (`askbetter.text.write_together`): a stop leaves the last run's pair or this one's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from tqdm import tqdm

from askbetter.clarifier.examples import Example, check_both_labels, check_documents, needs_clarification
from askbetter.clarifier.local import CLARIFIER_CONFIG, adapter_config, write_clarifier_config
from askbetter.clarifier.metrics import classification, pick_threshold
from askbetter.settings import Settings
from askbetter.text import write_together

log = logging.getLogger(__name__)

FEW_EXAMPLES = 200  # fewer: `calibrate` warns that the threshold is noisy


def threshold_on(
    examples: Sequence[Example],
    score: Callable[[list, list | None], float],
    *,
    progress: bool = True,
) -> dict[str, Any]:
    """Score every example (`post` with its documents, `pre` without) and return the threshold
    that maximises accuracy, with the accuracy and AUC it gives on these examples."""
    if not examples:
        raise ValueError("calibration needs at least one labelled example")
    labels = [needs_clarification(ex) for ex in examples]
    scores = [
        float(score(ex["messages"], check_documents(ex)))
        for ex in tqdm(examples, desc="calibrate", unit="ex", disable=not progress)
    ]
    return threshold_for(labels, scores)


def threshold_for(labels: Sequence[bool], scores: Sequence[float]) -> dict[str, Any]:
    """The accuracy-maximising threshold for these scores, with the accuracy and AUC it gives."""
    threshold = pick_threshold(labels, scores)
    figures = classification(labels, [s >= threshold for s in scores], scores)
    return {"threshold": threshold, "n": len(labels), "accuracy": figures["accuracy"],
            "auc": figures["auc"]}


def store_threshold(adapter: Path, record: dict[str, Any],
                    together: Mapping[Path, Callable[[Path], object]] | None = None) -> dict[str, Any]:
    """Write `record["threshold"]` into the adapter's clarifier config, keeping its other fields,
    and `record` under `calibration` with the threshold it replaces (`previous_threshold`, None
    when there was none); returns the record as stored. `together`: other files' writers, as
    `askbetter.text.write_together` takes them, whose files move in with the config.

    After `askbetter train` it is None by design: the run writes the adapter's config anew, and
    the threshold of an adapter it continued (`--init-adapter`) was picked on that adapter's
    scores, not this one's, so it is no earlier threshold of these weights (that adapter's
    training record is kept under `training.continued_from`)."""
    config = adapter_config(adapter)
    stored = {**record, "previous_threshold": config.get("threshold")}
    write_config = partial(write_clarifier_config,
                           config={**config, "threshold": record["threshold"], "calibration": stored})
    write_together({**(together or {}), adapter / CLARIFIER_CONFIG: write_config}, "the new threshold is stored")
    return stored


def run_calibrate(path: Path, *, adapter: str, limit: int | None = None,
                  settings: Settings | None = None, predictions_out: Path | None = None) -> dict[str, Any]:
    """`askbetter calibrate FILE.jsonl --adapter PATH [--limit N] [--predictions OUT.jsonl]`:
    score the examples with the adapter, store the accuracy-maximising threshold with it (and
    write the predictions at that threshold, together: `store_threshold`), and return the record."""
    from askbetter.clarifier.assets import require_adapter
    from askbetter.clarifier.evaluate import (
        load_examples,
        local_clarifier,
        predict,
        resolve_settings,
        write_predictions,
    )

    folder = require_adapter(adapter, "calibrate")
    examples = load_examples(path, limit)
    check_both_labels(examples, "the stored threshold is kept")
    if len(examples) < FEW_EXAMPLES:
        log.warning("A threshold picked on %d examples is noisy: a few hundred or more are better",
                    len(examples))
    settings = resolve_settings(settings, None)
    clarifier = local_clarifier(settings, adapter=str(folder), prompt_style=None)
    predictions = predict(examples, clarifier, generate_questions=False, desc="calibrate")
    picked = threshold_for([p.label for p in predictions], [p.score for p in predictions])
    record = {"file": str(path), **picked, "device": settings.device, "dtype": settings.dtype}
    decided = [replace(p, decision=p.score >= record["threshold"]) for p in predictions]
    # together: a stop leaves the last run's threshold and predictions or this one's, never this
    # run's predictions beside the last run's threshold
    together = {} if predictions_out is None else {
        predictions_out: partial(write_predictions, predictions=decided)}
    return store_threshold(folder, record, together)
