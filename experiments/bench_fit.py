"""Benchmark: scipy L-BFGS-B vs the batched JAX Levenberg-Marquardt fitter, same candidates.

    python experiments/bench_fit.py --n=256 --batch=16 --rows=500
    python experiments/bench_fit.py --candidates=search --iterations=10

--candidates=grammar (default): grammar expressions (App. F) fitted to data from a related
expression: half are the true skeleton with its constants perturbed by up to +-50% (a fit
that should reach R2 ~ 1), half another grammar skeleton over the same variables (an
approximate fit), in calls of --batch. --candidates=search: what a real search hands the
fitter: one `fast` round of --iterations with the shipped model on each --datasets set (the
scipy fitter, the paper's reference, runs it), recording every fitter call (the decoded
candidates with their decoded constants, the round's fit rows and its L-BFGS-B budget), so
both fitters then see exactly those calls. Each fitter's time is the median of --repeats
alternating passes, the JAX fitter's after a compile warm-up. Prints time per candidate and
the final train R2 of both, with the paired differences (jax - scipy).
"""

from __future__ import annotations

import pathlib
import sys
import time

import jax
import numpy as np
from absl import flags

from lee_jax import cli
from lee_jax import compile_cache
from lee_jax import cpu_threads
from lee_jax import datasets
from lee_jax import evaluate
from lee_jax import expr as E
from lee_jax import fit
from lee_jax import grammar
from lee_jax import score
from lee_jax import search

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import runner  # noqa: E402  (experiments/runner.py, beside this script)

_CANDIDATES = flags.DEFINE_enum("candidates", "grammar", ["grammar", "search"],
                                "grammar: synthetic candidates (--n, --batch, --rows); search: "
                                "the calls of real search rounds (--datasets, --iterations).")
_N = flags.DEFINE_integer("n", 256, "Candidates (grammar).", lower_bound=1)
_BATCH = flags.DEFINE_integer("batch", 16, "Candidates per fitter call (grammar).", lower_bound=1)
_ROWS = flags.DEFINE_integer("rows", 500, "Fit rows per dataset (grammar).", lower_bound=2)
_DATASETS = flags.DEFINE_list("datasets", None, "Datasets whose search calls are recorded "
                              "(search; default: the 14 Strogatz sets).")
_ITERATIONS = flags.DEFINE_integer("iterations", 10, "Iterations of each recorded round (search).", lower_bound=1)
_CHECKPOINT = flags.DEFINE_string("checkpoint", None, "Model for the recorded rounds (search; "
                                  "default: the shipped one).")
_STEPS = flags.DEFINE_integer("steps", 20, "LM steps (jax fitter).", lower_bound=1)
_RESTARTS = flags.DEFINE_integer("restarts", 2, "LM starts per candidate (jax fitter).", lower_bound=1)
_SUB_ROWS = flags.DEFINE_integer("sub_rows", fit.SUB_ROWS,
                                 "Rows of the subsample the LM steps run on (0: all rows).", lower_bound=0)
_POLISH = flags.DEFINE_integer("polish", fit.POLISH, "LM steps on all rows after the subsample's.", lower_bound=0)
_LBFGS = flags.DEFINE_integer("lbfgs", 300, "L-BFGS-B max iterations (scipy fitter; grammar: "
                              "search candidates keep their round's budget).", lower_bound=1)
_LAYOUT = flags.DEFINE_enum("layout", None, list(fit.LAYOUTS), "How the jax fitter's calls "
                            "become instructions (fit.LAYOUTS; default: branch on the CPU, "
                            f"{fit.ACCEL_LAYOUT} elsewhere).")
_BACKEND = flags.DEFINE_string("backend", None, "Where the jax fitter's LM calls run "
                                "(fit.fit_backend): cpu times the host's cores beside a GPU; "
                                "default $LEE_JAX_FIT_BACKEND, else JAX's default backend.")
