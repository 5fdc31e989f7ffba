#!/usr/bin/env bash
# Judge a trained adapter (or a training checkpoint) against the shipped one, by the ship rule of
# clarifier/adapter/TRAINING_LOG.md ("Session 55"): on dev ahead on accuracy and AUC, the F1-clarify
# gap's 95% interval reaching up to zero or above (dev.paired.txt), and off our sources the AUC
# gap's too (offdomain.compare.txt). In order: its threshold picked on dev (DEV_FILE), dev's
# figures beside the shipped adapter's, the greeting flips on dev's first 600, the corpus probe,
# and every off-domain probe with the held-out written turns (clarifier/written/heldout/) beside
# the shipped adapter (`scripts/paired_auc.py`). The test split is scored only with --test, once
# a candidate has passed on dev (choosing on test would make its figures no longer held out).
#
#   bash scripts/judge_adapter.sh runs/full/checkpoint runs/full/judge          # dev and probes
#   bash scripts/judge_adapter.sh runs/full/checkpoint runs/full/judge --test   # then the test split
#
# DEV_FILE names the dev file the threshold is picked on (default data/dev.unseen.jsonl;
# another build's, e.g. data/next/dev.unseen.jsonl for run s49, see the TRAINING_LOG),
# SHIPPED_DEV_PREDICTIONS the shipped adapter's `--predictions` on that file (required with
# DEV_FILE; by default runs/eval/dev.unseen.shipped.pred.jsonl, which the script makes, and makes
# again when dev.unseen or the shipped weights are newer), both relative to the repository; `make
# data` writes the data files. An OUT_DIR is judged on one dev file (recorded in OUT_DIR/dev_file):
# judge on another into another OUT_DIR.
# Outputs in OUT_DIR: the adapter's copy with its threshold, calibrate.log, dev.pred.jsonl,
# dev.compare.md, dev.paired.txt, greet600.flips.txt, corpus.log/.json, offdomain.compare.txt,
# offdomain.cells.txt, with --test
# test.log/.json. A scoring whose output is there is not run again (so --test after a first run
# scores the test only).
# Without --test, about 50 minutes on this 2-core CPU in float32 (45 more when the shipped
# adapter's dev and off-domain predictions are made again, as after a new adapter ships). A
# SHIPPED_DEV_PREDICTIONS given must be the adapter in clarifier/adapter's.
set -euo pipefail

