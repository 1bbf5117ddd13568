#!/usr/bin/env bash
# One GPU session (device tool: 15 device-minutes since 2026-11-26, 30 before, machine start
# included; 10 minutes per command; the machine kept only 30 s between calls) as a few full
# calls. Run from the repo root on the device machine, with `.whl` carried
# (`../shared/gpu/wheels.sh grain==0.2.18 array-record cloudpickle portpicker threadpoolctl`
# fetches grain and friends, and threadpoolctl for L-BFGS-B's one BLAS thread; the tree with
# them is over a call's 64 MiB unless `bash experiments/device_tree.sh hide` leaves the
# recorded results behind first). A 15-minute lease is `bench 460` and `chunk PHASE 270`
# (BUILD_NOTES "GPU session plan"); `go`/`train`/`watch` need a 30-minute one.
#
#   bash experiments/gpu_session.sh go [MINUTES]     # a 30-min lease in 3 calls: benchmarks,
#       # then phases 1-5 in the background, sized from the measured step rate to end MINUTES
#       # (default 23) after this call began; then `watch` twice more. While it trains, each
#       # finished phase's export searches Strogatz (`fast`, 2 shards, evaluate_exports), so
#       # the lease itself shows whether a phase helps the search. Every watch ends by bringing
#       # back logs.tgz (logs, benchmarks, search results) and the latest phase's params in
#       # bf16 (collect; phase 1's too unless INIT_FROM gave them). With EVAL=1, leave ~5 min
#       # after training for phase 5's search: `go 20`.
#       # (2026-11-25: 5.5 min of benchmarks; phase 1 ran at ~15 steps/s, pipeline-bound; kill a
#       # diverging run with `pkill -f "phase=al[l]"`: a pattern that does not match itself)
#   bash experiments/gpu_session.sh bench [SECONDS]  # the benchmarks the issues need, most needed
#       # first, within SECONDS (default 540; `bench 460` leaves a 15-minute lease room for a
#       # `chunk 3 300`) -> $OUT (since the seventh lease: the `paper` step with cuBLASLt's
#       # epilogues and its fusion sources, the same without them, then with them and cuDNN's
#       # LayerNorm)
#   bash experiments/gpu_session.sh chunk PHASE [SECONDS]  # one phase in one call, from carried
#       # bf16 params (.ckpt_work/params) and compilation cache: training across 15-min leases
#   bash experiments/gpu_session.sh train 1500 2000,1200,2000,1200,1600
#       # starts phases 1-5 in the background (setsid: it outlives the call while the machine
#       # stays held), with --max_seconds=1500, then watches it for 540 s
#   bash experiments/gpu_session.sh watch            # the next call(s), back to back: 540 s more
#   bash experiments/gpu_session.sh export           # bf16 weights + logs -> $OUT (<= 8 files)
#   bash experiments/gpu_session.sh search [SECONDS] # the `paper` preset on the 14 Strogatz sets,
#       # resumable across calls (cells kept in .ckpt_work/paper_search) -> $OUT
#   bash experiments/gpu_session.sh infer [CKPT]     # Strogatz, `paper` preset, scipy vs jax fitter
#                                                    # (FITTERS=jax OVERLAP=1: SymPy overlapped)
#
# Training state never has to cross $OUT (Adam state for `small` is ~3x its params, more than
# $OUT carries): one training process runs for the whole lease, on the machine's disk, and
# only the exported weights come back. Calls must follow each other within the 30 s the
# machine stays warm; a lost machine loses the run, not what an earlier `export` brought back.
# MODEL (default small), BATCH (default 256), RUN (default /tmp/lee_run) and WORKERS (default 12) override defaults;
# ALIGN_SCALE (default 1, Table 7) scales the align weight if phase 2 collapses (BUILD_NOTES).
set -uo pipefail

OUT=${OUT:-/tmp/lee_out}
RUN=${RUN:-/tmp/lee_run}
MODEL=${MODEL:-small}
WORKERS=${WORKERS:-12}
ALIGN_SCALE=${ALIGN_SCALE:-1}
BATCH=${BATCH:-256}
INIT_FROM=${INIT_FROM:-}        # go: phase 1 starts from these params (e.g. lee_jax/weights, run E)
ALIGN_DIRECTION=${ALIGN_DIRECTION:-q_to_p}  # go: Eq. 8 (q_to_p) or the p_to_q variant
LR=${LR:-3e-4}  # chunk: peak learning rate (3e-4, the default; 3e-5 kept E's held-out
               # reconstruction in a 200-step CPU phase 2 where 3e-4 lost 0.06, but p barely moved)