_COMPARE = flags.DEFINE_string("compare_backend", None, "Also time the jax fitter on this "
                                "backend (its default layout unless --layout) in the same "
                                "passes: e.g. gpu beside --backend=cpu on one machine.")
_UNROLL = flags.DEFINE_integer("unroll", fit.UNROLL, "Instructions (lanes layout) or levels "
                               "per loop iteration (not the branch layout); 0: all, no loop.", lower_bound=0)
_PIPELINED = flags.DEFINE_bool("pipelined", True, "Dispatch every LM call of a batch before "
                                "reading any back (false: each read back before the next).")
_LINEAR = flags.DEFINE_bool("linear", True, "Solve candidates affine in their constants by "
                            "one least-squares solve (fit.fit_linear) instead of LM.")
_REPEATS = flags.DEFINE_integer("repeats", 3, "Timed passes per fitter (the median is reported).", lower_bound=1)
_SEED = flags.DEFINE_integer("seed", 0, "Seed.", lower_bound=0)
_CPU_THREADS = flags.DEFINE_integer("cpu_threads", 0, "Threads of XLA's CPU pool in this "
                                    "process (cpu_threads.limit; 0: XLA's own, one per core). A set "
                                    "$LEE_JAX_CPU_THREADS comes first (cli.run applies it). "
                                    "1 is what each of 2 search workers gets on 2 cores.", lower_bound=0)
_COMPILE_ONLY = flags.DEFINE_bool("compile_only", False, "Compile the jax fitter's shapes (into "
                                   "the compilation cache) and exit: no timing, no scipy.")


def make_groups(n: int, batch: int, rows: int, rng: np.random.Generator, max_iter: int):
  """[(X, y, [nodes], max_iter)]: datasets from grammar expressions, each with `batch`
  skeletons to fit (as the search hands a dataset's candidates to the fitter together)."""
  groups, total = [], 0
  while total < n:
    truth, k = grammar.sample(rng)
    X = rng.uniform(-5, 5, (rows, k))
    y = evaluate.evaluate_numpy(truth, X)
    if not np.all(np.isfinite(y)) or np.ptp(y) == 0 or not E.constants(truth):
      continue
    nodes = []
    while len(nodes) < batch:
      if len(nodes) % 2 == 0:
        c = np.asarray(E.constants(truth))
        nodes.append(E.with_constants(truth, c * rng.uniform(0.5, 1.5, len(c))))
      else:
        node, k2 = grammar.sample(rng)
        if k2 <= k and E.constants(node):
          nodes.append(node)
    groups.append((X, y, nodes, max_iter))
    total += batch
  return groups


class _RecordingRound(search.Round):
  """A search round that keeps every fitter call it makes."""

  def __init__(self, *args, **kwargs):
    super().__init__(*args, **kwargs)
    self.calls = []  # (X, y, [nodes], max_iter) per call

  def fit(self, nodes: dict) -> dict:
    self.calls.append((*self.fit_rows, list(nodes.values()), self.max_iter))
    return super().fit(nodes)


def search_groups(names: list[str], iterations: int, seed: int, checkpoint: str | None):
  """[(X, y, [nodes], max_iter)]: every fitter call of one `fast` round (scipy fitter, mode
  combined, seed) of `iterations` on each dataset, in the order the round made them."""
  rounds = runner.fast_rounds(names, iterations, seed, checkpoint, _RecordingRound, fitter="scipy")
  return [g for r in rounds for g in r.calls if g[2]]


def timed(run):
  """(run(), seconds it took)."""
  t = time.perf_counter()
  out = run()
  return out, time.perf_counter() - t


def r2_of(node, X, y) -> float:
  """Train R2 clipped to [-1, 1] as the search scores it (a pole gives R2 = -1e21 with either
  fitter; unclipped, such pairs would swamp the paired differences)."""
  return float(np.clip(score.r2(y, evaluate.evaluate_numpy(node, X)), -1.0, 1.0))


