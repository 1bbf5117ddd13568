"""`python -m lee_jax.train --phase=N`: the five-phase training of paper App. F (Tables 7-8).

  python -m lee_jax.train --phase=1 --model=small --workdir=runs/small
  python -m lee_jax.train --phase=all --model=tiny --workdir=/tmp/tiny --steps=200
  python -m lee_jax.train --phase=all --use_vae=false --workdir=runs/novae   # App. E ablation
                                                          # (phases 1, 2, 3, 5: no align)

Phase N > 1 starts from the last checkpoint of phase N-1 in --workdir (or --init=scratch).
A run resumes from its own phase's latest checkpoint (params, optimizer, step, data
position); --max_seconds saves and exits cleanly. A finished phase exports inference-only
params to WORKDIR/export (the latest phase) and WORKDIR/export_phaseN. Multi-host: see lee_jax/sharding.py.
"""

from __future__ import annotations

import contextlib
import pathlib
import sys
import tempfile
import time

from absl import flags
from absl import logging
import jax

from lee_jax import checkpoints
from lee_jax import cli
from lee_jax import compile_cache
from lee_jax import configs
from lee_jax import sharding
from lee_jax.trainer import TrainConfig, TrainError, train_phase

_PHASE = flags.DEFINE_string("phase", "1", "Training phase 1-5, or 'all' for 1..5 in order.")
_MODEL = flags.DEFINE_enum("model", "small", list(configs.MODELS), "Model size preset.")
_WORKDIR = flags.DEFINE_string("workdir", "workdir", "Checkpoints, metrics.jsonl, export/.")
_BATCH = flags.DEFINE_integer("batch_size", 256, "Global batch size (split over devices).")
_STEPS = flags.DEFINE_list("steps", [], "Steps per phase: one value for every phase, or five "
                           "(phases 1-5). Default: Table 8 (50k/30k/50k/30k/40k).")
_LR = flags.DEFINE_float("lr", 3e-4, "Peak learning rate (AdamW, cosine decay).")
_MIN_LR = flags.DEFINE_float("min_lr", 1e-5, "Final learning rate of the cosine decay.")
_WARMUP = flags.DEFINE_integer("warmup", 1000, "Linear warm-up steps (capped at 10% of a phase).")
_WEIGHT_DECAY = flags.DEFINE_float("weight_decay", 0.01, "AdamW weight decay.")
_CLIP = flags.DEFINE_float("clip_norm", 1.0, "Global gradient-norm clip.")
_SEED = flags.DEFINE_integer("seed", 0, "Init, dropout and data seed.")
_MAX_SECONDS = flags.DEFINE_float("max_seconds", 0, "Wall-clock budget; save and exit when spent (0: none).")
_RESUME = flags.DEFINE_bool("resume", True, "Continue from the phase's latest checkpoint if there is one "
                            "(--noresume refuses a workdir that already has one: nothing is overwritten).")
_INIT = flags.DEFINE_enum("init", "previous", ["previous", "scratch"],
                          "Start phase N>1 from phase N-1's checkpoint, or from random init.")
_INIT_FROM = flags.DEFINE_string(
    "init_from", None, "Start from these params instead (a `python -m lee_jax.weights` folder such "
    "as the shipped lee_jax/weights, an export/ or a workdir): continue training a released "
    "model. Applies to phase 1, or to every phase with --init=scratch.")
_WORKERS = flags.DEFINE_integer("workers", 0, "grain worker processes for the data pipeline.")
_DATA_BUFFER = flags.DEFINE_integer("data_buffer", 1, "Finished batches each grain worker may hold "
                                    "(experiments/bench_data.py --buffers measures it).", lower_bound=1)
