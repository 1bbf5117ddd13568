"""One trial: R rounds of search (concurrently in worker processes), winner by validation R2.

Round r of a trial with seed s uses seed s + r (the trial seeds themselves follow App. H,
s_t = s_base + 1000 t, in the callers). With cfg.workers > 1 the rounds run in a pool of
spawned processes that each build their own Engine from the model's arrays and share the
one accelerator (no memory preallocation, so several fit on it); the processes stay for the
next trial with the same model (`worker_pool`; `shutdown_workers` ends them).

The workers are spawned, so each re-runs the main script's top level first; a script that
calls fit there, not under `if __name__ == "__main__":`, gets WorkerStartError.
"""

from __future__ import annotations

import atexit
import collections
import concurrent.futures
import dataclasses
import multiprocessing
import os
import pickle
import signal
import tempfile
import time
from typing import Any

import numpy as np
import sympy

from lee_jax import complexity
from lee_jax import configs
from lee_jax import cpu_threads
from lee_jax import engine as engine_lib
from lee_jax import evaluate
from lee_jax import expr as E
from lee_jax import final_refit
from lee_jax import long_sums
from lee_jax import parsimony
from lee_jax import pool as pool_lib
from lee_jax import rewrite
from lee_jax import score
from lee_jax import search
from lee_jax.sympy_form import sympy_of


@dataclasses.dataclass
class TrialResult:
  winner: pool_lib.Candidate | None
  winner_round: int | None
  rounds: list[search.RoundResult]
  wall_time: float
  timed_out: bool = False  # the time limit cut the search short (rounds stopped or skipped)
  long_sum: pool_lib.Candidate | None = None  # the best long sum (long_sums.py), answer or not
  timings: dict = dataclasses.field(default_factory=dict)  # trial-level seconds (long sums, parsimony)
  as_found: pool_lib.Candidate | None = None  # the answer before the parsimony step changed it
  # the answer before its constants were refitted on the training and validation rows
  before_refit: pool_lib.Candidate | None = None

  def failures(self) -> dict[str, int]:
    """Failure counts summed over the rounds."""
    total: collections.Counter = collections.Counter()
    for r in self.rounds:
      total.update(r.failures)
    return dict(total)


# --- worker processes ------------------------------------------------------------------------

_WORKER: dict[str, Any] = {}

# A spawned process that meets a worker pool while it re-runs the main script (no
# `if __name__ == "__main__":` guard) exits with this status; the pool reads it as that.
_UNGUARDED_EXIT = 87


class WorkerStartError(RuntimeError):
  """The worker processes could not start (one line, says why and what to do)."""


def _in_spawn_bootstrap() -> bool:
  """Whether this process is a spawned child still running its parent's main script (where
  multiprocessing refuses to start processes: spawn._check_not_importing_main)."""
  return bool(getattr(multiprocessing.current_process(), "_inheriting", False))


def _exit_if_bootstrapping() -> None:
  # Quietly: the parent raises WorkerStartError; this child's traceback would say less.
  if _in_spawn_bootstrap():
    os._exit(_UNGUARDED_EXIT)


def _init_worker(bundle_path: str, constrain: bool, threads: int | None) -> None:
  # Ctrl-C in a terminal reaches every process of its group: the main process stops the
  # workers (shutdown_workers), each of which would otherwise print its own traceback.
  signal.signal(signal.SIGINT, signal.SIG_IGN)
  cpu_threads.limit(threads)  # before the engine starts JAX's backends
  with open(bundle_path, "rb") as f:
    bundle = pickle.load(f)
  _WORKER["engine"] = engine_lib.Engine(engine_lib.from_bundle(bundle), constrain)


def _worker_round(data, cfg, mode, round_index, seed, deadline) -> search.RoundResult:
  return search.run_round(_WORKER["engine"], data, cfg, mode, round_index, seed,
                          deadline=deadline)


# The worker processes outlive a trial: the next trial with the same model and worker count
# reuses them. Spawning them cost each trial ~9 s on a 2-core CPU (JAX's import, the engine,
# then tracing and cache loads in each process; BUILD_NOTES "A worker pool kept across
# trials").
_POOL: dict[str, Any] = {}