PHASE4_EXPR=${PHASE4_EXPR:-0}  # lambda_expr in phase 4 (Table 7: 0; 1 kept z off the prior on the CPU)
RNG_IMPL=${RNG_IMPL:-auto}  # go/chunk: the train step's PRNG (auto: rbg, XLA's RngBitGenerator, on a GPU)
ALIGN_TARGET=${ALIGN_TARGET:-ema}  # go: Eq. 8's p from an EMA of the weights, or online
STEPS=${STEPS:-}  # go: five step counts instead of sizing them (e.g. 1,2000,3000,2000,2500
                  # after INIT_FROM=lee_jax/weights: phase 1 is already trained)
PAPER_BENCH=${PAPER_BENCH:-1}  # go: also benchmark the `paper` model (0 for a CPU smoke test)
WATCH_END=${WATCH_END:-540}    # go: seconds after the call began at which it stops watching
DTYPE=${DTYPE:-bfloat16}       # go: compute dtype (float32 for a CPU smoke test)
EVAL=${EVAL:-1}                # watch: search Strogatz with each finished phase (evaluate_exports)
EVAL_ARGS=${EVAL_ARGS---latent_noise=3}  # srbench.py flags for it: latent noise, which a
                               # good autoencoder needs to explore (BUILD_NOTES); a smoke test
                               # adds --rounds=1 --iters=5 --datasets=...
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"

