"""The five-phase training loop of paper App. F (Tables 7-8), as a library.

`train_phase(cfg, phase)` builds the model, restores the previous phase's params or this
phase's own latest checkpoint, and runs the jitted data-parallel step until the phase's step
count or the deadline. The CLI is lee_jax/train.py.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import pathlib
import shutil
import signal
import sys
import threading
import time
from typing import Any, NamedTuple

from flax import nnx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from lee_jax import checkpoints
from lee_jax import configs
from lee_jax import losses
from lee_jax import metrics_log
from lee_jax import model as model_lib
from lee_jax import pipeline
from lee_jax import sharding


class TrainError(ValueError):
  """Bad flags or a missing prerequisite: one line for the user."""


@dataclasses.dataclass(frozen=True)
class TrainConfig:
  model: str
  model_cfg: configs.ModelConfig
  workdir: pathlib.Path
  batch_size: int
  steps: tuple[int, ...]  # per phase 1..5
  lr: float = 3e-4
  min_lr: float = 1e-5
  warmup: int = 1000
  weight_decay: float = 0.01
  clip_norm: float = 1.0
  seed: int = 0
  max_seconds: float = 0.0
  resume: bool = True
  init: str = "previous"
  init_from: str | None = None  # params to start the first phase from (weights dir or export)
  workers: int = 0
  data_buffer: int = 1  # finished batches each grain worker may hold
  log_every: int = 100
  save_every: int = 1000
  keep: int = 3
  align_scale: float = 1.0  # times Table 7's lambda_align in every phase (1: the paper's)
  align_direction: str = "q_to_p"  # configs.LossWeights.align_direction
  # lambda_expr in phase 4 (Table 7: 0). With the decoders frozen and only L_align and L_KL
  # left, z collapsed onto the prior on the CPU; L_expr kept q (BUILD_NOTES "Phases 3 and 4").
  phase4_expr: float = 0.0
  # configs.ALIGN_TARGETS: p(z|D) of Eq. 8 from an EMA of the weights (decay align_ema) or
  # from the online weights (the paper read literally; diverged at both our scales).
  align_target: str = "ema"
  align_ema: float = 0.99
  attention: str = "auto"  # configs.ATTENTION_IMPLS; an execution detail, not stored in meta
  fused_refine: str = "auto"  # configs.FUSED_REFINE; the same terms, also not stored in meta
  # configs.RNG_IMPLS: the PRNG behind a step's dropout masks and eps (the same distributions;
  # auto: rbg on a GPU, threefry elsewhere)
  rng_impl: str = "auto"
  # The cosine runs to --max_seconds as well as to the step count, whichever comes first
  # (`deadline_lr`), so a run the deadline stops still ends annealed (a GPU lease's chunk).
  anneal_by_deadline: bool = False

  def __post_init__(self):
    for f in dataclasses.fields(self):  # (inf --lr passed the checks below, NaN none of them)
      if f.type == "float" and not math.isfinite(getattr(self, f.name)):
        raise TrainError(f"--{f.name} must be a finite number, got {getattr(self, f.name)}")
    if not 0 <= self.seed < 2**32:  # grain's seeding took a negative one for a traceback
      raise TrainError(f"--seed must be in [0, 2**32), got {self.seed}")
    if self.align_target not in configs.ALIGN_TARGETS:
      raise TrainError(f"align target must be one of {configs.ALIGN_TARGETS}, got {self.align_target!r}")
    if not 0.0 <= self.align_ema < 1.0:
      raise TrainError(f"--align_ema must be in [0, 1), got {self.align_ema:g}")
    if self.anneal_by_deadline and self.max_seconds <= 0:
      raise TrainError("--anneal_by_deadline needs --max_seconds (the deadline it anneals to)")
    if self.fused_refine not in configs.FUSED_REFINE:
      raise TrainError(f"--fused_refine must be one of {configs.FUSED_REFINE}, got {self.fused_refine!r}")
    if self.rng_impl not in configs.RNG_IMPLS:
      raise TrainError(f"--rng_impl must be one of {configs.RNG_IMPLS}, got {self.rng_impl!r}")
    # A negative rate would climb the loss and a negative decay grow the weights: both run
    # without complaint, so they are refused here.
    if not 0 <= self.min_lr <= self.lr:  # (lr 0: params that cannot move, for tests)
      raise TrainError(f"need 0 <= --min_lr <= --lr, got {self.min_lr:g} and {self.lr:g}")
    for name, value in (("warmup", self.warmup), ("weight_decay", self.weight_decay),
                        ("max_seconds", self.max_seconds), ("workers", self.workers)):
      if not value >= 0:
        raise TrainError(f"--{name} must be >= 0, got {value:g}")
    if not self.clip_norm > 0:
      raise TrainError(f"--clip_norm must be > 0, got {self.clip_norm:g}")


class TargetState(NamedTuple):
  """Optimizer-chain state holding the EMA of the params that L_align's target p(z|D) uses."""
  params: Any