_LOG_EVERY = flags.DEFINE_integer("log_every", 100, "Steps between progress/metrics lines.")
_SAVE_EVERY = flags.DEFINE_integer("save_every", 1000, "Steps between checkpoints.")
_KEEP = flags.DEFINE_integer("keep", 3, "Checkpoints kept per phase.")
_DTYPE = flags.DEFINE_enum("dtype", "bfloat16", list(configs.DTYPES), "Compute dtype.")
_USE_VAE = flags.DEFINE_bool(
    "use_vae", True, "False: the App. E ablation model (deterministic encoder, ||z||^2 penalty "
    "in place of KL, no align loss); same schedule, so the same budget as a VAE run.")
_ALIGN_SCALE = flags.DEFINE_float(
    "align_scale", 1.0, "Multiplies Table 7's align weight in every phase (1: the paper's). Our "
    "CPU-sized model collapsed under phase 2's weight of 2.0 (BUILD_NOTES 'Training runs').")
_ATTENTION = flags.DEFINE_enum(
    "attention", "auto", list(configs.ATTENTION_IMPLS), "Attention kernel: auto (cuDNN flash "
    "attention on a GPU in bf16, else XLA), xla or cudnn. The params are the same either way.")
_FUSED_REFINE = flags.DEFINE_enum(
    "fused_refine", "auto", list(configs.FUSED_REFINE), "L_refine's encoder and decoder passes "
    "batched with the other losses' (phases 3 and 5; the same terms): auto is on for a GPU "
    "(an H200's phase-3 step 1.25x faster) and off on a CPU (slower there).")
_RNG_IMPL = flags.DEFINE_enum(
    "rng_impl", "auto", list(configs.RNG_IMPLS), "PRNG of a step's dropout masks and eps: "
    "threefry (JAX's default) or XLA's RngBitGenerator (rbg, unsafe_rbg); the same "
    "distributions, other draws. auto: rbg on a GPU (an H200's `paper` step 4.6% faster), "
    "threefry elsewhere (BUILD_NOTES).")
_ANNEAL = flags.DEFINE_bool(
    "anneal_by_deadline", False, "Run the cosine to --max_seconds as well as to --steps, "
    "whichever comes first, so a run the deadline stops ends annealed (one --phase; a GPU "
    "lease's chunk). Its checkpoints resume only with this flag.")
_ALIGN_DIRECTION = flags.DEFINE_enum(
    "align_direction", "q_to_p", list(configs.ALIGN_DIRECTIONS), "q_to_p: Eq. 8, KL(q || sg p) (the "
    "paper's). p_to_q: KL(sg q || p), which trains the scatter-only encoding toward the "
    "posterior instead (a deviation for small models; BUILD_NOTES 'Training runs').")

_PHASE4_EXPR = flags.DEFINE_float(
    "phase4_expr", 0.0, "lambda_expr in phase 4 (Table 7: 0; the decoders stay frozen). At 0 "
    "only L_align and L_KL train the encoder there, and on the CPU z collapsed onto the prior "
    "(KL 168 -> 2.8, token accuracy 0.87 -> 0.34 in 50 steps); 1 kept q (BUILD_NOTES).")

_ALIGN_TARGET = flags.DEFINE_enum(
    "align_target", "ema", list(configs.ALIGN_TARGETS), "Where L_align's target p(z|D) comes "
    "from: ema, a slow exponential moving average of the weights (our deviation: with the "
    "online weights, Eq. 8 chases its own moving target and diverged, BUILD_NOTES), or online.")
_ALIGN_EMA = flags.DEFINE_float("align_ema", 0.99, "Per-step decay of the EMA align target "
                                 "(--align_target=ema with --align_direction=q_to_p).")