def worker_pool(bundle: dict, constrain: bool, n: int) -> concurrent.futures.ProcessPoolExecutor:
  """The n spawned worker processes holding `bundle`'s model: the ones from the last call when
  it was the same bundle object (engine.load caches it), constrain and n, else new ones (the
  old ones shut down first)."""
  _exit_if_bootstrapping()
  if _POOL and (_POOL["bundle"] is not bundle or _POOL["key"] != (constrain, n)):
    shutdown_workers()
  if not _POOL:
    # Every process would otherwise grab most of the accelerator's memory up front.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    ctx = multiprocessing.get_context("spawn")  # fork after JAX has started is unsafe
    # Each process's XLA CPU pool gets its share of the cores, not a thread per core each
    # (BUILD_NOTES, "XLA's CPU threads per worker").
    threads = cpu_threads.requested(cpu_threads.per_worker(n))
    # The model goes to the workers in a file, not in initargs: those are written into each
    # child's start pipe, and a child that dies before reading them (an unguarded script,
    # above) left the parent blocked in that write for good (a 49 MB model; the pipe holds
    # 64 KB). Now a dead child breaks the pool, which the waiting trial sees.
    fd, path = tempfile.mkstemp(prefix="lee_jax_model_", suffix=".pkl")
    with os.fdopen(fd, "wb") as f:
      pickle.dump(bundle, f, protocol=pickle.HIGHEST_PROTOCOL)
    _POOL.update(bundle=bundle, key=(constrain, n), bundle_path=path,
                 executor=concurrent.futures.ProcessPoolExecutor(
                     n, mp_context=ctx, initializer=_init_worker,
                     initargs=(path, constrain, threads)))
  return _POOL["executor"]


def shutdown_workers(wait: bool = True) -> None:
  """Stops the worker processes a trial left running (they also end with this process)."""
  if _POOL:
    ex = _POOL.pop("executor")
    if not wait:  # a running round would hold the exit until it finished (~30 s)
      for p in list((getattr(ex, "_processes", None) or {}).values()):
        p.terminate()
    ex.shutdown(wait=wait, cancel_futures=True)
    try:
      os.remove(_POOL["bundle_path"])
    except OSError:
      pass
    _POOL.clear()


atexit.register(shutdown_workers)


def check_max_time(max_time: float | None) -> None:
  if max_time is not None and not max_time > 0:
    raise ValueError(f"max_time must be > 0 seconds, got {max_time}")


def run_trial(engine: engine_lib.Engine, data: search.SearchData, cfg: configs.SearchConfig,
              mode: str, seed: int, progress=None, bundle: dict | None = None,
              max_time: float | None = None) -> TrialResult:
  """R rounds; in-process when cfg.workers == 1, else in cfg.workers processes (needs bundle).

  max_time: seconds for the whole trial (None: no limit). Past it, running rounds stop
  refining and return their pool, in-process rounds not yet started are skipped, and worker
  rounds not yet started build their initial pool only; round 0 always runs, so there is an
  answer. A limit makes the result depend on the machine's speed.

  progress: a search.Progress callable, told every iteration of in-process rounds; if it
  has a `round_done(RoundResult)` method (progress.SearchProgress), that is called as each
  worker-process round finishes instead.
  """
  check_max_time(max_time)
  t0 = time.perf_counter()
  deadline = None if max_time is None else time.time() + max_time
  seeds = [seed + r for r in range(cfg.rounds)]
  results: list[search.RoundResult] = []
  timings: dict[str, float] = {}
  if cfg.workers <= 1 or cfg.rounds == 1:
    for r, s in enumerate(seeds):
      if results and deadline is not None and time.time() >= deadline:
        break
      results.append(search.run_round(engine, data, cfg, mode, r, s, progress, deadline))
    long = _long_sum(data, cfg, seed, timings)
  else:
    if bundle is None:
      raise ValueError("running rounds in worker processes needs the model bundle")
    ex = worker_pool(bundle, engine.constrain, min(cfg.workers, cfg.rounds))
    futures = [ex.submit(_worker_round, data, cfg, mode, r, s, deadline)
               for r, s in enumerate(seeds)]
    procs = list((getattr(ex, "_processes", None) or {}).values())  # all started by now
    try:
      long = _long_sum(data, cfg, seed, timings)  # while the workers run the rounds
      for f in concurrent.futures.as_completed(futures):
        results.append(f.result())
        if hasattr(progress, "round_done"):
          progress.round_done(results[-1])
    except BaseException as e:
      # A failed round, Ctrl-C or a dead worker: the trial's other rounds must not keep
      # running unseen in kept processes, so the pool goes (a later trial starts a new one).
      shutdown_workers(wait=False)
      if isinstance(e, concurrent.futures.process.BrokenProcessPool) and _unguarded_exit(procs):
        raise WorkerStartError(
            "the worker processes could not start: each re-runs the main script, which "
            "calls fit again at its top level; with workers > 1, put the fit under "
            "`if __name__ == \"__main__\":` (or use workers=1)") from None
      raise
    results.sort(key=lambda r: r.round_index)
  best = rounds_answer(results)
  winner_round = next((r.round_index for r in results if r.winner is best), None) if best else None
  if long_sums.pays(long, best, cfg.alpha):
    best, winner_round = long, None
  as_found = before_refit = guard = None
  if cfg.parsimony and best is not None:
    t1 = time.perf_counter()  # (the pole probe counted here: the step was timed with it)
    guard = parsimony.pole_guard(data, cfg.probe_points, seed)
    simpler = parsimony.answer(best, data, cfg.alpha, cfg.probe_points, seed, guard)
    timings["parsimony"] = time.perf_counter() - t1
    if simpler is not best:
      if best is long:  # the answer is still the long sum, in its simpler form
        long = simpler
      best, as_found = simpler, best
  if cfg.final_refit and best is not None:
    t1 = time.perf_counter()
    if guard is None:
      guard = parsimony.pole_guard(data, cfg.probe_points, seed)
    refitted, _ = final_refit.refit(best, data, cfg.alpha, seed, guard)
    timings["final_refit"] = time.perf_counter() - t1
    if refitted is not best:
      if best is long:
        long = refitted
      best, before_refit = refitted, best
  if cfg.parsimony and best is not None:
    # last, on the constants the answer keeps: the same values in fewer nodes (rewrite.py)
    t1 = time.perf_counter()
    shorter = rewrite.shortest(best, data, cfg.alpha, guard)
    timings["rewrite"] = time.perf_counter() - t1
    if shorter is not best:
      if best is long:
        long = shorter
      best = shorter
  return TrialResult(best, winner_round, results, time.perf_counter() - t0,
                     timed_out=any(r.timed_out for r in results) or len(results) < cfg.rounds,
                     long_sum=long, timings=timings, as_found=as_found,
                     before_refit=before_refit)