def ema_target(decay: float) -> optax.GradientTransformation:
  """Last link of the optimizer chain: keep an EMA of the params after each update.

  Living in the optimizer state, the copy is checkpointed and restored with it, and a new
  phase (a new optimizer) starts it at that phase's initial params.
  """

  def init(params):
    return TargetState(jax.tree.map(lambda p: jnp.array(p, copy=True), params))

  def update(updates, state, params):
    new = optax.apply_updates(params, updates)
    return updates, TargetState(jax.tree.map(
        lambda e, p: (decay * e + (1.0 - decay) * p).astype(e.dtype), state.params, new))

  return optax.GradientTransformation(init, update)


def uses_ema_target(cfg: TrainConfig, weights: configs.LossWeights) -> bool:
  """Whether this phase's L_align reads p from the EMA copy (p_to_q trains p itself: no copy)."""
  return (bool(weights.align) and cfg.model_cfg.use_vae and cfg.align_target == "ema"
          and weights.align_direction == "q_to_p")


def fuses_refine(choice: str, weights: configs.LossWeights) -> bool:
  """Whether a step batches L_refine's passes with the others: --fused_refine on this
  backend, in a phase that has L_refine."""
  return bool(weights.refine) and configs.resolve_fused_refine(choice, jax.default_backend())


