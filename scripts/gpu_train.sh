#!/usr/bin/env bash
# Run `askbetter train` jobs side by side on a lent GPU machine, from the parts that
# scripts/gpu_pack.py made (README, "Training on a lent GPU").
#
#   bash scripts/gpu_train.sh receive
#       keep the parts this call carried (.gpu/part-K) in $WORK for the next call
#   bash scripts/gpu_train.sh train NAME "TRAIN OPTIONS" [NAME "TRAIN OPTIONS" ...]
#       receive, join and check the parts, install askbetter and the packed wheels into $WORK,
#       then run one `askbetter train` per NAME at once (each also gets --data-dir, --out-dir
#       and --device), each stopped after $JOB_SECONDS; pack each run into $OUT/NAME.tar:
#       its adapter (the last checkpoint if it was stopped) in bf16, train_config.json,
#       train_log.jsonl and its log. scripts/gpu_unpack.py turns the tars into run folders.
#
# Settings (environment): OUT (required for train), PACK (.gpu), WORK (/tmp/askbetter-gpu),
# PYTHON (python3), DEVICE (cuda), JOB_SECONDS (480).
set -euo pipefail
PACK=${PACK:-.gpu}
WORK=${WORK:-/tmp/askbetter-gpu}
PYTHON=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}
JOB_SECONDS=${JOB_SECONDS:-480}

receive() {
    mkdir -p "$WORK/parts"
    local found=0
    for part in "$PACK"/part-*/askbetter-gpu.tar.*; do
        [ -e "$part" ] || continue
        cp "$part" "$PACK/$(basename "$(dirname "$part")")/manifest.json" "$WORK/parts/"
        found=1
    done
    [ "$found" = 1 ] || { echo "no parts under $PACK: carry $PACK/part-K" >&2; exit 2; }
    echo "parts held: $(cd "$WORK/parts" && ls askbetter-gpu.tar.* | tr '\n' ' ')"
}

join_and_install() {
    "$PYTHON" - "$WORK" <<'EOF'
import hashlib, json, lzma, sys, tarfile
from pathlib import Path
work = Path(sys.argv[1])
manifest = json.loads((work / "parts" / "manifest.json").read_text())
parts = [work / "parts" / f"{manifest['blob']}.{k}" for k in range(1, manifest["parts"] + 1)]
missing = [p.name for p in parts if not p.is_file()]
if missing:
    sys.exit(f"parts missing: {' '.join(missing)} (run `receive` with each part carried first)")
blob = b"".join(p.read_bytes() for p in parts)
if hashlib.sha256(blob).hexdigest() != manifest["sha256"]:
    sys.exit("the joined parts do not match the manifest's SHA-256: pack again")
(work / manifest["blob"]).write_bytes(blob)
with tarfile.open(work / manifest["blob"]) as tar:
    tar.extractall(work / "pack", filter="data")
(work / "data").mkdir(exist_ok=True)
for xz in (work / "pack" / "data").glob("*.xz"):
    (work / "data" / xz.stem).write_bytes(lzma.decompress(xz.read_bytes()))
EOF
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-build-isolation \
        --upgrade --target "$WORK/site" "$WORK"/pack/wheels/*.whl .
}

pack_run() {  # NAME: the adapter (or last checkpoint) in bf16, its records and log, in $OUT/NAME.tar
    local name=$1 run="$WORK/runs/$1" from=adapter
    [ -f "$run/adapter/adapter_model.safetensors" ] || from=checkpoint
    mkdir -p "$WORK/back/$name"
    if [ -f "$run/$from/adapter_model.safetensors" ]; then
        cp "$run/$from"/{adapter_config.json,askbetter_clarifier.json} "$WORK/back/$name/"
        "$PYTHON" - "$run/$from/adapter_model.safetensors" "$WORK/back/$name/adapter_model.safetensors" <<'EOF'
import sys, torch
from safetensors.torch import load_file, save_file
save_file({k: v.to(torch.bfloat16) for k, v in load_file(sys.argv[1]).items()}, sys.argv[2],
          metadata={"format": "pt"})
EOF
    fi
    cp "$run"/train_config.json "$run"/train_log.jsonl "$WORK/back/$name/" 2>/dev/null || true
    cp "$WORK/logs/$name.log" "$WORK/back/$name/train.log"
    echo "from: $from" > "$WORK/back/$name/FROM"
    tar -cf "$OUT/$name.tar" -C "$WORK/back" "$name"
}

train() {
    : "${OUT:?set OUT to the folder whose files come back}"
    [ $# -ge 2 ] && [ $(($# % 2)) = 0 ] || { echo "usage: $0 train NAME OPTIONS [NAME OPTIONS ...]" >&2; exit 2; }
    receive
    join_and_install
    mkdir -p "$WORK/logs" "$WORK/runs"
    local names=() pids=()
    while [ $# -gt 0 ]; do
        local name=$1 options=$2
        shift 2
        # shellcheck disable=SC2086  # the options are meant to split into words
        PYTHONPATH="$WORK/site" HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false \
            ASKBETTER_CACHE_DIR="$WORK/cache" PYTHONUNBUFFERED=1 \
            timeout "$JOB_SECONDS" "$PYTHON" -m askbetter.cli train --data-dir "$WORK/data" \
            --out-dir "$WORK/runs/$name" --device "$DEVICE" $options >"$WORK/logs/$name.log" 2>&1 &
        names+=("$name") pids+=($!)
    done
    local i rc status=0
    for i in "${!names[@]}"; do
        rc=0; wait "${pids[$i]}" || rc=$?
        echo "${names[$i]}: exit $rc; $(tr '\r' '\n' <"$WORK/logs/${names[$i]}.log" | grep -v '^\s*$' | tail -n 1)"
        [ "$rc" = 0 ] || status=1
        pack_run "${names[$i]}"
    done
    return "$status"
}

case "${1:-}" in
    receive) receive ;;
    train) shift; train "$@" ;;
    *) echo "usage: $0 receive | train NAME OPTIONS [NAME OPTIONS ...]" >&2; exit 2 ;;
esac