def _unguarded_exit(procs: list[multiprocessing.process.BaseProcess], wait: float = 10.0) -> bool:
  """Whether one of a broken pool's processes exited from _exit_if_bootstrapping. They are
  all ending (the pool terminates the rest); the pool's own thread reaps them at the same
  time, and a status it took shows only once it has stored it: so ask until every one is
  known, or one is ours."""
  end = time.monotonic() + wait
  while True:
    codes = []
    for p in procs:
      try:
        codes.append(p.exitcode)  # (polls: reaps an ended child)
      except ValueError:  # a closed process object
        codes.append(-1)
    if _UNGUARDED_EXIT in codes:
      return True
    if all(c is not None for c in codes) or time.monotonic() > end:
      return False
    time.sleep(0.05)


def rounds_answer(rounds: list[search.RoundResult]) -> pool_lib.Candidate | None:
  """The best round winner by validation R2: the trial's answer without a long sum."""
  return pool_lib.best_by_val([r.winner for r in rounds if r.winner is not None])


def _long_sum(data: search.SearchData, cfg: configs.SearchConfig, seed: int,
              timings: dict[str, float]) -> pool_lib.Candidate | None:
  """The trial's best long sum (long_sums.best_sum), None with cfg.long_terms = 0; its
  seconds go to timings["long"]."""
  if not cfg.long_terms:
    return None
  t0 = time.perf_counter()
  long = long_sums.best_sum(data, cfg.long_terms, cfg.alpha, cfg.probe_points, seed)
  timings["long"] = time.perf_counter() - t0
  return long


def warm_up(engine: engine_lib.Engine, data: search.SearchData, cfg: configs.SearchConfig,
            mode: str, seed: int, bundle: dict | None = None) -> float:
  """A short untimed trial, one gradient period long (one round in-process; every round with
  worker processes, which later trials reuse), so that compilation and the workers' start stay
  out of the timed trials. Returns its seconds.

  Its rounds use seeds 500 past the trial's (no round of a trial at `seed` does): with the
  same seeds they would meet the timed trial's first candidates and leave their SymPy counts
  in the workers' caches (a third less SymPy for the first set in one measurement)."""
  t0 = time.perf_counter()
  short = dataclasses.replace(cfg, iterations=min(cfg.iterations, cfg.decode_period))
  if cfg.workers <= 1:
    short = dataclasses.replace(short, rounds=1)
  run_trial(engine, data, short, mode, seed + 500, bundle=bundle)
  return time.perf_counter() - t0