def _warmup(cfg: TrainConfig, steps: int) -> int:
  return max(1, min(cfg.warmup, steps // 10))


def optimizer(cfg: TrainConfig, steps: int, ema: bool = False) -> optax.GradientTransformation:
  """AdamW with warm-up + cosine decay; ema=True appends ema_target (the align target).
  cfg.anneal_by_deadline: the learning rate is a hyperparameter in the state, which the loop
  sets before every step (`deadline_lr`, `with_lr`)."""
  if cfg.anneal_by_deadline:
    adam = optax.inject_hyperparams(optax.adamw)(
        learning_rate=np.zeros((), np.float32),  # an array, so a hyperparameter in the state
        b1=0.9, b2=0.999, weight_decay=cfg.weight_decay)
  else:
    warmup = _warmup(cfg, steps)
    schedule = optax.warmup_cosine_decay_schedule(0.0, cfg.lr, warmup, max(steps, warmup + 1),
                                                  end_value=cfg.min_lr)
    adam = optax.adamw(schedule, b1=0.9, b2=0.999, weight_decay=cfg.weight_decay)
  links = [optax.clip_by_global_norm(cfg.clip_norm), adam]
  return optax.chain(*links, *([ema_target(cfg.align_ema)] if ema else []))


def deadline_lr(cfg: TrainConfig, step: int, steps: int, time_frac: float) -> float:
  """optimizer()'s schedule (linear warm-up from 0, cosine from cfg.lr to cfg.min_lr) at
  whichever is further along: the steps, or time_frac, the share of the time to the deadline
  spent."""
  warmup = _warmup(cfg, steps)
  if step < warmup:
    return cfg.lr * step / warmup
  frac = min(1.0, max((step - warmup) / max(steps - warmup, 1), time_frac))
  return cfg.min_lr + (cfg.lr - cfg.min_lr) * 0.5 * (1.0 + math.cos(math.pi * frac))


def with_lr(opt_state, lr: float, sharding_):
  """optimizer(anneal_by_deadline)'s state with its learning rate set to lr (placed like the
  rest of the state, so the jitted step sees the same types every call)."""
  inject = opt_state[1]
  hyper = dict(inject.hyperparams, learning_rate=jax.device_put(np.float32(lr), sharding_))
  return (opt_state[0], inject._replace(hyperparams=hyper), *opt_state[2:])


def step_key(key: jax.Array, step_index, rng_impl: str = "auto") -> jax.Array:
  """The key of one step's dropout and eps draws; it depends on the step only (resumable).

  rng_impl 'rbg' / 'unsafe_rbg' re-key it for XLA's RngBitGenerator, which draws a `paper`
  step's ~10^9 dropout bits with far fewer operations than threefry's hash (whose
  transposing fusions showed in the fifth lease's profile); 'auto' is rbg on a GPU only.
  """
  rng_impl = configs.resolve_rng_impl(rng_impl, jax.default_backend())
  rng = jax.random.fold_in(key, step_index)
  if rng_impl == "threefry":
    return rng
  return jax.random.wrap_key_data(jax.random.bits(rng, (4,), jnp.uint32), impl=rng_impl)


def make_train_step(graphdef, tx, weights: configs.LossWeights, model_cfg: configs.ModelConfig,
                    ema: bool = False, fused: bool = False, rng_impl: str = "auto"):
  """One jitted update of the trainable params; frozen params and the rest are constants.

  ema=True: tx ends in ema_target, and L_align's p(z|D) comes from that EMA copy.
  fused=True: `losses.total_loss(fused=True)` (L_refine's passes batched with the others).
  rng_impl: the PRNG of the step's draws (`step_key`).
  """

  @functools.partial(jax.jit, donate_argnums=(0, 1))
  def step(trainable, opt_state, frozen, rest, batch, key, step_index):
    rng = step_key(key, step_index, rng_impl)
    target = nnx.merge(graphdef, opt_state[-1].params, frozen, rest) if ema else None

    def loss_fn(tr):
      return losses.total_loss(nnx.merge(graphdef, tr, frozen, rest), batch, rng, weights,
                               model_cfg, align_target=target, fused=fused)

    (_, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(trainable)
    updates, opt_state = tx.update(grads, opt_state, trainable)
    metrics["grad_norm"] = optax.tree.norm(grads)
    return optax.apply_updates(trainable, updates), opt_state, metrics

  return step


def make_eval_step(graphdef, model_cfg: configs.ModelConfig):
  """losses.held_out_metrics, jitted, on the split params."""

  @jax.jit
  def evaluate(trainable, frozen, rest, batch):
    return losses.held_out_metrics(nnx.merge(graphdef, trainable, frozen, rest), batch, model_cfg)

  return evaluate


def _meta(cfg: TrainConfig, phase: int) -> dict:
  weights = phase_weights(cfg, phase)
  meta = {"model": cfg.model, "model_config": dataclasses.asdict(cfg.model_cfg), "phase": phase,
          "loss_weights": dataclasses.asdict(weights),
          # what the saved data position means: another seed or batch size reads another stream
          "data": {"seed": cfg.seed, "batch_size": cfg.batch_size}}
  if weights.align and cfg.model_cfg.use_vae:
    ema = uses_ema_target(cfg, weights)
    meta["align_target"] = {"kind": "ema" if ema else "online", "decay": cfg.align_ema if ema else None}
  if cfg.anneal_by_deadline:  # another optimizer state: a resume must match it
    meta["lr_schedule"] = "deadline"
  if cfg.init_from:  # a model's search settings travel with its weights (weights.search_defaults)
    from lee_jax import weights

    inherited = weights.search_defaults(cfg.init_from)
    if inherited:
      meta["search_defaults"] = inherited
  return meta


def phase_weights(cfg: TrainConfig, phase: int) -> configs.LossWeights:
  """Table 7's weights for `phase`, lambda_align scaled by cfg.align_scale, cfg's direction,
  and phase 4's lambda_expr cfg.phase4_expr."""
  w = configs.PHASES[phase].weights
  return dataclasses.replace(w, align=w.align * cfg.align_scale,
                             align_direction=cfg.align_direction,
                             expr=cfg.phase4_expr if phase == 4 else w.expr)


def _expected(cfg: TrainConfig) -> dict:
  return {"model": cfg.model, "model_config": dataclasses.asdict(cfg.model_cfg)}


def _exported_step(workdir: pathlib.Path, phase: int) -> int | None:
  """The step of `phase`'s final export (written only when the phase finished); None when
  there is none or it cannot be read."""
  meta_file = checkpoints.phase_export_dir(workdir, phase) / "meta.json"
  try:
    return int(json.loads(meta_file.read_text())["step"])
  except (OSError, ValueError, KeyError, TypeError):
    return None


def _fmt_time(seconds: float) -> str:
  seconds = int(max(seconds, 0))
  return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m{seconds % 60:02d}s"


def _init_from(model: model_lib.LEE, cfg: TrainConfig) -> None:
  """Copy the params of a trained model (e.g. the shipped lee_jax/weights) into `model`."""
  from lee_jax import weights  # deferred: only this path reads shipped weights

  path = cfg.init_from
  src = weights.load_any(path)
  have = jax.tree.map(lambda a: a.shape, nnx.to_pure_dict(nnx.state(src, nnx.Param)))
  want = jax.tree.map(lambda a: a.shape, nnx.to_pure_dict(nnx.state(model, nnx.Param)))
  if have != want:
    raise TrainError(f"{path} holds a different architecture than --model={cfg.model}; "
                     "pass the --model it was trained as")
  nnx.update(model, nnx.state(src, nnx.Param))


class StopRequest:
  """While active (a `with` block in the main thread): SIGINT (Ctrl-C) or SIGTERM (a cluster's
  preemption) asks the loop to stop after its step, save and return, as at the deadline; a
  second signal stops at once (KeyboardInterrupt). Killed mid-step or mid-save, a run would
  lose up to a save interval and print tracebacks from Orbax's writer threads."""

  def __init__(self):
    self.signal: str | None = None
    self._old: dict = {}

  def __enter__(self) -> "StopRequest":
    if threading.current_thread() is threading.main_thread():
      self._old = {s: signal.signal(s, self._handle) for s in (signal.SIGINT, signal.SIGTERM)}
    return self

  def _handle(self, signum, frame) -> None:
    del frame
    if self.signal is not None:
      raise KeyboardInterrupt
    self.signal = signal.Signals(signum).name
    print(f"\n{self.signal}: saving after this step, then stopping (again: stop at once)",
          file=sys.stderr, flush=True)

  def __exit__(self, *exc) -> None:
    for s, old in self._old.items():
      signal.signal(s, old)


def train_phase(cfg: TrainConfig, phase: int, deadline: float | None = None) -> dict:
  """Run (or resume) one phase to its step count or the deadline; returns the last metrics."""
  if cfg.anneal_by_deadline and deadline is None:
    deadline = time.time() + cfg.max_seconds
  if phase not in configs.phases(cfg.model_cfg.use_vae):
    # named by the phase, not its losses: --phase4_expr adds L_expr; refused all the same
    raise TrainError(f"phase {phase} is Table 7's align phase, and the no-VAE model "
                     "(--use_vae=false) has no L_align (its ||z||^2 penalty would shrink z): "
                     "skip it; phase 5 starts from phase 3")
  spec = configs.PHASES[phase]
  steps = cfg.steps[phase - 1]
  mesh = sharding.mesh()
  repl = sharding.replicated(mesh)
  pdir = checkpoints.phase_dir(cfg.workdir, phase)
  # The attention kernel changes how the step runs, not the params: meta.json keeps
  # cfg.model_cfg (attention_impl None), so the weights load anywhere.
  run_cfg = dataclasses.replace(cfg.model_cfg, attention_impl=configs.resolve_attention(
      cfg.attention, cfg.model_cfg.dtype, jax.default_backend()))

  # --- model: random init, then the previous phase's params where there is one
  model = model_lib.LEE(run_cfg, rngs=nnx.Rngs(cfg.seed))
  saved = pdir.is_dir() and checkpoints.open_manager(pdir, 1).latest_step() is not None
  if saved and not cfg.resume:
    # A fresh run here would delete the old run's checkpoints as it saves and leave the two
    # mixed (or stop at a step that exists): nothing already written is given up silently.
    raise TrainError(f"{pdir} holds checkpoints of an earlier run; --resume=false would "
                     "overwrite them: pass another --workdir (or move that one away)")
  resuming = cfg.resume and saved
  if cfg.init_from and not resuming and (phase == 1 or cfg.init != "previous"):
    _init_from(model, cfg)
    print(f"phase {phase}: initialised from {cfg.init_from}", flush=True)
  elif phase > 1 and cfg.init == "previous" and not resuming:
    before = configs.previous_phase(phase, cfg.model_cfg.use_vae)
    prev = checkpoints.phase_dir(cfg.workdir, before)
    if not prev.is_dir():
      raise TrainError(
          f"phase {phase} starts from phase {before}'s checkpoint, but {prev} does not exist; "
          f"run `python -m lee_jax.train --phase={before} --model={cfg.model} "
          f"--workdir={cfg.workdir}` first (or pass --init=scratch" +
          (", with which --init_from starts this phase)" if cfg.init_from else ")"))
    params, prev_step = checkpoints.restore_params_only(
        prev, checkpoints.abstract(nnx.state(model, nnx.Param)), _expected(cfg))
    nnx.update(model, params)
    # Finished is what the previous run recorded (its export), not this run's --steps: a
    # phase 3 at 250 steps after a 200-step phase 2 is not a phase 2 stopped short.
    print(f"phase {phase}: initialised from {prev} step {prev_step}" +
          ("" if _exported_step(cfg.workdir, before) == prev_step else
           f" (phase {before} stopped there unfinished: `--phase={before}` with its flags "
           "finishes it)"), flush=True)
  if cfg.init_from and resuming:
    print(f"phase {phase}: --init_from is not used: the phase resumes its own checkpoint",
          flush=True)

  def split_placed(model):
    """(graphdef, trainable, frozen, rest) with the arrays replicated over the mesh."""
    graphdef, *parts = nnx.split(model, model_lib.trainable_filter(spec.trainable), nnx.Param, ...)
    return (graphdef, *jax.device_put(tuple(parts), repl))

  def full_params():
    return nnx.state(nnx.merge(graphdef, trainable, frozen, rest), nnx.Param)

  graphdef, trainable, frozen, rest = split_placed(model)
  weights = phase_weights(cfg, phase)
  ema = uses_ema_target(cfg, weights)
  tx = optimizer(cfg, steps, ema)
  opt_state = jax.device_put(tx.init(trainable), repl)

  # --- data: phase-specific stream, this host's slice
  data_cfg = pipeline.DataConfig(max_len=cfg.model_cfg.max_len)
  data_it = iter(pipeline.batches(data_cfg, cfg.seed * 10 + phase, cfg.batch_size // jax.process_count(),
                                  workers=cfg.workers, shard=sharding.host_shard(),
                                  buffer=cfg.data_buffer))
  # One fixed batch of validation-split expressions, probed at every log step.
  val_batch = sharding.shard_batch(next(iter(pipeline.batches(
      dataclasses.replace(data_cfg, split="val"), 7, cfg.batch_size // jax.process_count(),
      shard=sharding.host_shard()))), mesh)

  # Every way out (an error, an interrupt, a finished phase) stops the data workers: left to
  # interpreter shutdown, grain's worker iterators print tracebacks after a one-line error.
  try:
    # --- restore this phase's own progress
    mngr = checkpoints.open_manager(pdir, cfg.save_every, cfg.keep)
    start = 0
    if resuming:
      start = mngr.latest_step()
      # the align target (an EMA copy or none) and where the learning rate lives (a schedule
      # or a hyperparameter in the state) are part of the optimizer state's structure
      meta = _meta(cfg, phase)
      expected = _expected(cfg) | {k: meta.get(k) for k in ("align_target", "lr_schedule")}
      if "data" in checkpoints.read_meta(mngr, start):  # (saved since 2026-11-29)
        expected["data"] = meta["data"]  # --seed=1 resumed a seed-0 run silently
      params, opt_state, _ = checkpoints.restore(mngr, start, checkpoints.abstract(full_params()),
                                                 checkpoints.abstract(opt_state), data_it, expected)
      nnx.update(model, params)
      _, trainable, frozen, rest = split_placed(model)
      print(f"phase {phase}: resumed from {pdir / str(start)}", flush=True)
      if start >= steps:
        print(f"phase {phase}: already complete ({start} steps)", flush=True)
        return {"phase": phase, "step": start, "finished": True}

    def save(step, force=False):
      if mngr.latest_step() == step:  # the interval save already wrote this step
        return
      checkpoints.save(mngr, step, full_params(), opt_state, data_it, _meta(cfg, phase), force=force)

    # --- loop
    fused = fuses_refine(cfg.fused_refine, weights)
    step_fn = make_train_step(graphdef, tx, weights, run_cfg, ema, fused=fused,
                              rng_impl=cfg.rng_impl)
    eval_fn = make_eval_step(graphdef, run_cfg)
    log = metrics_log.MetricsLog(cfg.workdir)
    key = jax.random.key(cfg.seed * 100 + phase)
    last: dict = {}
    t_start, t_log, s_log = time.time(), time.time(), start
    step = start
    print(f"phase {phase} ({spec.name}): steps {start}->{steps}, batch {cfg.batch_size}, "
          f"{jax.device_count()} device(s), model {cfg.model}, attention "
          f"{run_cfg.attention_impl or 'xla'}"
          + (f", align weight {weights.align:g}" if cfg.align_scale != 1 else "")
          + (f", align {cfg.align_direction}" if cfg.align_direction != "q_to_p" else "")
          + (f", align target ema({cfg.align_ema:g})" if ema else "")
          + (", refine passes fused" if fused else ""),
          flush=True)
    t_loop = time.time()
    with StopRequest() as stop:
      while step < steps:
        batch = sharding.shard_batch(next(data_it), mesh)
        if cfg.anneal_by_deadline:
          lr = deadline_lr(cfg, step, steps, (time.time() - t_loop) / max(deadline - t_loop, 1e-9))
          opt_state = with_lr(opt_state, lr, repl)
        trainable, opt_state, metrics = step_fn(trainable, opt_state, frozen, rest, batch, key,
                                                jnp.int32(step))
        step += 1
        out_of_time = deadline is not None and time.time() > deadline
        stopping = out_of_time or stop.signal is not None
        if step % cfg.log_every == 0 or step == steps or stopping:
          last = {k: float(v) for k, v in jax.device_get(
              metrics | eval_fn(trainable, frozen, rest, val_batch)).items()}
          if cfg.anneal_by_deadline:
            last["lr"] = lr
          now = time.time()
          rate = (step - s_log) / max(now - t_log, 1e-9)
          t_log, s_log = now, step
          if not all(np.isfinite(v) for v in last.values()):
            # Not saved: a resume would restore the NaN weights. The saves already made are
            # finished first (the error ended the process while Orbax still wrote the last).
            mngr.wait_until_finished()
            kept = mngr.latest_step()
            raise TrainError(
                f"non-finite loss at phase {phase} step {step} ({last}); " +
                (f"the last checkpoint, step {kept}, is kept in {pdir} (a resume meets the "
                 "same batches: lower --lr or --clip_norm)" if kept is not None
                 else f"no checkpoint of phase {phase} was saved"))
          log.write({"phase": phase, "step": step, "steps_per_s": rate, "time": now, **last})
          terms = " ".join(f"{k} {v:.4g}" for k, v in last.items())
          print(f"phase {phase} [{step}/{steps} {100 * step / steps:5.1f}%] {rate:.2f} step/s "
                f"ETA {_fmt_time((steps - step) / max(rate, 1e-9))} | {terms}", flush=True)
        if stopping:
          save(step, force=True)
          mngr.wait_until_finished()
          # Inference params of the unfinished phase too: a run that must hand its model on before
          # the phase ends (a GPU lease shorter than a phase) has them without the optimizer state.
          checkpoints.export_params(cfg.workdir / "export_partial", full_params(),
                                    _meta(cfg, phase) | {"step": step, "finished": False})
          why = "--max_seconds spent" if stop.signal is None else f"stopped by {stop.signal}"
          print(f"phase {phase}: {why} at step {step}; the same command resumes "
                f"(params so far in {cfg.workdir / 'export_partial'})", flush=True)
          return {"phase": phase, "step": step, "finished": False,
                  "interrupted": stop.signal is not None, **last}
        save(step)
      save(step, force=True)
      mngr.wait_until_finished()
      meta, params = _meta(cfg, phase) | {"step": step}, full_params()
      # Each phase's final params stay: a later phase can be worse (phase 2's collapse at
      # small scale, BUILD_NOTES). export/ is the latest phase's: an earlier phase run again
      # (more steps) leaves a later phase's export/ as it is.
      export = checkpoints.export_params(checkpoints.phase_export_dir(cfg.workdir, phase), params,
                                        meta)
      later = [q for q in sorted(configs.PHASES) if q > phase and
               checkpoints.phase_export_dir(cfg.workdir, q).is_dir()]
      if not later:
        export = checkpoints.export_params(cfg.workdir / "export", params, meta)
      shutil.rmtree(cfg.workdir / "export_partial", ignore_errors=True)  # superseded
      print(f"phase {phase}: done at step {step} in {_fmt_time(time.time() - t_start)}; "
            f"inference params in {export}" + (
                f" ({cfg.workdir / 'export'} keeps phase {later[-1]}'s, trained from the "
                f"phase {phase} before this run)" if later else ""), flush=True)
    # (a signal during the final save stops the run after this phase)
    return {"phase": phase, "step": step, "finished": True,
            "interrupted": stop.signal is not None, **last}
  finally:
    if hasattr(data_it, "close"):
      data_it.close()
