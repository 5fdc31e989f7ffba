#!/usr/bin/env bash
# Run `askbetter train` jobs side by side on a lent GPU machine, from the parts that
# `scripts/gpu_carry.py pack` made (docs/training-on-a-gpu.md).
#
#   bash scripts/gpu_train.sh receive
#       keep the parts this call carried (.gpu/part-K) in $WORK for the next call
#   bash scripts/gpu_train.sh train NAME "TRAIN OPTIONS" [NAME "TRAIN OPTIONS" ...]
#       receive, join and check the parts, install askbetter and the packed wheels into $WORK,
#       then run one `askbetter train` per NAME at once (each also gets --data-dir, --out-dir
#       and --device), each stopped after $JOB_SECONDS; pack each run into $OUT/NAME.tar:
#       its adapter (the last checkpoint if it was stopped) in bf16, train_config.json,
#       train_log.jsonl and its log. `scripts/gpu_carry.py unpack` makes run folders of them.
#       A NAME run again on the same warm machine resumes from its checkpoint (no part need
#       be carried again once all were received).
#
# Settings (environment): OUT (required for train), PACK (.gpu), WORK (/tmp/askbetter-gpu),
# PYTHON (python3), DEVICE (cuda), JOB_SECONDS (450: a device call's 600-s limit less the 150 s
# allowed to install, join and pack, docs/training-on-a-gpu.md).
set -euo pipefail
PACK=${PACK:-.gpu}
WORK=${WORK:-/tmp/askbetter-gpu}
PYTHON=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}
JOB_SECONDS=${JOB_SECONDS:-450}

receive() {
    mkdir -p "$WORK/parts"
    compgen -G "$PACK/part-*/*" >/dev/null \
        || { echo "no parts under $PACK: carry $PACK/part-K" >&2; return 2; }
    cp "$PACK"/part-*/* "$WORK/parts/"  # the part and the manifest each part folder holds
    echo "held: $(ls "$WORK/parts" | tr '\n' ' ')"
}

join_and_install() {
    rm -rf "$WORK/wheels" "$WORK/data"
    "$PYTHON" scripts/gpu_carry.py join "$WORK/parts" "$WORK"
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-build-isolation \
        --upgrade --target "$WORK/site" "$WORK"/wheels/*.whl .
}

pack_run() {  # NAME EXIT: the adapter (the last checkpoint unless the job ended well) in bf16,
              # its records and log, in $OUT/NAME.tar
    local name=$1 run="$WORK/runs/$1" from=adapter
    [ "$2" = 0 ] || from=checkpoint
    rm -rf "$WORK/back/$name" && mkdir -p "$WORK/back/$name"
    PYTHONPATH="$WORK/site" "$PYTHON" scripts/gpu_carry.py bf16 "$run/$from" "$WORK/back/$name"
    cp "$run"/train_config.json "$run"/train_log.jsonl "$WORK/back/$name/" 2>/dev/null || true
    cp "$WORK/logs/$name.log" "$WORK/back/$name/train.log"
    tar -cf "$OUT/$name.tar" -C "$WORK/back" "$name"
}

train() {
    : "${OUT:?set OUT to the folder whose files come back}"
    [ $# -ge 2 ] && [ $(($# % 2)) = 0 ] || { echo "usage: $0 train NAME OPTIONS [NAME OPTIONS ...]" >&2; exit 2; }
    # parts carried now, or all of them received by earlier calls on this warm machine
    receive 2>/dev/null || [ -f "$WORK/parts/manifest.json" ] \
        || { echo "no parts carried or held: carry $PACK/part-K" >&2; exit 2; }
    join_and_install
    mkdir -p "$WORK/logs" "$WORK/runs"
    local names=() pids=()
    while [ $# -gt 0 ]; do
        local name=$1 options=$2
        shift 2
        # the installed console script, not `-m askbetter.cli`: from the repository root, -m
        # would import the source folder askbetter/, which lacks the subpackages pip maps into it
        # shellcheck disable=SC2086  # the options are meant to split into words
        PYTHONPATH="$WORK/site" HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false \
            ASKBETTER_CACHE_DIR="$WORK/cache" PYTHONUNBUFFERED=1 \
            timeout "$JOB_SECONDS" "$PYTHON" "$WORK/site/bin/askbetter" train --data-dir "$WORK/data" \
            --out-dir "$WORK/runs/$name" --device "$DEVICE" $options >"$WORK/logs/$name.log" 2>&1 &
        names+=("$name") pids+=($!)
    done
    local i rc status=0
    for i in "${!names[@]}"; do
        rc=0; wait "${pids[$i]}" || rc=$?
        echo "${names[$i]}: exit $rc; $(tr '\r' '\n' <"$WORK/logs/${names[$i]}.log" | grep -v '^\s*$' | tail -n 1)"
        [ "$rc" = 0 ] || status=1
        pack_run "${names[$i]}" "$rc"
    done
    return "$status"
}

case "${1:-}" in
    receive) receive || exit 2 ;;
    train) shift; train "$@" ;;
    *) echo "usage: $0 receive | train NAME OPTIONS [NAME OPTIONS ...]" >&2; exit 2 ;;
esac