# --- reporting -----------------------------------------------------------------------------

def predict(node: E.Node, X: np.ndarray) -> np.ndarray:
  return evaluate.evaluate_numpy(node, np.asarray(X, np.float64))


def pareto_front(rounds: list[search.RoundResult],
                 extra: list[pool_lib.Candidate | None] = (),
                 answer: pool_lib.Candidate | None = None) -> list[pool_lib.Candidate]:
  """Across every round's final pool, winner (which can come from outside the pool: a
  polynomial seed) and fitted baselines (the mean first), and the extra candidates (a
  trial's long sum):
  the best validation R2 at each complexity, keeping only complexities that improve on every
  simpler one (PySR's equation table). `answer` always holds its complexity's row: another
  tree of the same complexity and validation R2 (x1^3/x1^2 x0 for x0 x1, NaN at x1 = 0)
  took it, and predict(index=) gave that one."""
  by_c: dict[int, pool_lib.Candidate] = {}
  every = [c for r in rounds
           for c in r.pool + r.floor + ([r.winner] if r.winner is not None else [])]
  for c in every + [c for c in extra if c is not None]:
    if np.isfinite(c.r2_val) and (c.complexity not in by_c or c.r2_val > by_c[c.complexity].r2_val):
      by_c[c.complexity] = c
  if answer is not None:
    by_c[answer.complexity] = answer
  front, best = [], -np.inf
  for c in sorted(by_c):
    if by_c[c].r2_val > best or by_c[c] is answer:
      front.append(by_c[c])
      best = max(best, by_c[c].r2_val)
  return front


def equation_table(result: TrialResult) -> list[pool_lib.Candidate]:
  """The trial's Pareto front: every round's pool and winner, the long sum and the answer
  (which the parsimony step may have made simpler than any of them)."""
  return pareto_front(result.rounds, [result.long_sum], answer=result.winner)


def pysr_columns(r2_vals, complexities, y_val, w_val=None) -> list[tuple[float, float]]:
  """(loss, score) of each row of an equation table, as PySR's equations_ has them: loss the
  validation mean squared error ((1 - R2) times the rows' variance, weighted as R2 is), score
  -d ln(loss) / d complexity against the row before (0 for the first; a loss of 0 counts as
  the smallest positive float)."""
  w = np.ones(len(y_val)) if w_val is None else np.asarray(w_val, np.float64)
  y = np.asarray(y_val, np.float64)
  var = float(np.sum(w * (y - np.sum(w * y) / np.sum(w)) ** 2) / np.sum(w))
  out, prev = [], None
  for r2, c in zip(r2_vals, complexities):
    loss = max((1.0 - float(r2)) * var, 0.0)
    ln = np.log(max(loss, np.finfo(float).tiny))
    out.append((loss, 0.0 if prev is None else float(-(ln - prev[0]) / (c - prev[1]))))
    prev = (ln, c)
  return out


def latex_of(expr: sympy.Expr) -> str:
  """sympy.latex with a column name of several letters upright (`\\mathrm{mass}`), as a word
  reads in a formula: SymPy sets it in italics, which reads as letters multiplied (m a s s).
  What SymPy renders specially stays its: Greek (`lambda`, `omega_0`: `\\omega_{0}`), single
  letters with their subscripts (`x_1`, `v_max`: `v_{max}`), accents (`xdot`). A word's
  subscript stays too: `mass2` and `power_W` -> `\\mathrm{mass}_{2}`, `\\mathrm{power}_{W}`."""
  from sympy.printing.conventions import split_super_sub
  names = {}
  for s in expr.free_symbols:
    if not isinstance(s, sympy.Symbol):
      continue
    # A trailing "_" is `formula_names`' mark on a name SymPy reads otherwise (E_, beta_,
    # lambda_): drawn as the column's own name (SymPy wrote an empty subscript, \beta_{}).
    name = s.name[:-1] if s.name.endswith("_") and len(s.name) > 1 else s.name
    shown = sympy.latex(sympy.Symbol(name))
    base = split_super_sub(name)[0]
    if len(base) > 1 and sympy.latex(sympy.Symbol(base)) == base and shown.startswith(base):
      # a plain word (as _deal_with_super_sub writes it: base, then ^{..}, _{..})
      shown = r"\mathrm{%s}" % base.replace("_", r"\_") + shown[len(base):]
    names[s] = shown
  return sympy.latex(expr, symbol_names=names)