if [[ $# -lt 2 || $# -gt 3 || ( $# -eq 3 && $3 != --test ) ]]; then
    echo "usage: bash scripts/judge_adapter.sh ADAPTER_OR_CHECKPOINT OUT_DIR [--test]" >&2
    exit 2
fi
source_dir=$(realpath "$1") out=$(realpath -m "$2") test=${3:-}
cd "$(dirname "$0")/.."  # the repository: .venv, data/, runs/ are read from there
if [[ -n ${DEV_FILE:-} && -z ${SHIPPED_DEV_PREDICTIONS:-} ]]; then
    echo "DEV_FILE=$DEV_FILE needs SHIPPED_DEV_PREDICTIONS: the shipped adapter's --predictions on that file" >&2
    exit 2
fi
shipped=${SHIPPED_DEV_PREDICTIONS:-runs/eval/dev.unseen.shipped.pred.jsonl} dev=${DEV_FILE:-data/dev.unseen.jsonl}
shipped_weights=clarifier/adapter/adapter_model.safetensors
bin=.venv/bin
export HF_HUB_OFFLINE=1

# the shipped adapter's predictions on $2 into $1, made again when $2 or the shipped weights are newer
shipped_predictions() {
    [[ -f $1 && ! $2 -nt $1 && ! $shipped_weights -nt $1 ]] ||
        "$bin/askbetter" eval "$2" --adapter bundled --no-questions --predictions "$1" > /dev/null
}

mkdir -p "$out"
if [[ -f $out/dev_file && $(cat "$out/dev_file") != "$dev" ]]; then  # its threshold and scores are another file's
    echo "$out was judged on $(cat "$out/dev_file"), not $dev: judge into another OUT_DIR" >&2
    exit 2
fi
echo "$dev" > "$out/dev_file"
if [[ ! -d $out/adapter ]]; then  # a copy: calibrate writes its threshold into the adapter's config
    rm -rf "$out/adapter.partial"  # an interrupted copy's
    cp -r "$source_dir" "$out/adapter.partial"
    rm -f "$out/adapter.partial/trainer_state.pt"
    mv "$out/adapter.partial" "$out/adapter"
fi
if [[ ! -f $out/dev.pred.jsonl ]]; then
    "$bin/askbetter" calibrate "$dev" --adapter "$out/adapter" --predictions "$out/dev.pred.jsonl" \
        | tee "$out/calibrate.log"
fi
[[ -n ${SHIPPED_DEV_PREDICTIONS:-} ]] || shipped_predictions "$shipped" "$dev"
if [[ -f $shipped ]]; then
    "$bin/python" scripts/compare_predictions.py "shipped=$shipped" "candidate=$out/dev.pred.jsonl" | tee "$out/dev.compare.md"
    "$bin/python" scripts/paired_auc.py "$shipped" "$out/dev.pred.jsonl" | tee "$out/dev.paired.txt"
else
    echo "no $shipped: score the shipped adapter on $dev with --predictions to compare" >&2
fi

# greetings before the first 600 dev conversations: how many decisions change (the greeted copy of
# another DEV_FILE is written beside it)
greet=runs/eval/dev.greet.jsonl
[[ $dev == data/dev.unseen.jsonl ]] || greet=${dev%.jsonl}.greet.jsonl
[[ -f $greet && $greet -nt $dev ]] || "$bin/python" scripts/smalltalk_prefix.py write "$dev" "$greet"
head -600 "$out/dev.pred.jsonl" > "$out/dev600.pred.jsonl"
if [[ ! -f $out/greet600.pred.jsonl ]]; then
    "$bin/askbetter" eval "$greet" --adapter "$out/adapter" --no-questions --limit 600 \
        --predictions "$out/greet600.pred.jsonl" > "$out/greet600.log"
fi
"$bin/python" scripts/smalltalk_prefix.py flips "$out/dev600.pred.jsonl" "$out/greet600.pred.jsonl" | tee "$out/greet600.flips.txt"

# the hand-labelled probe over the bundled corpus (off every training source)
[[ -f runs/eval/corpus_probe.jsonl ]] || "$bin/python" scripts/corpus_probe.py runs/eval/corpus_probe.jsonl
if [[ ! -f $out/corpus.json ]]; then
    "$bin/askbetter" eval runs/eval/corpus_probe.jsonl --adapter "$out/adapter" --no-questions \
        --json "$out/corpus.json" --predictions "$out/corpus.pred.jsonl" | tee "$out/corpus.log"
fi
head -5 "$out/corpus.log"  # the report (tee keeps stdout; the progress bar goes to stderr)

# every off-domain probe together (the corpus probe, scripts/sense_probe.jsonl,
# scripts/domain_probe.jsonl, scripts/domain_probe_2.jsonl and scripts/domain_probe_3.jsonl) and
# the written turns no build holds (clarifier/written/heldout/): the candidate's AUC, accuracy and
# F1 against the shipped adapter's on the same examples, with paired-bootstrap intervals (each
# probe alone is a few dozen to a hundred and twenty examples)
off=runs/eval/offdomain.jsonl off_shipped=runs/eval/offdomain.shipped.pred.jsonl
cat runs/eval/corpus_probe.jsonl scripts/sense_probe.jsonl scripts/domain_probe.jsonl \
    scripts/domain_probe_2.jsonl scripts/domain_probe_3.jsonl clarifier/written/heldout/*.jsonl > "$off.new"
if cmp -s "$off.new" "$off"; then rm "$off.new"; else mv "$off.new" "$off"; fi  # a changed probe is newer
shipped_predictions "$off_shipped" "$off"
if [[ ! -f $out/offdomain.pred.jsonl || $off -nt $out/offdomain.pred.jsonl ]]; then
    "$bin/askbetter" eval "$off" --adapter "$out/adapter" --no-questions \
        --predictions "$out/offdomain.pred.jsonl" > "$out/offdomain.log"
fi
"$bin/python" scripts/paired_auc.py "$off_shipped" "$out/offdomain.pred.jsonl" | tee "$out/offdomain.compare.txt"
# both adapters per setting, turn alone or after a dialog (the probes' weak cells)
"$bin/python" scripts/cell_figures.py "$off" "$off_shipped" "$out/offdomain.pred.jsonl" | tee "$out/offdomain.cells.txt"

if [[ $test == --test && ! -f $out/test.json ]]; then
    "$bin/askbetter" eval data/test.unseen.jsonl --adapter "$out/adapter" --no-questions \
        --json "$out/test.json" --predictions "$out/test.pred.jsonl" | tee "$out/test.log"
fi
