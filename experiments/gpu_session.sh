#!/usr/bin/env bash
# One GPU session (device tool: 30 device-minutes, 10 minutes per command, the machine kept
# only 30 s between calls and 30 min in all) as a few full calls. Run from the repo root on
# the device machine, with `.whl` carried (../shared/gpu/wheels.sh fetches grain and friends):
#
#   bash experiments/gpu_session.sh bench            # ~5 min: train/data/fit benchmarks -> $OUT
#   bash experiments/gpu_session.sh train 1500 2000,1200,2000,1200,1600
#       # starts phases 1-5 in the background (setsid: it outlives the call while the machine
#       # stays held), with --max_seconds=1500, then watches it for 540 s
#   bash experiments/gpu_session.sh watch            # the next call(s), back to back: 540 s more
#   bash experiments/gpu_session.sh export           # bf16 weights + logs -> $OUT (<= 8 files)
#   bash experiments/gpu_session.sh infer [CKPT]     # Strogatz, `paper` preset, scipy vs jax fitter
#
# Training state never has to cross $OUT (Adam state for `small` is ~3x its params, more than
# $OUT carries): one training process runs for the whole lease, on the machine's disk, and
# only the exported weights come back. Calls must follow each other within the 30 s the
# machine stays warm; a lost machine loses the run, not what an earlier `export` brought back.
# MODEL (default small), RUN (default /tmp/lee_run) and WORKERS (default 8) override defaults;
# ALIGN_SCALE (default 1, Table 7) scales the align weight if phase 2 collapses (BUILD_NOTES).
set -uo pipefail

OUT=${OUT:-/tmp/lee_out}
RUN=${RUN:-/tmp/lee_run}
MODEL=${MODEL:-small}
WORKERS=${WORKERS:-8}
ALIGN_SCALE=${ALIGN_SCALE:-1}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"

setup() {
  if [ -d .whl ] && ! python3 -c "import grain" 2>/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site .whl/*.whl || { echo "wheel install failed" >&2; exit 1; }
  fi
  export PYTHONPATH=/tmp/site:$PWD
  python3 -c "import jax, lee_jax; print('jax', jax.__version__, jax.devices())" || exit 1
}

watch() {  # follow the background run for $1 seconds (or until it ends)
  local until=$(( $(date +%s) + $1 ))
  while [ "$(date +%s)" -lt "$until" ]; do
    if ! pgrep -f "lee_jax.train" >/dev/null; then echo "training process has ended"; break; fi
    sleep 15
  done
  tail -n 5 "$RUN/train.log"
  cp "$RUN/train.log" "$OUT/train.log" 2>/dev/null
  cp "$RUN/metrics.jsonl" "$OUT/metrics.jsonl" 2>/dev/null
  true
}

cmd=${1:-}
shift || true
case "$cmd" in
  bench)
    setup
    for m in small paper; do
      python3 experiments/bench_train.py --model=$m --batch_size=256 --attention=cudnn 2>&1 \
        | tee -a "$OUT/bench_train.log"
    done
    python3 experiments/bench_data.py --workers=0,8,15 2>&1 | tee "$OUT/bench_data.log"
    python3 experiments/bench_fit.py --n=256 2>&1 | tee "$OUT/bench_fit.log"
    ;;
  train)
    seconds=${1:?train SECONDS STEPS (five comma-separated step counts)}
    steps=${2:?train SECONDS STEPS (five comma-separated step counts)}
    setup
    mkdir -p "$RUN"
    setsid nohup python3 -m lee_jax.train --phase=all --model="$MODEL" --workdir="$RUN" \
      --steps="$steps" --max_seconds="$seconds" --workers="$WORKERS" --save_every=500 \
      --align_scale="$ALIGN_SCALE" \
      >"$RUN/train.log" 2>&1 < /dev/null &
    sleep 5
    watch 530
    ;;
  watch)
    watch "${1:-540}"
    ;;
  export)
    setup
    python3 -m lee_jax.weights --from "$RUN" --to "$OUT/weights" --dtype bfloat16 || exit 1
    cp "$RUN/train.log" "$RUN/metrics.jsonl" "$OUT/" 2>/dev/null
    ls -la "$OUT" "$OUT/weights"
    ;;
  infer)
    setup
    ckpt=${1:-lee_jax/weights}
    for f in scipy jax; do
      python3 experiments/bench_infer.py --checkpoint "$ckpt" --preset paper --fitter $f \
        --json "$OUT/infer_$f.json" 2>&1 | tee "$OUT/infer_$f.log"
    done
    ;;
  *)
    echo "usage: bash experiments/gpu_session.sh bench | train SECONDS STEPS | watch [SECONDS] | export | infer [CKPT]" >&2
    exit 2
    ;;
esac