def main(argv):
  del argv
  # The LM's compiled shapes on disk: a second run (another flag, the GPU lease's next step)
  # loads them instead of compiling again (a cold compile once ran past a 55 s limit there).
  compile_cache.enable()
  try:
    cpu_threads.limit(_CPU_THREADS.value or None)  # before JAX starts
    backend = fit.fit_backend(_BACKEND.value)
    other = _COMPARE.value and fit.fit_backend(_COMPARE.value)
  except ValueError as e:
    cli.fail(str(e))
  if _CANDIDATES.value == "grammar":
    groups = make_groups(_N.value, _BATCH.value, _ROWS.value, np.random.default_rng(_SEED.value),
                         _LBFGS.value)
    source = f"grammar candidates, {_ROWS.value} rows"
  else:
    names = datasets.resolve(_DATASETS.value, ["strogatz"])
    groups = search_groups(names, _ITERATIONS.value, _SEED.value, _CHECKPOINT.value)
    sizes = [len(nodes) for _, _, nodes, _ in groups]
    source = (f"the calls of {len(names)} `fast` rounds of {_ITERATIONS.value} iterations "
              f"({len(groups)} calls of {min(sizes)}-{max(sizes)} candidates, "
              f"{min(len(y) for _, y, _, _ in groups)}-{max(len(y) for _, y, _, _ in groups)} rows)")
  cands = [(node, X, y, max_iter) for X, y, nodes, max_iter in groups for node in nodes]
  layout = _LAYOUT.value or fit.default_layout(backend)
  other_layout = other and (_LAYOUT.value or fit.default_layout(other))

  def fit_jax(X, y, nodes, on=backend, how=layout):
    return fit.fit_batch(nodes, X, y, _STEPS.value, _RESTARTS.value, sub_rows=_SUB_ROWS.value,
                         polish=_POLISH.value, unroll=_UNROLL.value, layout=how,
                         pipelined=_PIPELINED.value, linear=_LINEAR.value, backend=on)

  def fit_other(X, y, nodes):
    return fit_jax(X, y, nodes, other, other_layout)

  _, t_first = timed(lambda: [fit_jax(X, y, nodes) for X, y, nodes, _ in groups])
  if other:
    for X, y, nodes, _ in groups:
      fit_other(X, y, nodes)
  if _COMPILE_ONLY.value:  # (a warm-up beside other work: gpu_session.sh's FIT_BENCH)
    print(f"compiled the jax fitter's shapes ({layout} layout on {backend}"
          + (f"; {other_layout} on {other}" if other else "") + f"): first pass {t_first:.1f} s")
    return
  # Passes of the three fitters alternate; each fitter's time is its median pass (a single
  # pass once held a 0.15 s stall, most likely a garbage-collector sweep, in a 0.25 s pass).
  passes = []  # (scipy, finite-difference scipy, jax) seconds per pass
  for _ in range(_REPEATS.value):
    sp, t_scipy = timed(lambda: [fit.fit_constants(n, X, y, it) for n, X, y, it in cands])
    fd, t_fd = timed(lambda: [fit.fit_constants(n, X, y, it, exact_gradient=False)
                              for n, X, y, it in cands])
    jx, t_jax = timed(lambda: [r for X, y, nodes, _ in groups for r in fit_jax(X, y, nodes)])
    jo, t_other = timed(lambda: [r for X, y, nodes, _ in groups for r in fit_other(X, y, nodes)]
                        ) if other else (None, 0.0)
    passes.append((t_scipy, t_fd, t_jax, t_other))
  t_scipy, t_fd, t_jax, t_other = (float(t) for t in np.median(passes, axis=0) / len(cands))

  def r2s(results):
    return np.array([r2_of(r.node, X, y) if r.ok else -np.inf
                     for r, (_, X, y, _) in zip(results, cands)])

  r_sp, r_jx = r2s(sp), r2s(jx)
  both = np.isfinite(r_sp) & np.isfinite(r_jx)
  d = r_jx[both] - r_sp[both]
  sub = (f"on {_SUB_ROWS.value} rows + {_POLISH.value} on all beyond {2 * _SUB_ROWS.value} rows"
         if _SUB_ROWS.value > 0 else "on all rows")
  path = {"branch": "branch layout, 2 lanes per instruction",
          "lanes": f"lanes layout, 8 per instruction, unroll {_UNROLL.value}",
          "levels": f"levels layout, an instruction per tree level, unroll {_UNROLL.value}"}[layout]
  path += f" on {backend}" + (f" (JAX's default: {jax.default_backend()})"
                              if backend != jax.default_backend() else "")
  if backend == "cpu" and cpu_threads.pool_threads() is not None:
    path += f", {cpu_threads.pool_threads()} XLA CPU threads"
  budgets = sorted({it for *_, it in cands})
  if _LINEAR.value:
    n_lin = sum(fit.fit_linear(n, X, y, None, max(np.var(y), 1e-12)) is not None
                for n, X, y, _ in cands)
    path += f"; {n_lin} of them affine in their constants, solved by least squares"
  print(f"{len(cands)} candidates ({source}); jax ({path}): {_STEPS.value} LM steps "
        f"{sub} x {_RESTARTS.value} starts; scipy: L-BFGS-B <= "
        f"{'/'.join(map(str, budgets))} iterations")
  r_fd = r2s(fd)
  print(f"time per candidate: scipy with finite-difference gradients {1e3 * t_fd:.2f} ms, "
        f"scipy with exact gradients {1e3 * t_scipy:.2f} ms, jax {1e3 * t_jax:.2f} ms")
  print(f"speed-up vs finite-difference scipy: exact-gradient scipy {t_fd / t_scipy:.1f}x, "
        f"jax {t_fd / t_jax:.2f}x; jax vs exact-gradient scipy {t_scipy / t_jax:.2f}x")
  if other:
    r_jo = r2s(jo)
    same = np.isfinite(r_jo) == np.isfinite(r_jx)
    close = np.isclose(np.nan_to_num(r_jo, neginf=-9), np.nan_to_num(r_jx, neginf=-9), atol=1e-6)
    print(f"jax on {other} ({other_layout} layout) in the same passes: {1e3 * t_other:.2f} ms, "
          f"{t_fd / t_other:.2f}x finite-difference scipy, {t_jax / t_other:.2f}x jax on "
          f"{backend}; train R2 within 1e-6 of it on {np.mean(same & close):.1%} of candidates")
  for name, r in (("scipy-fd", r_fd), ("scipy", r_sp), ("jax", r_jx)):
    ok = r[np.isfinite(r)]
    print(f"{name:>5} R2: failed {np.sum(~np.isfinite(r))}, median {np.median(ok):.6f}, "
          f"quartiles {np.percentile(ok, 25):.4f} / {np.percentile(ok, 75):.6f}, "
          f">= 0.999999: {np.mean(ok >= 0.999999):.1%}; median of all {len(r)}, a failed fit "
          f"as the worst: {np.median(np.where(np.isfinite(r), r, -np.inf)):.6f}")
  # Unpaired medians mix in the fits only one fitter failed; on the candidates both fitted:
  print(f"median R2 where both fitted: jax {np.median(r_jx[both]):.6f}, "
        f"scipy {np.median(r_sp[both]):.6f}")
  print(f"paired jax - scipy R2 on {both.sum()} both-finite: median {np.median(d):+.2e}, "
        f"jax better by >1e-4 in {np.mean(d > 1e-4):.1%}, worse by >1e-4 in {np.mean(d < -1e-4):.1%}, "
        f"min {d.min():+.3f}, max {d.max():+.3f}")


if __name__ == "__main__":
  cli.run(main, ValueError)