def config_from_flags() -> tuple[TrainConfig, list[int]]:
  phases = list(configs.phases(_USE_VAE.value)) if _PHASE.value == "all" else None
  if phases is None:
    if _PHASE.value not in {"1", "2", "3", "4", "5"}:
      raise TrainError(f"--phase must be 1-5 or 'all', got {_PHASE.value!r}")
    phases = [int(_PHASE.value)]
  elif _ANNEAL.value:
    raise TrainError("--anneal_by_deadline needs one --phase (--max_seconds is shared by all five)")
  try:
    steps = [int(s) for s in _STEPS.value]
  except ValueError:
    raise TrainError(f"--steps must be integers, got {','.join(_STEPS.value)}") from None
  if not steps:
    steps = [configs.PHASES[p].steps for p in range(1, 6)]
  elif len(steps) == 1:
    steps = steps * 5
  if len(steps) != 5 or min(steps) < 1:
    raise TrainError("--steps takes one positive value or five (phases 1-5)")
  for flag in (_ALIGN_SCALE, _PHASE4_EXPR):
    if not 0 <= flag.value < float("inf"):
      raise TrainError(f"--{flag.name} must be a number >= 0, got {flag.value:g}")
  if not _WORKDIR.value.strip():  # "" would be the current folder, filled with phase folders
    raise TrainError("--workdir is empty; name the run's folder (e.g. --workdir=runs/small)")
  for flag in (_LOG_EVERY, _SAVE_EVERY, _KEEP):
    if flag.value < 1:
      raise TrainError(f"--{flag.name} must be >= 1, got {flag.value}")
  n = jax.device_count()
  if _BATCH.value < 1 or _BATCH.value % n:
    raise TrainError(f"--batch_size={_BATCH.value} must be a positive multiple of the {n} devices")
  cfg = TrainConfig(
      model=_MODEL.value, model_cfg=configs.get_model_config(_MODEL.value, dtype=_DTYPE.value,
                                                                 use_vae=_USE_VAE.value),
      workdir=pathlib.Path(_WORKDIR.value).absolute(), batch_size=_BATCH.value, steps=tuple(steps),
      lr=_LR.value, min_lr=_MIN_LR.value, warmup=_WARMUP.value, weight_decay=_WEIGHT_DECAY.value,
      clip_norm=_CLIP.value, seed=_SEED.value, max_seconds=_MAX_SECONDS.value, resume=_RESUME.value,
      init=_INIT.value, init_from=_INIT_FROM.value, workers=_WORKERS.value,
      data_buffer=_DATA_BUFFER.value, log_every=_LOG_EVERY.value,
      save_every=_SAVE_EVERY.value, keep=_KEEP.value, align_scale=_ALIGN_SCALE.value,
      align_direction=_ALIGN_DIRECTION.value, phase4_expr=_PHASE4_EXPR.value,
      align_target=_ALIGN_TARGET.value,
      align_ema=_ALIGN_EMA.value, attention=_ATTENTION.value, fused_refine=_FUSED_REFINE.value,
      rng_impl=_RNG_IMPL.value, anneal_by_deadline=_ANNEAL.value)
  return cfg, phases


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)  # Orbax narrates every save at INFO
  sharding.initialize_distributed()
  compile_cache.enable()
  cfg, phases = config_from_flags()
  # (a run refused at its start, e.g. a missing previous phase, once left an empty workdir)
  with cli.no_empty_dir_left(cfg.workdir):
    try:  # an unusable workdir is bad input, found before the model is built
      cfg.workdir.mkdir(parents=True, exist_ok=True)
      with tempfile.TemporaryFile(dir=cfg.workdir):
        pass
    except OSError as e:
      raise TrainError(f"cannot write to --workdir={cfg.workdir}: {e.strerror or e}") from None
    # (one host locks: the others of a multi-host run share the folder)
    with (cli.exclusive(cfg.workdir, "training run") if jax.process_index() == 0
          else contextlib.nullcontext()):
      run_phases(cfg, phases)


def run_phases(cfg: TrainConfig, phases) -> None:
  deadline = time.time() + cfg.max_seconds if cfg.max_seconds > 0 else None
  for phase in phases:
    result = train_phase(cfg, phase, deadline)
    if result.get("interrupted"):  # saved (train_phase said where); not a success
      if result["finished"] and phase != phases[-1]:
        print(f"stopped after phase {phase}; the same command goes on", flush=True)
      sys.exit(cli.EXIT_INTERRUPTED)
    if not result["finished"]:
      return


if __name__ == "__main__":
  cli.run(main, TrainError, checkpoints.CheckpointError, sharding.ClusterError)