def report(result: TrialResult, X_test: np.ndarray, y_test: np.ndarray, data: search.SearchData,
           names, extra: dict | None = None, w_test: np.ndarray | None = None) -> dict:
  """A JSON-ready summary of a trial (float64 R2 on every fold for the winner; weighted where
  the data has sample weights). Its validation R2 is the held-out one of the answer as
  chosen: where `final_refit` then fitted its constants on the validation rows too, that of
  "before_refit" (the answer before it)."""
  names = E.formula_names(names)  # "a+b" or "2" as a column would print a different formula
  timings: collections.Counter = collections.Counter()
  for r in result.rounds:
    timings.update(r.timings)
  timings.update(result.timings)
  out: dict[str, Any] = dict(extra or {})
  out.update({
      "found": result.winner is not None,
      "wall_time_s": round(result.wall_time, 3),
      "timed_out": result.timed_out,
      "winner_round": result.winner_round,
      "candidates": sum(r.candidates for r in result.rounds),
      "unique_candidates": sum(r.unique for r in result.rounds),
      "failures": result.failures(),
      "timings_s": {k: round(v, 3) for k, v in sorted(timings.items())},
  })
  if result.winner is not None:
    w = result.winner
    expr = sympy_of(w.node, names)
    out.update({
        "expression": str(expr),
        "latex": latex_of(expr),
        "prefix": " ".join(E.to_prefix(w.node)),
        "constants": [float(v) for v in E.constants(w.node)],  # the prefix's, in full
        "complexity": w.complexity,
        "r2_train": score.r2(data.y_train, predict(w.node, data.X_train), data.w_train),
        "r2_val": score.r2(data.y_val, predict((result.before_refit or w).node, data.X_val),
                           data.w_val),
        "r2_test": score.r2(y_test, predict(w.node, X_test), w_test),
        "origin": w.origin,
    })
  if result.long_sum is not None:  # answer or not: what the rounds' answer was measured against
    if result.winner is result.long_sum:  # its summary is the answer's (one SymPy pass)
      out["long_sum"] = {k: out[k] for k in ("expression", "complexity", "r2_val", "r2_test",
                                             "origin", "prefix")}
      rounds_best = rounds_answer(result.rounds)
      if rounds_best is not None:  # the answer without the long sum
        out["rounds_answer"] = candidate_summary(rounds_best, X_test, y_test, names, w_test)
    else:
      out["long_sum"] = candidate_summary(result.long_sum, X_test, y_test, names, w_test)
  if result.as_found is not None:  # what the parsimony step started from
    out["as_found"] = candidate_summary(result.as_found, X_test, y_test, names, w_test)
  if result.before_refit is not None:  # what final_refit started from
    out["before_refit"] = candidate_summary(result.before_refit, X_test, y_test, names, w_test)
  out["rounds"] = [{
      "round": r.round_index, "seed": r.seed, "candidates": r.candidates,
      "r2_val": r.winner.r2_val if r.winner else None,
      "expression": str(complexity.build(r.winner.node, names)) if r.winner else None,
      "complexity": r.winner.complexity if r.winner else None,
      "fallback_used": r.fallback_used, "timed_out": r.timed_out, "failures": r.failures,
      "history": [list(h) for h in r.history],
  } for r in result.rounds]
  out["equations"] = [{"complexity": c.complexity, "r2_val": c.r2_val,
                       "expression": str(complexity.build(c.node, names))}
                      for c in equation_table(result)]
  return json_safe(out)


def candidate_summary(c: pool_lib.Candidate, X_test, y_test, names, w_test=None) -> dict:
  """A candidate's expression (over formula names), complexity, validation and test R2, and
  its tree's prefix (what a replay that puts it in the answer's place refits from)."""
  return {"expression": str(sympy_of(c.node, names)), "complexity": c.complexity,
          "r2_val": c.r2_val, "r2_test": score.r2(y_test, predict(c.node, X_test), w_test),
          "origin": c.origin, "prefix": " ".join(E.to_prefix(c.node))}


def json_safe(x):
  """Non-finite floats -> None (strict JSON), NumPy scalars -> Python numbers."""
  if isinstance(x, dict):
    return {k: json_safe(v) for k, v in x.items()}
  if isinstance(x, (list, tuple)):
    return [json_safe(v) for v in x]
  if isinstance(x, (float, np.floating)):
    return float(x) if np.isfinite(x) else None
  if isinstance(x, np.integer):
    return int(x)
  return x