setup() {
  export PYTHONPATH=/tmp/site:$PWD
  if [ -d .whl ] && ! python3 -c "import grain" 2>/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site .whl/*.whl || { echo "wheel install failed" >&2; exit 1; }
  fi
  python3 -c "import jax, lee_jax; print('jax', jax.__version__, jax.devices())" || exit 1
}

watch() {  # follow the background run for $1 seconds (or until it and its evaluations end)
  local until=$(( $(date +%s) + $1 ))
  while [ "$(date +%s)" -lt "$until" ]; do
    evaluate_exports
    if [ -f "$RUN/DONE" ] || ! pgrep -f "lee_jax.train" >/dev/null; then
      # training is over: wait only for the evaluations still running
      evals_running || { echo "training and evaluations have ended"; break; }
    fi
    sleep 10
  done
  tail -n 5 "$RUN/train.log"
  collect
}

evaluate_exports() {  # EVAL=1: Strogatz `fast` (eps 0, seed 0) on each finished phase's export,
  # beside the training (2 shards, GPU memory not preallocated), so a lease shows whether a
  # phase helps the search (phase 1 too: the same search on the same machine is the reference)
  [ "$EVAL" = 1 ] || return 0
  local src p s
  for src in $(ls -d "$RUN"/export_phase* 2>/dev/null | sort -V); do
    p=${src##*export_phase}
    [ -f "$src/meta.json" ] && [ ! -d "$RUN/eval_phase$p" ] || continue
    mkdir -p "$RUN/eval_phase$p"
    echo "evaluating phase $p's export (Strogatz, fast) in the background"
    for s in 0 1; do
      setsid nohup env XLA_PYTHON_CLIENT_PREALLOCATE=false python3 experiments/srbench.py \
        --group=strogatz --noise=0 --trials=1 --preset=fast --checkpoint="$src" \
        --out_dir="$RUN/eval_phase$p/s$s" --shard_index=$s --num_shards=2 $EVAL_ARGS \
        >"$RUN/eval_phase$p/s$s.log" 2>&1 < /dev/null &
      echo $! >>"$RUN/eval.pids"  # setsid, nohup and env exec: this is python's pid
    done
  done
}

evals_running() {
  local pid
  for pid in $(cat "$RUN/eval.pids" 2>/dev/null); do
    kill -0 "$pid" 2>/dev/null && return 0
  done
  return 1
}

collect() {  # every log and evaluation in one logs.tgz, and the latest phase's params in bf16
  # (<= 15 MiB a file; phase 1's too unless it came from INIT_FROM) -> $OUT: <= 7 files
  local latest src name p
  for p in "$RUN"/eval_phase*/; do  # one results.jsonl per phase from its shards
    [ -d "$p" ] && cat "$p"/s*/results.jsonl > "$p/results.jsonl" 2>/dev/null
  done
  (cd "$RUN" && tar czf "$OUT/logs.tgz" --ignore-failed-read train.log metrics.jsonl bench_*.log \
    eval_phase*/results.jsonl eval_phase*/s*.log 2>/dev/null)
  latest=$(ls -d "$RUN"/export_phase* 2>/dev/null | sort -V | tail -n 1)
  for src in $([ -n "$INIT_FROM" ] || echo "$RUN/export_phase1") $latest; do
    [ -f "$src/meta.json" ] || continue
    name=w_${src##*export_}
    # on the CPU: the training process holds the GPU. The export records the latent noise
    # its in-lease search used (EVAL_ARGS) as its search default, so it ships as measured.
    noise=$(echo "$EVAL_ARGS" | grep -oE -- '--latent_noise=[0-9.]+' | cut -d= -f2)
    [ -f "$RUN/$name/meta.json" ] || JAX_PLATFORMS=cpu python3 -m lee_jax.weights --from "$src" \
      --to "$RUN/$name" --dtype bfloat16 ${noise:+--latent_noise "$noise"}
    cp -r "$RUN/$name" "$OUT/"
  done
  for p in "$RUN"/eval_phase*/; do
    [ -s "$p/results.jsonl" ] || continue
    echo "== ${p%/} =="
    python3 experiments/srbench.py --summary_only --out_dir="$p" 2>/dev/null | tail -n 2
  done
  ls -la "$OUT" "$OUT"/w_* 2>/dev/null
  true
}

rate_of() {  # the last examples/s figure in a benchmark log ("N examples/s" or "examples/s=N")
  grep -oE '[0-9,]+ examples/s|examples/s=[0-9,]+' "$1" 2>/dev/null | tail -n 1 | tr -cd '0-9'
}

cmd=${1:-}
shift || true
case "$cmd" in
  bench)
    # [SECONDS] (default 540): the benchmarks in order of what the issues still need, each
    # started only while its usual cost (first number, seconds, cold compile included) fits
    # in what is left, and killed at the deadline: a 15-minute lease is one such call.
    deadline=$(( $(date +%s) + ${1:-540} ))
    setup
    step() {  # step EST MAX LOG CMD...: run CMD (tee'd to $OUT/LOG) for at most MAX seconds
      # if EST seconds remain before the deadline
      local est=$1 max=$2 log=$3 left; shift 3
      left=$(( deadline - $(date +%s) ))
      if [ "$left" -lt "$est" ]; then echo "skipped ($left s left, needs ~$est): $*"; return 1; fi
      echo "== $* ($left s left)" | tee -a "$OUT/$log"
      timeout $(( left < max ? left : max )) "$@" 2>&1 | tee -a "$OUT/$log"
    }
    # Measured on H200s (BUILD_NOTES "Second" to "Seventh GPU lease"): `small` phase 3
    # fused 6,530-7,818 ex/s, `paper` 31.1% MFU with threefry, 32.6-34.8% with rbg keys (the
    # card varies by ~7% between leases: compare on one card), one-hot tables no faster
    # (142.0 vs 141.5 ms, so off), the fitter on the host 11.4-13.8x, the `paper` search
    # 16.7 s per Strogatz set. Still open (issue 3, 40% MFU): the seventh lease's trace had
    # the FFN's GELU (4.2 ms x6) and its backward with the bias gradient (5.4 ms x6) as
    # separate passes over [512, 264, 3072]; cuBLASLt's epilogues can fuse bias + GELU into
    # the GEMM, and XLA uses them only with --xla_gpu_enable_cublaslt. So: the `paper` step
    # with it (profile + fusion sources), then without it on the same card, then with it and
    # cuDNN's LayerNorm kernels (XLA's LayerNorm backward fusions: 3.1 ms per step). `small`
    # is left out: its target (6,000 ex/s) is met, 7,818 in the seventh lease.
    step 190 200 bench_train.log env XLA_FLAGS=--xla_gpu_enable_cublaslt=true python3 \
      experiments/bench_train.py --model=paper --attention=cudnn --gflop=48750.6 \
      --profile_steps=3 --fusion_sources=6  # GFLOP/step: `--lower_only --attention=xla` on a CPU
    step 130 150 bench_train.log python3 experiments/bench_train.py --model=paper \
      --attention=cudnn --gflop=48750.6
    step 130 150 bench_train.log env \
      XLA_FLAGS="--xla_gpu_enable_cublaslt=true --xla_gpu_enable_cudnn_layer_norm=true" \
      python3 experiments/bench_train.py --model=paper --attention=cudnn --gflop=48750.6
    true
    ;;
  go)
    minutes=${1:-23}
    t0=$(date +%s)
    setup
    mkdir -p "$RUN"
    attention=auto
    python3 experiments/bench_train.py --model=$MODEL --batch_size=$BATCH --dtype=$DTYPE 2>&1 | tee "$RUN/bench_train.log"
    rate=$(rate_of "$RUN/bench_train.log")
    if [ -z "$rate" ]; then  # cuDNN attention failed here: XLA's attention for the run
      attention=xla
      python3 experiments/bench_train.py --model=$MODEL --batch_size=$BATCH --dtype=$DTYPE --attention=xla 2>&1 \
        | tee -a "$RUN/bench_train.log"
      rate=$(rate_of "$RUN/bench_train.log")
    fi
    [ -n "$rate" ] || { echo "no training step ran; not training" >&2; exit 1; }
    [ "$MODEL" = paper ] || [ "$PAPER_BENCH" = 0 ] || python3 experiments/bench_train.py --model=paper --batch_size=256 \
      --attention=$attention 2>&1 | tee -a "$RUN/bench_train.log"
    python3 experiments/bench_data.py --workers=0,$WORKERS --batches=30 2>&1 | tee "$RUN/bench_data.log"
    data_rate=$(rate_of "$RUN/bench_data.log")
    seconds=$(( t0 + minutes * 60 - $(date +%s) ))
    # Steps from the phase-3 rate (every loss), capped by the pipeline. Phases 1 and 4 run
    # fewer passes per step, so 0.85 of phase 3's cost on average (estimate); 300 s for four
    # compilations and five pipeline starts. Table 8's ratios 5:3:5:3:4.
    # With INIT_FROM, phase 1 is done: 1 step re-enters it and phases 2-5 share the time.
    steps=$(python3 -c "
r = min($rate, ${data_rate:-1e9}) / $BATCH
total = r * max($seconds - 300, 60) / 0.85
ratios = (0, 3, 5, 3, 4) if '$INIT_FROM' else (5, 3, 5, 3, 4)
print(','.join(str(max(1 if w == 0 else 50, int(total * w / sum(ratios)))) for w in ratios))") \
      || { echo "could not size the run" >&2; exit 1; }
    steps=${STEPS:-$steps}
    echo "step rate $rate ex/s, pipeline ${data_rate:-?} ex/s, $seconds s left: steps $steps, attention $attention"
    rm -f "$RUN/DONE"
    setsid nohup bash -c "python3 -m lee_jax.train --phase=all --model=$MODEL --workdir=$RUN --batch_size=$BATCH \
      --steps=$steps --max_seconds=$seconds --workers=$WORKERS --save_every=1000 \
      --log_every=100 --attention=$attention --align_scale=$ALIGN_SCALE --dtype=$DTYPE \
      --align_direction=$ALIGN_DIRECTION --align_target=$ALIGN_TARGET --rng_impl=$RNG_IMPL \
      --phase4_expr=$PHASE4_EXPR ${INIT_FROM:+--init_from=$INIT_FROM}; touch $RUN/DONE" \
      >"$RUN/train.log" 2>&1 < /dev/null &
    sleep 5
    watch $(( t0 + WATCH_END - $(date +%s) ))
    ;;
  chunk)
    # chunk PHASE [SECONDS]: one 15-minute lease's training, a phase at a time across leases.
    # Phase PHASE of $MODEL from the params in $CKPT (default .ckpt_work/params if there, else
    # lee_jax/weights; .ckpt_work/ is git-ignored: copy an earlier chunk's $OUT/w_phaseN there
    # as params/ and carry it), a fresh optimizer and a cosine schedule sized to end within
    # SECONDS (default 450) at RATE steps/s (default 24: phase 1 ran at 25.4 in the seventh
    # lease, 14 in the first; STEPS overrides; --anneal_by_deadline: a RATE set too high
    # still ends annealed, at the deadline),
    # then its bf16 export, the logs and the compilation cache (.ckpt_work/jaxcache.tgz in,
    # $OUT/jaxcache.tgz out: a later chunk on the same kind of card skips the ~60 s compile).
    # A second chunk on the same warm machine resumes $RUN's: give another variant its own RUN.
    # FIT_BENCH="--backend=cpu;--layout=lanes" (1: the three accelerator layouts): after the
    # export, those bench_fit runs with the GPU to themselves (their compiles warmed beside
    # training), each at most FIT_TIMEOUT seconds (default 75) -> $OUT/bench_fit.log.
    phase=${1:?chunk PHASE [SECONDS]}
    seconds=${2:-450}
    setup
    ckpt=${CKPT:-$( [ -f .ckpt_work/params/meta.json ] && echo .ckpt_work/params || echo lee_jax/weights)}
    export LEE_JAX_COMPILATION_CACHE=/tmp/lee_jaxcache
    mkdir -p "$RUN" "$LEE_JAX_COMPILATION_CACHE"
    [ -f .ckpt_work/jaxcache.tgz ] && tar xzf .ckpt_work/jaxcache.tgz -C "$LEE_JAX_COMPILATION_CACHE"
    steps=${STEPS:-$(( (seconds - 90) * ${RATE:-24} ))}  # ~90 s: compile and pipeline start
    echo "phase $phase from $ckpt: $steps steps, at most $seconds s"
    # FIT_BENCH: bench_fit runs timed after training, ';'-separated flag sets after
    # --n=256 --rows=500 (1: the three accelerator layouts, the fourth lease's)
    fit_bench=(--n=256 --rows=500)
    fit_sets=${FIT_BENCH:-}
    [ "$fit_sets" = 1 ] && fit_sets=" ;--layout=lanes;--unroll=0"
    IFS=';' read -r -a fit_args <<<"$fit_sets"
    if [ -n "$fit_sets" ]; then
      # their cold compiles (once past 55 s each on a GPU) while the GPU trains, compile
      # only (the fourth lease ran them whole there: 14 steps/s against 20.5 alone), into
      # their own cache, so the timed runs after training only load them
      ( for a in "${fit_args[@]}"; do
          LEE_JAX_COMPILATION_CACHE=/tmp/lee_fitcache XLA_PYTHON_CLIENT_PREALLOCATE=false \
            timeout "$seconds" python3 experiments/bench_fit.py "${fit_bench[@]}" $a --compile_only
        done >"$RUN/bench_fit_warm.log" 2>&1 ) &
    fi
    python3 -m lee_jax.train --phase="$phase" --model="$MODEL" --workdir="$RUN" --init=scratch \
      --init_from="$ckpt" --batch_size="$BATCH" --steps="$steps" --max_seconds="$seconds" --lr="$LR" \
      --workers="$WORKERS" --data_buffer="${DATA_BUFFER:-1}" --warmup=200 --log_every=100 \
      --save_every=100000 --dtype="$DTYPE" --align_scale="$ALIGN_SCALE" --anneal_by_deadline \
      --align_direction="$ALIGN_DIRECTION" --rng_impl="$RNG_IMPL" --phase4_expr="$PHASE4_EXPR" \
      --align_target="$ALIGN_TARGET" 2>&1 | tee "$RUN/train.log" "$OUT/train.log"
    status=${PIPESTATUS[0]}
    # 130: stopped by a signal after saving (its params so far in export_partial/)
    if [ "$status" != 0 ] && [ "$status" != 130 ]; then
      echo "training failed (exit $status): nothing exported" >&2; exit 1
    fi
    # this phase's own export: export_phaseN when it finished, export_partial/ when
    # --max_seconds or a signal stopped it, whichever is newer (export/ may be another
    # phase's, from an earlier chunk on the same RUN)
    src=$(ls -t "$RUN/export_phase$phase/meta.json" "$RUN/export_partial/meta.json" \
          2>/dev/null | head -1)
    [ -n "$src" ] || { echo "phase $phase exported nothing" >&2; exit 1; }
    JAX_PLATFORMS=cpu python3 -m lee_jax.weights --from "$(dirname "$src")" \
      --to "$OUT/w_phase$phase" --dtype bfloat16 || exit 1
    cp "$RUN/metrics.jsonl" "$OUT/" 2>/dev/null
    tar czf "$OUT/jaxcache.tgz" -C "$LEE_JAX_COMPILATION_CACHE" .
    if [ -n "$fit_sets" ]; then
      pkill -f "bench_fit.p[y]"; wait
      for a in "${fit_args[@]}"; do
        echo "== bench_fit ${fit_bench[*]} $a (alone)"
        LEE_JAX_COMPILATION_CACHE=/tmp/lee_fitcache timeout "${FIT_TIMEOUT:-75}" python3 experiments/bench_fit.py \
          "${fit_bench[@]}" $a
      done 2>&1 | tee "$OUT/bench_fit.log"
      { echo "== the warm-up runs, beside training"; cat "$RUN/bench_fit_warm.log"; } >>"$OUT/bench_fit.log"
    fi
    ls -la "$OUT" "$OUT/w_phase$phase"
    ;;
  train)
    seconds=${1:?train SECONDS STEPS (five comma-separated step counts)}
    steps=${2:?train SECONDS STEPS (five comma-separated step counts)}
    setup
    mkdir -p "$RUN"
    setsid nohup python3 -m lee_jax.train --phase=all --model="$MODEL" --workdir="$RUN" \
      --steps="$steps" --max_seconds="$seconds" --workers="$WORKERS" --save_every=500 \
      --align_scale="$ALIGN_SCALE" --phase4_expr="$PHASE4_EXPR" \
      >"$RUN/train.log" 2>&1 < /dev/null &
    sleep 5
    watch 530
    ;;
  watch)
    setup
    watch "${1:-540}"
    ;;
  export)
    setup
    python3 -m lee_jax.weights --from "$RUN" --to "$OUT/weights" --dtype bfloat16 || exit 1
    cp "$RUN/train.log" "$RUN/metrics.jsonl" "$OUT/" 2>/dev/null
    ls -la "$OUT" "$OUT/weights"
    ;;
  search)
    # search [SECONDS] (default 540): the `paper` preset on the 14 Strogatz sets, eps 0, seed 0
    # (issue 5's quality with the `paper` preset on the GPU; issue 7's wall time per set against
    # the paper's 64.8 s), resumable across calls: the cells go to SEARCH_DIR (default
    # .ckpt_work/paper_search, git-ignored: it stays on a warm machine; carry it back in if the
    # machine was lost) and a copy to $OUT. One wave of rounds (10 workers for 10 rounds, kept
    # across sets), SymPy overlapped, the jax fitter on FIT_BACKEND (default cpu: the host's
    # cores, not the GPU the 10 workers share), an untimed warm-up first.
    seconds=${1:-540}
    setup
    dir=${SEARCH_DIR:-.ckpt_work/paper_search}
    mkdir -p "$dir"
    export LEE_JAX_COMPILATION_CACHE=/tmp/lee_jaxcache
    timeout "$seconds" env LEE_JAX_FIT_BACKEND="${FIT_BACKEND:-cpu}" XLA_PYTHON_CLIENT_PREALLOCATE=false \
      python3 experiments/srbench.py \
      --group=strogatz --noise=0 --trials=1 --preset=paper --fitter=jax --workers=10 --overlap \
      --simplify_helpers=1 --warmup --out_dir="$dir" ${SEARCH_ARGS:-} 2>&1 | tee -a "$OUT/search.log"
    # a kill at the deadline leaves the workers and their SymPy helpers behind (no atexit)
    pkill -f "multiprocessing.spaw[n]"; pkill -f "lee_jax.complexit[y]"
    cp "$dir/results.jsonl" "$OUT/paper_search.jsonl" 2>/dev/null
    python3 experiments/srbench.py --summary_only --out_dir="$dir" 2>&1 | tail -n 2 | tee -a "$OUT/search.log"
    ;;
  infer)
    setup
    ckpt=${1:-lee_jax/weights}
    # FITTERS=jax OVERLAP=1: one fitter, SymPy overlapped with decoding (a helper per worker);
    # INFER_WORKERS=10: one worker per round (the preset's 8 run 10 rounds in two waves)
    for f in ${FITTERS:-scipy jax}; do
      extra=""
      [ -n "${OVERLAP:-}" ] && extra="--overlap --simplify_helpers=1" && f_tag=${f}_overlap || f_tag=$f
      python3 experiments/bench_infer.py --checkpoint "$ckpt" --preset paper --fitter $f $extra \
        ${INFER_WORKERS:+--workers $INFER_WORKERS} \
        --json "$OUT/infer_$f_tag.json" --overwrite 2>&1 | tee "$OUT/infer_$f_tag.log"
    done
    ;;
  *)
    echo "usage: bash experiments/gpu_session.sh bench [SECONDS] | chunk PHASE [SECONDS] | search [SECONDS] | train SECONDS STEPS | watch [SECONDS] | export | infer [CKPT]" >&2
    exit 2
    ;;
esac
