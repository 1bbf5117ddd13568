"""Constant fitting: scipy L-BFGS-B on the training fold (paper §3.5, App. H).

The objective is the mean squared error divided by var(y) (so tolerances mean the same on
every dataset; the minimiser is the MSE's). Tolerances are tight (ftol 1e-13 against an
objective of scale 1 - R2) so exact skeletons reach R2 ~ 1 - 1e-12 instead of stopping at
scipy's default 2e-9. Its gradient in the constants is exact, from a
forward-mode pass over the tree (`value_and_jacobian`), so one objective call is one pass
instead of scipy's (n_constants + 1) finite-difference passes. L-BFGS-B runs with its BLAS
on one thread (`one_blas_thread`).

Nothing a decoder emits can raise here: a start that is non-finite on the fit rows, an
overflow during the search, or any scipy error is a `FitResult` with ok=False and a reason,
which the search counts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os

import numpy as np
import scipy.optimize

from lee_jax import datasets
from lee_jax import expr as E
from lee_jax import vocab

_BAD = 1e30  # objective value for non-finite predictions (finite: L-BFGS-B backtracks from it)


@functools.cache
def _blas_controller():
  try:
    import threadpoolctl
  except ImportError:  # an optional speed-up (a bare device image may lack it)
    return None
  return threadpoolctl.ThreadpoolController()


def one_blas_thread():
  """A context in which OpenBLAS/MKL use one thread. L-BFGS-B's BLAS calls on a few
  constants gain nothing from threads, and when the cores are busy (XLA, SymPy helpers,
  other rounds or shards) the waiting BLAS threads made it 4-6x slower: 15-23 -> 3.6-4.6
  ms per search candidate on a loaded 2-core box, identical constants (BUILD_NOTES
  "Constant fitting with one BLAS thread")."""
  ctl = _blas_controller()
  return contextlib.nullcontext() if ctl is None else ctl.limit(limits=1, user_api="blas")


@dataclasses.dataclass(frozen=True)
class FitResult:
  node: E.Node  # the tree with the fitted constants (the input tree when not ok)
  values: np.ndarray  # fitted constants in prefix order
  nmse: float  # MSE / var(y) on the fit rows (inf when not ok)
  iterations: int  # scipy's for this node; the JAX fitter's LM steps for the whole call
  ok: bool
  reason: str = ""  # why not ok: 'nonfinite_start', 'nonfinite_end', 'error: ...'


def value_and_jacobian(node: E.Node, X: np.ndarray, values: np.ndarray):
  """Tree on X [N, k] with constants `values` -> (y [N], dy/dvalues [N, n]) in float64.

  Same protected semantics as evaluate.evaluate_numpy: non-finite values become NaN.
  Constants take their slots in the order the walk meets them (prefix order, as
  E.constants and E.with_constants), not by identity: SymPy's trees reuse one subtree
  object for (x + c)^4, and both copies must be slots of their own. Where an argument's
  derivative is 0 the chain rule gives 0 whatever the function's derivative (sqrt at 0,
  whose derivative is inf: inf * 0 would make the row NaN and the fit refuse the tree).
  """
  n_c, n = len(values), X.shape[0]
  slot = iter(range(n_c))

  def ev(nd: E.Node):
    if nd.name in ("const", "C"):
      k = next(slot)
      j = np.zeros((n, n_c))
      j[:, k] = 1.0
      return np.full(n, values[k]), j
    if vocab.is_variable(nd.name):
      return X[:, vocab.variable_index(nd.name)], np.zeros((n, n_c))
    args = [ev(c) for c in nd.children]
    a, da = args[0]
    name = nd.name
    if name == "add":
      b, db = args[1]
      v, d = a + b, da + db
    elif name == "sub":
      b, db = args[1]
      v, d = a - b, da - db
    elif name == "mul":
      b, db = args[1]
      v, d = a * b, da * b[:, None] + a[:, None] * db
    elif name == "div":
      b, db = args[1]
      v = a / b
      d = (da - v[:, None] * db) / b[:, None]
    else:
      v = vocab.NUMPY_FN[name](a)
      d = np.where(da == 0, 0.0, _unary_derivative(name, a, v)[:, None] * da)
    bad = ~np.isfinite(v)
    return np.where(bad, np.nan, v), np.where(bad[:, None], np.nan, d)

  with np.errstate(all="ignore"):
    return ev(node)


def _unary_derivative(name: str, a: np.ndarray, v: np.ndarray) -> np.ndarray:
  return {
      "sin": lambda: np.cos(a), "cos": lambda: -np.sin(a), "tan": lambda: 1 + v * v,
      "tanh": lambda: 1 - v * v, "exp": lambda: v, "log": lambda: 1 / a,
      "sqrt": lambda: 0.5 / v, "sq": lambda: 2 * a, "cube": lambda: 3 * a * a,
      "abs": lambda: np.sign(a), "neg": lambda: -np.ones_like(a),
  }[name]()


def row_weights(weights: np.ndarray | None, n: int) -> np.ndarray | None:
  """Per-row weights scaled to mean 1 (None stays None: every row counts once), so a
  weighted mean of squares is mean(w * r**2)."""
  if weights is None:
    return None
  w = datasets.check_weights(weights, n, "weights")  # a DataError is a ValueError
  return w / w.mean()


def _weighted_var(y: np.ndarray, w: np.ndarray | None) -> float:
  if w is None:
    return float(np.var(y))
  return float(np.mean(w * (y - np.mean(w * y)) ** 2))


def _nmse_scale(y: np.ndarray, w: np.ndarray | None) -> float:
  """The (weighted) variance the NMSE divides by, floored for a (near) constant target. Below
  a mean square of 1 the floor shrinks with it: a fixed 1e-12 was most of the variance of a
  target near 1e-12 (1e-15 sqrt(x0^2 + x1^2) snapped to 0); from 1 up it is 1e-12 as it was."""
  mean_sq = float(np.mean(np.square(y))) if w is None else float(np.mean(w * np.square(y)))
  return max(_weighted_var(y, w), 1e-12 * min(1.0, mean_sq), np.finfo(np.float64).tiny)


def _nmse(tree: E.Node, X: np.ndarray, y: np.ndarray, w: np.ndarray | None,
          scale: float) -> float:
  """(Weighted) mean squared error of a plain float64 evaluation of `tree`, over `scale`;
  inf when it is not finite."""
  from lee_jax import evaluate  # deferred: evaluate imports JAX
  with np.errstate(all="ignore"):
    r = evaluate.evaluate_numpy(tree, X) - y
    f = float(np.mean(r * r if w is None else w * r * r)) / scale
  return f if np.isfinite(f) else np.inf


def fit_constants(node: E.Node, X: np.ndarray, y: np.ndarray, max_iter: int,
                  exact_gradient: bool = True, weights: np.ndarray | None = None,
                  free: np.ndarray | None = None) -> FitResult:
  """Fit the constants of `node` to (X, y), starting from its current values; with per-row
  weights the objective is the weighted mean squared error.

  exact_gradient=False lets scipy take finite differences instead (the slower reference that
  benchmarks compare against). free: a boolean mask over the constants (prefix order); the
  others keep their values (None: all are fitted).
  """
  X, y = np.asarray(X, np.float64), np.asarray(y, np.float64)
  w = row_weights(weights, len(y))
  every = np.asarray(E.constants(node), np.float64)
  free = np.ones(len(every), bool) if free is None else np.asarray(free, bool)
  start = every[free]
  scale = _nmse_scale(y, w)

  def full(c):
    out = every.copy()
    out[free] = c
    return out

  def value(c):  # the finite-difference path: a plain evaluation, as the paper's reference
    f = _nmse(E.with_constants(node, full(c)), X, y, w, scale)
    return f if np.isfinite(f) else _BAD

  def objective(c):
    pred, jac = value_and_jacobian(node, X, full(c))
    jac = jac[:, free]
    r = pred - y
    if not np.all(np.isfinite(r)) or not np.all(np.isfinite(jac)):
      return _BAD, np.zeros_like(c)
    with np.errstate(all="ignore"):
      f = float(np.mean(r * r if w is None else w * r * r)) / scale
      g = 2.0 * ((r if w is None else w * r) @ jac) / (len(y) * scale)
    if not (np.isfinite(f) and np.all(np.isfinite(g))):
      return _BAD, np.zeros_like(c)
    return f, g

  try:
    f0, _ = objective(start)
    if f0 >= _BAD:
      return FitResult(node, every, np.inf, 0, False, "nonfinite_start")
    if len(start) == 0 or max_iter <= 0:
      return FitResult(node, every, f0, 0, True)
    fun = objective if exact_gradient else value
    with one_blas_thread():
      res = scipy.optimize.minimize(fun, start, jac=exact_gradient or None, method="L-BFGS-B",
                                    options={"maxiter": int(max_iter), "ftol": 1e-13,
                                             "gtol": 1e-10})
    values = np.asarray(res.x, np.float64)
    f = float(res.fun)
    if f >= _BAD or not np.all(np.isfinite(values)):
      return FitResult(node, every, np.inf, int(res.nit), False, "nonfinite_end")
    if f > f0:  # line-search trouble can end above the start; keep the better point
      values, f = start, f0
    values = full(values)
    return FitResult(E.with_constants(node, values), values, f, int(res.nit), True)
  except (ArithmeticError, ValueError, np.linalg.LinAlgError) as e:
    return FitResult(node, every, np.inf, 0, False, f"error: {type(e).__name__}")


# --- snapping a fitted formula: negligible terms, near-integer constants ---------------------

SNAP_TOL = 1e-9  # NMSE (a fraction of the target's variance) all of a node's snaps may cost
SNAP_NEAR = 1e-4  # constants tried: |c| <= this (-> 0), or this close, relatively, to an
# integer or to an earlier constant's magnitude


def without_one_term(node: E.Node):
  """Every tree that is `node` with one operand of one of its sums dropped
  (add(a, b) -> a or b; sub(a, b) -> a or neg(b)), outermost sums first."""
  if node.name in ("add", "sub"):
    a, b = node.children
    yield a
    yield b if node.name == "add" else E.op("neg", b)
  for i, child in enumerate(node.children):
    for v in without_one_term(child):
      yield E.Node(node.name, node.children[:i] + (v,) + node.children[i + 1:], node.value)


def snap(node: E.Node, X: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None,
         tol: float = SNAP_TOL) -> E.Node:
  """The node without the terms and constants that change nothing measurable: summands
  dropped, then fitted constants near 0 or an integer set to it, and one near another's
  magnitude set to that, where all of it together raises the NMSE on (X, y) by at most
  `tol`; the node itself if nothing goes.

  Either fitter can only shrink a term that should vanish (3.6e-188 * exp(-x), written
  exp(-431 - x) in the tree; x - 3.4e-7) or leave a factor of 1.0000002: each costs nodes in
  the answer, none changes a prediction. Integer constants cancel in SymPy
  (`complexity.constant_pattern` keeps them), so a snapped factor drops out of the
  simplified formula and its complexity.
  """
  X, y = np.asarray(X, np.float64), np.asarray(y, np.float64)
  w = row_weights(weights, len(y))
  var = _nmse_scale(y, w)

  def nmse(tree: E.Node) -> float:
    return _nmse(tree, X, y, w, var)

  limit = nmse(node) + tol  # measured from the fit, so the changes cannot add up past tol
  if not np.isfinite(limit):
    return node
  out = node
  while True:  # each accepted drop shortens the tree
    shorter = next((t for t in without_one_term(out) if nmse(t) <= limit), None)
    if shorter is None:
      break
    out = shorter
  values = [float(v) for v in E.constants(out)]
  for i, v in enumerate(values):
    target = 0.0 if abs(v) <= SNAP_NEAR else float(np.round(v))
    if target == v or abs(v - target) > SNAP_NEAR * max(1.0, abs(v)):
      continue
    trial = values[:i] + [target] + values[i + 1:]
    if nmse(E.with_constants(out, trial)) <= limit:
      values = trial
  # One constant a law holds in two places, fitted apart (0.5 u^2 + 0.5000000002 v^2): the
  # later set to the earlier's magnitude, so SymPy writes it once (I.13.4's m (u^2 + v^2 +
  # w^2) / 2, 13 nodes, not 18)
  for i, v in enumerate(values):
    if float(v).is_integer():  # a whole number (snapped just above, perhaps) stays one
      continue
    same = next((u for u in values[:i] if u and abs(u) != abs(v)
                 and abs(abs(v) - abs(u)) <= SNAP_NEAR * abs(u)), None)
    if same is not None:
      trial = values[:i] + [float(np.copysign(abs(same), v))] + values[i + 1:]
      if nmse(E.with_constants(out, trial)) <= limit:
        values = trial
  out = E.with_constants(out, values)
  return node if out == node else out


# --- constants that enter linearly: one least-squares solve (--fitter=jax) ------------------
#
# Most decoded candidates are affine in their constants (63% of those with constants in 14
# recorded `fast` Strogatz rounds: c0 * sin(x0) + c1 * x1, (x1 + c0) * x0, ...). Their
# least-squares constants are one linear solve in float64, the global optimum that L-BFGS-B
# or LM can only approach from the decoded start, at a fraction of an LM call's cost.

class _NotAffine(Exception):
  pass


def _scan_affine(node: E.Node) -> tuple[int, bool]:
  """(number of constants, affine in them)."""
  if node.name in ("const", "C"):
    return 1, True
  kids = [_scan_affine(c) for c in node.children]
  n = sum(k for k, _ in kids)
  if not n:
    return 0, True
  if node.name in ("add", "sub", "neg"):
    return n, all(aff for _, aff in kids)
  if node.name == "mul":
    (n_a, aff_a), (n_b, aff_b) = kids
    return n, (not n_a and aff_b) or (not n_b and aff_a)
  if node.name == "div":
    (_, aff_a), (n_b, _) = kids
    return n, aff_a and not n_b
  return n, False  # a constant inside a unary function


def affine_in_constants(node: E.Node) -> bool:
  """Whether the tree is offset + sum(column_k * constant_k) with constant-free offset and
  columns (each constant slot counted apart; no constants: True)."""
  return _scan_affine(node)[1]


def _affine_parts(node: E.Node, X: np.ndarray, slots: list):
  """(value, None, None) for a subtree without constants, else (None, offset, {slot: column})
  with subtree = offset + sum(column * constant); slots collects constant nodes in prefix
  order. Raises _NotAffine where a constant enters nonlinearly. (`value_and_jacobian` at
  zero constants gives the same offset and columns, identically on 673 search candidates,
  but 1.8x slower: it carries a dense [N, M] Jacobian through every node;
  /work/scratch/s18/vj.py.)"""
  name = node.name
  if name in ("const", "C"):
    slots.append(node)
    return None, 0.0, {len(slots) - 1: 1.0}
  if not node.children:
    return X[:, vocab.variable_index(name)], None, None
  parts = [_affine_parts(c, X, slots) for c in node.children]
  if all(v is not None for v, _, _ in parts):
    return vocab.NUMPY_FN[name](*(v for v, _, _ in parts)), None, None
  if name == "neg":
    _, o, c = parts[0]
    return None, -o, {k: -x for k, x in c.items()}
  if len(parts) == 1:
    raise _NotAffine
  (va, oa, ca), (vb, ob, cb) = parts
  if name in ("add", "sub"):
    oa, ca = (va, {}) if va is not None else (oa, ca)
    ob, cb = (vb, {}) if vb is not None else (ob, cb)
    if name == "sub":
      ob, cb = -ob, {k: -x for k, x in cb.items()}
    return None, oa + ob, {**ca, **cb}
  if name == "mul" and va is not None:
    return None, va * ob, {k: va * x for k, x in cb.items()}
  if name in ("mul", "div") and vb is not None:
    f = vocab.NUMPY_FN[name]
    return None, f(oa, vb), {k: f(x, vb) for k, x in ca.items()}
  raise _NotAffine


def lstsq(A: np.ndarray, t: np.ndarray) -> np.ndarray:
  """The least-squares solution of A c = t by numpy's SVD with A's columns first scaled to a
  largest |value| of 1: the rank cut-off then compares directions, not units (beside a
  constant column, x^2 with x ~ 1e-8 was cut off and c0 + c1 x^2 fitted the mean). Where A
  is rank-deficient the answer is the min-norm one of the scaled columns (c0 + c1 with two
  constant columns: each half, as numpy's; [x, 2x]: not numpy's split)."""
  with np.errstate(all="ignore"):
    scale = np.max(np.abs(A), axis=0, initial=0.0)
    scale = np.where(np.isfinite(scale) & (scale > 0), scale, 1.0)
    return np.linalg.lstsq(A / scale, t, rcond=None)[0] / scale


def fit_linear(node: E.Node, X: np.ndarray, y: np.ndarray, w: np.ndarray | None,
               var: float) -> FitResult | None:
  """The least-squares constants of a tree affine in them (float64; w: `row_weights`, var:
  the fit rows' (weighted) variance); None when a constant enters nonlinearly or the tree is
  not finite on every fit row for any constants (numpy raises on the first overflow, log
  of 0, 0/0, ...: `evaluate_numpy` would make that row NaN), so the caller fits it otherwise.
  A tree without constants is just scored."""
  slots: list = []
  try:
    with np.errstate(over="raise", divide="raise", invalid="raise", under="ignore"):
      value, offset, columns = _affine_parts(node, X, slots)
      if value is not None:  # no constants
        values, r = np.zeros(0), value - y
      else:
        A = np.empty((len(y), len(slots)))
        for k in range(len(slots)):
          A[:, k] = columns[k]  # (1.0 for a bare constant: broadcast)
        t = y - offset
        if w is None:  # lstsq: SVD, so c0 + c1 (rank-deficient) gets the min-norm solution
          values = lstsq(A, t)
        else:
          rw = np.sqrt(w)
          values = lstsq(A * rw[:, None], t * rw)
        r = A @ values - t
      f = float(np.mean(r * r if w is None else w * r * r)) / var
  except (_NotAffine, FloatingPointError, np.linalg.LinAlgError, IndexError):
    return None  # (IndexError: a variable X lacks; the LM path reports it)
  if not (np.isfinite(f) and np.all(np.isfinite(values))):
    return None
  if not len(values):
    return FitResult(node, values, f, 0, True)
  return FitResult(E.with_constants(node, values), values, f, 1, True)


def least_squares(node: E.Node, X: np.ndarray, y: np.ndarray,
                  weights: np.ndarray | None = None) -> E.Node:
  """node with the (weighted) least-squares constants `fit_linear` gives it, or node itself
  where they enter nonlinearly or the solve fails."""
  X, y = np.asarray(X, np.float64), np.asarray(y, np.float64)
  w = row_weights(weights, len(y))
  solved = fit_linear(node, X, y, w, _nmse_scale(y, w))
  return node if solved is None else solved.node


# --- batched JAX fitter (--fitter=jax) -------------------------------------------------------
#
# All candidates of a call are fitted at once. The trees are compiled on the host into one
# straight-line program (program.py: about one operator per node, ready nodes of one operator class
# packed into one instruction), so a batch costs about what its nodes cost, not 15 operators
# per token. Levenberg-Marquardt runs under jit on every (candidate, start) lane together; the
# residual's Jacobian in the constants comes from the program's forward-mode channels (one per
# constant slot), computed at each trial point so an accepted step needs no second pass. Lanes
# stop on an exact fit, a negligible accepted improvement, or a damping grown through ~10
# rejections; the call ends when every lane has stopped or after `steps`. float32: exact skeletons reach
# R2 ~ 1 - 1e-7 rather than scipy's 1 - 1e-12.

MAX_CONSTS = 8  # candidates with more constants go to scipy
SUB_ROWS = 128  # rows of the subsample most LM steps run on (bench_fit.py: --sub_rows)
POLISH = 4  # LM steps on every row after the subsample's
# Instructions per loop iteration of the accelerators' layouts ("lanes", "levels"): each
# iteration of an XLA while loop can cost a predicate read back on a GPU. 0 (straight-line
# code) ran "levels" at 0.76 against 0.95 ms per candidate on an H200 and 4-6x faster on the
# CPU, but compiles 4x longer (13-16 s per shape on the CPU), so the default keeps the loop
# (BUILD_NOTES, "A level layout for accelerators", "Fourth GPU lease").
UNROLL = 1
# How a call's trees become instructions (`fit_batch(layout=)`, `_SHAPES`): "branch" (the
# CPU's default) branches to one operator class per instruction of 2 lanes and runs only the
# real instructions; "lanes" (8 lanes per instruction) and "levels" (an instruction per tree
# level, each lane its own class: as many steps as the trees are deep, ~6-8 for 16 grammar
# trees instead of 20-30) compute every class and run the padded schedule, without
# data-dependent control flow. On an H200 "levels" measured 0.95 ms per candidate and
# "lanes" 0.99 (1.10 in the second lease): both chains of small launches, the LM's steps
# rather than the program's loop (BUILD_NOTES, "Fourth GPU lease"); "levels" stays the
# accelerators' default.
LAYOUTS = ("branch", "lanes", "levels")
ACCEL_LAYOUT = "levels"
FLOAT32_SAFE = 1e15  # larger |y| anywhere: scipy
# Where the LM calls run (`fit_batch(backend=)`): None is JAX's default backend; "cpu" the
# host's cores even beside a GPU. The fits are small and latency-bound: an H200 ran every
# accelerator layout at 0.76-0.99 ms per grammar candidate, the 2-core CPU's branch layout
# 0.29-0.38 ms (BUILD_NOTES, "Fourth GPU lease"). $LEE_JAX_FIT_BACKEND sets it for a whole
# process (a search's worker processes inherit it), so a lease can time both.
BACKEND = os.environ.get("LEE_JAX_FIT_BACKEND") or None


def fit_backend(backend: str | None = None) -> str:
  """The platform `fit_batch` runs its LM calls on: backend, else BACKEND, else JAX's
  default; a clear error for one this JAX does not have."""
  import jax

  name = backend or BACKEND or jax.default_backend()
  try:
    jax.devices(name)
  except RuntimeError:
    raise ValueError(f"the fitter's backend {name!r} is not available here (JAX has "
                     f"{jax.default_backend()!r}; LEE_JAX_FIT_BACKEND / backend=)") from None
  return name


def default_layout(backend: str | None = None) -> str:
  """`fit_batch`'s layout on its backend (`fit_backend`): "branch" on the CPU, else
  ACCEL_LAYOUT."""
  return _layout_on(fit_backend(backend))


def _layout_on(platform: str) -> str:
  return "branch" if platform == "cpu" else ACCEL_LAYOUT


def _solve_spd(A, b):
  """x with A x = b for symmetric positive definite A [..., M, M] (b [..., M]): Gaussian
  elimination unrolled over M (no pivoting: A is positive definite). XLA fuses it into one
  elementwise pass over the batch; jnp.linalg.solve's batched LAPACK calls cost 10-57 us per
  LM step on the CPU at M = 2-8, this 0.3-6 (/work/scratch/s18/solve_micro.py). A singular
  system gives non-finite entries, which the caller discards."""
  import jax.numpy as jnp

  m = A.shape[-1]
  a = [[A[..., i, j] for j in range(m)] for i in range(m)]
  b = [b[..., i] for i in range(m)]
  for k in range(m):
    for i in range(k + 1, m):
      f = a[i][k] / a[k][k]
      for j in range(k + 1, m):
        a[i][j] = a[i][j] - f * a[k][j]
      b[i] = b[i] - f * b[k]
  x = [None] * m
  for i in reversed(range(m)):
    s = b[i]
    for j in range(i + 1, m):
      s = s - a[i][j] * x[j]
    x[i] = s / a[i][i]
  return jnp.stack(x, -1)


def _lm(classes, lanes, args, roots, used, pre, cmask, c0, X, y, rw, Xs, ys, sw, steps: int,
        polish: int, select_all: bool, unroll: int = 1):
  """LM over lanes. The program's first `pre` instructions are constant-free (`Program.pre`):
  they run once per buffer. cmask [B, M] marks real constant slots, c0 [B, R, M] the starts,
  X [N, D], y/rw [N] the fit rows and the square roots of their weights (0: padding); Xs/ys/sw
  a subsample of them. `steps` run on the subsample, then `polish` on every row from the
  tree's best start there (polish = 0: `steps` on every row from every start, the subsample
  unused). Returns (c [B, R', M], loss [B, R'], LM steps run) with loss = MSE / var(y) on
  every row (inf if undefined); R' = R without a polish, else 1."""
  import jax
  import jax.numpy as jnp

  from lee_jax import program  # deferred: keeps `import lee_jax.fit` light for scipy users

  M = c0.shape[-1]
  free = cmask[:, None, :]  # [B, 1, M]
  eye = jnp.eye(M, dtype=c0.dtype)[None, None]

  def solve(c0, X, y, root_w, steps):
    # Square roots come from the host: XLA's CPU sqrt need not return exactly 1 for 1, and
    # unweighted fits should not move.
    w = root_w * root_w
    real = w > 0  # (`used` is the program's instruction count)
    n = jnp.maximum(w.sum(), 1)
    mean = jnp.sum(jnp.where(real, w * y, 0.0)) / n
    var = jnp.maximum(jnp.sum(jnp.where(real, w * (y - mean) ** 2, 0.0)) / n, 1e-12)
    scale = 1.0 / jnp.sqrt(n * var)  # sum of squared residuals = MSE / var(y)

    def res_jac(c, buf):
      buf, y_hat, J = program.run_on(buf, classes, lanes, args, roots, used, c, jacobian=True,
                                     select_all=select_all, unroll=unroll, first=pre)
      # residuals times root_w: their sum of squares is the weighted one
      r = jnp.where(real[None, None], (y_hat - y[None, None]) * root_w[None, None], 0.0) * scale
      J = J * (root_w * scale)[None, None, None]
      f = jnp.where(jnp.all(jnp.isfinite(r), -1), jnp.sum(r * r, -1), jnp.inf)
      return r, J, f, buf  # [B, R, N], [B, R, M, N], [B, R]

    def body(state):
      i, c, r, J, f, lam, active, buf = state
      Jm = jnp.where(free[..., None] & jnp.isfinite(J), J, 0.0)
      rr = jnp.where(jnp.isfinite(r), r, 0.0)
      # Rows last, the contracted axis: XLA's CPU dot then takes all (candidate, start)
      # systems in one call (rows in the middle cost ~14% of a search's fitting).
      A = jnp.einsum("brmn,brkn->brmk", Jm, Jm)
      g = jnp.einsum("brmn,brn->brm", Jm, rr)
      # Marquardt scaling; unused slots get an identity row so every system stays regular.
      diag = jnp.diagonal(A, axis1=-2, axis2=-1)
      A = A + (lam[..., None] * (diag + 1e-9) + jnp.where(free, 0.0, 1.0))[..., None] * eye
      delta = _solve_spd(A, -g)
      c_new = c + jnp.where(free & jnp.isfinite(delta) & active[..., None], delta, 0.0)
      r_new, J_new, f_new, buf = res_jac(c_new, buf)
      better = active & (f_new < f)
      negligible = better & (f - f_new <= 1e-6 * f)
      keep = better[..., None]
      c = jnp.where(keep, c_new, c)
      r = jnp.where(keep, r_new, r)
      J = jnp.where(keep[..., None], J_new, J)
      f = jnp.where(better, f_new, f)
      lam = jnp.clip(jnp.where(better, lam * 0.3, lam * 10.0), 1e-9, 1e9)
      active = active & ~negligible & (f > 1e-14) & (lam < 1e6)
      return i + 1, c, r, J, f, lam, active, buf

    # One buffer for every evaluation of the call: each rewrites all it reads.
    buf = program.buffer(c0.shape[0], classes.shape[0], c0.shape[1:], X, jacobian=True,
                         width=lanes.shape[1])
    if not select_all:  # (select_all runs every instruction at each evaluation)
      buf = program.run_on(buf, classes, lanes, args, roots, pre, c0, jacobian=True)[0]
    r0, J0, f0, buf = res_jac(c0, buf)
    active = jnp.isfinite(f0) & (f0 > 1e-14) & jnp.any(free, -1)
    lam0 = jnp.full(f0.shape, 1e-3, c0.dtype)
    state = (jnp.int32(0), c0, r0, J0, f0, lam0, active, buf)
    state = jax.lax.while_loop(lambda s: (s[0] < steps) & jnp.any(s[6]), body, state)
    return state[1], state[4], state[0]

  if polish == 0:
    return solve(c0, X, y, rw, steps)
  # Most steps on a subsample: a step's cost is linear in rows, and a fit that has converged
  # on a few hundred rows needs only a few Gauss-Newton-like steps on all of them. A lane
  # whose subsample fit failed (non-finite) polishes from its start instead.
  # Only each tree's best start on the subsample is polished (the float64 check keeps one
  # winner anyway): the polish's rows cost as much as the subsample's 20 steps, and polishing
  # every start bought no R2 on bench_fit's calls (BUILD_NOTES, "Polish the best start").
  c_sub, f_sub, n_sub = solve(c0, Xs, ys, sw, steps)
  start = jnp.where(jnp.isfinite(f_sub)[..., None], c_sub, c0)
  best = jnp.argmin(f_sub, axis=1)  # [B]; every start failed: 0, the decoded constants
  start = jnp.take_along_axis(start, best[:, None, None], axis=1)  # [B, 1, M]
  c, f, n = solve(start, X, y, rw, polish)
  return c, f, n_sub + n


_LM_CACHE: dict = {}


def _lm_jit(steps: int, polish: int, select_all: bool, unroll: int = 1):
  import jax

  key = (steps, polish, select_all, unroll)
  if key not in _LM_CACHE:
    _LM_CACHE[key] = jax.jit(lambda *a: _lm(*a, steps=steps, polish=polish,
                                            select_all=select_all, unroll=unroll))
  return _LM_CACHE[key]


def fit_batch(nodes: list[E.Node], X: np.ndarray, y: np.ndarray, steps: int = 20,
              restarts: int = 2, seed: int = 0, layout: str | None = None,
              sub_rows: int = SUB_ROWS, polish: int = POLISH,
              weights: np.ndarray | None = None, unroll: int = UNROLL,
              pipelined: bool = True, linear: bool = True,
              backend: str | None = None, max_iter: int = 100) -> list[FitResult]:
  """Fit every node's constants at once on the device; one FitResult per node (aligned).
  With per-row weights the objective is the weighted mean squared error.

  Start 0 is the decoded constants, the others c0 + 0.5 (|c0| + 1) eps. With more than
  2 * sub_rows rows, `steps` LM steps run on a random subsample of sub_rows rows and then
  `polish` steps on all of them from each node's best start there; otherwise (or with
  sub_rows = 0) `steps` on all. Nodes with more than MAX_CONSTS constants, or all nodes
  when some |y| >= FLOAT32_SAFE, are fitted by
  scipy L-BFGS-B in float64 (`fit_constants`). `layout` (LAYOUTS; default "branch" on the
  CPU, ACCEL_LAYOUT elsewhere): "lanes" and "levels" evaluate every operator per instruction
  instead of branching, over the whole padded schedule (program.run(select_all=True)),
  `unroll` instructions (lanes) or levels per loop iteration.
  pipelined=False reads each call back before scheduling the next (the order before the
  twelfth session; `bench_fit.py --pipelined=false` times the difference). linear=True
  (default) solves trees affine in their constants exactly instead (`fit_linear`), and
  scores trees without constants; `bench_fit.py --nolinear` times the difference.
  backend: where the LM calls run (`fit_backend`: default BACKEND, else JAX's default).
  max_iter: L-BFGS-B iterations of the nodes scipy fits (the round's budget, as the scipy
  fitter's).
  """
  import jax

  backend = fit_backend(backend)
  device = jax.devices(backend)[0]
  layout = layout or _layout_on(backend)  # backend already resolved: no second check
  if layout not in LAYOUTS:
    raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
  select_all = layout != "branch"
  X, y = np.asarray(X, np.float64), np.asarray(y, np.float64)
  w = row_weights(weights, len(y))
  out: list[FitResult | None] = [None] * len(nodes)
  groups: dict[int, list[tuple[int, E.Node]]] = {}  # constant slots -> (index, node)
  # float32 squares of residuals, summed over rows, overflow for targets beyond ~1e15
  # (e.g. exp(exp(x)) data): there every candidate goes to float64 scipy.
  float32_safe = bool(np.all(np.abs(y) < FLOAT32_SAFE))
  host = []  # (index, solve by least squares) of the nodes fitted on the host, in float64
  for i, node in enumerate(nodes):
    n_c, affine = _scan_affine(node)
    if linear and affine:
      host.append((i, True))
    elif n_c == 0 or n_c > MAX_CONSTS or not float32_safe:  # nothing to fit, too many, too big
      host.append((i, False))
    else:
      groups.setdefault(next(m for m in _SLOTS if n_c <= m), []).append((i, node))
  # One call per slot count: each slot is a forward-mode channel over every lane, so a single
  # 5-constant candidate would otherwise make the whole batch pay for 8.
  # Every call is dispatched before any is read back: JAX runs them asynchronously, so
  # the host schedules the next call and checks the last one in float64 while the device
  # (or XLA's thread on the CPU) runs the LM.
  var = _nmse_scale(y, w)  # of the fit rows: every float64 error divides by it
  calls = []  # (part, its FitResults, or the started call they come from when pipelined)
  for mc, items in sorted(groups.items()):
    for part, prog in _parts(items, X.shape[1], mc, layout):
      with jax.default_device(device):  # the LM's numpy inputs go there, and so it runs there
        started = _start_group([n for _, n in part], prog, X, y, w, steps, restarts, seed + mc,
                               select_all, sub_rows, polish, unroll)
      calls.append((part, started if pipelined else _finish_group(*_check_start(*started, var))))
  # While the LM runs: the float64 check's first half, least squares (a tree whose pass
  # overflows is non-finite on some row for any constants; scipy's path says so), then scipy.
  if pipelined:
    calls = [(part, _check_start(*started, var)) for part, started in calls]
  for i, lstsq in host:
    solved = fit_linear(nodes[i], X, y, w, var) if lstsq else None
    out[i] = solved or fit_constants(nodes[i], X, y, max_iter=max_iter, weights=w)
  for part, results in calls:
    for (i, _), r in zip(part, _finish_group(*results) if pipelined else results):
      out[i] = r
  return out  # type: ignore[return-value]


# Shape classes: every call is padded to one of few (trees, instructions, slots) shapes, so a
# search compiles the LM a handful of times per dataset shape instead of once per batch size
# (a compile costs ~1.5 s on the 2-core CPU, more than fitting a whole batch). Slots 4:
# 14% of a search's candidates have 3 or 4 constants; 5 channels for them instead of 9
# saved 26% of its fitting time. A 1-slot class gained nothing (one more call per batch).
_SLOTS = (2, 4, 8)
# Hoisting and the (trees, instructions, lanes) classes, by layout. The CPU's branch
# path runs only a call's real instructions, each costing
# about its lanes' values (padding lanes too): a search's calls hold few trees, so 8 lanes
# were mostly padding, and 2 lanes in twice the instructions fit the same constants ~1.4x
# faster on bench_fit's calls (BUILD_NOTES, "Two lanes per instruction on the CPU"). It
# also hoists constant-free subtrees (27% of the nodes of the candidates LM fits), which then
# run once per buffer instead of at every LM step (`Program.pre`; "Constant-free subtrees
# run once"). The accelerator path runs every padded instruction and every class in each,
# so it keeps 8 lanes in short schedules and no hoisting (both unmeasured there). Levels:
# bench_fit's grammar calls are at most 8 deep and 26 nodes wide, 90% of a search's at most
# 10 and 24 (/work/scratch/s22/lvstats.py).
_SHAPES = {"branch": (True, ((16, 64, 2), (64, 256, 2))),
           "lanes": (False, ((16, 32, 8), (64, 128, 8))),
           "levels": (False, ((16, 8, 32), (16, 16, 64), (64, 16, 128)))}


def _parts(items: list[tuple[int, E.Node]], n_vars: int, mc: int, layout: str):
  """Split (index, node) pairs into calls that fit a shape class: [(pairs, Program)]."""
  from lee_jax import program

  hoist, shapes = _SHAPES[layout]
  levels = layout == "levels"
  trees_of = [n for _, n in items]
  for trees, instructions, width in shapes:
    if len(items) <= trees:
      try:
        return [(items, program.compile_trees(trees_of, n_vars, mc, trees, instructions,
                                              width=width, hoist=hoist, levels=levels))]
      except program.ScheduleTooLong:
        continue
  if len(items) == 1:  # one tree longer than the largest schedule: its own shape
    return [(items, program.compile_trees(trees_of, n_vars, mc, hoist=hoist, levels=levels,
                                          width=None if levels else shapes[-1][2]))]
  half = len(items) // 2
  return _parts(items[:half], n_vars, mc, layout) + _parts(items[half:], n_vars, mc, layout)


def _padded_rows(X, y, w, m: int):
  """float32 X, y padded with zero rows to m, and the square roots of the row weights
  (1 if w is None; 0 on the padding)."""
  Xp = np.zeros((m, X.shape[1]), np.float32)
  Xp[:len(y)] = X
  yp = np.zeros(m, np.float32)
  yp[:len(y)] = y
  wp = np.zeros(m, np.float32)
  wp[:len(y)] = 1.0 if w is None else np.sqrt(w)
  return Xp, yp, wp


@functools.lru_cache(maxsize=256)
def _draws(seed: int, b: int, restarts: int, mc: int, n: int, sub_rows: int):
  """The random restarts' offsets eps [b, restarts, mc] (start 0: none) and the sorted
  subsample of sub_rows of n rows (None for sub_rows = 0), read-only. Cached: the
  generator's construction and the permutation cost ~0.2 ms, a fifth of the host's share
  of a small call, and a search draws the same few shapes with one seed per slot count."""
  rng = np.random.default_rng(seed)
  eps = rng.standard_normal((b, restarts, mc))
  eps[:, 0] = 0.0
  pick = np.sort(rng.choice(n, sub_rows, replace=False)) if sub_rows else None
  for a in (eps, pick):
    if a is not None:
      a.flags.writeable = False
  return eps, pick


def _start_group(nodes, prog, X, y, w, steps: int, restarts: int, seed: int,
                 select_all: bool, sub_rows: int, polish: int, unroll: int) -> tuple:
  """Dispatches LM on one compiled call (`prog` schedules `nodes`, padded) without waiting
  for it; `_finish_group(*_check_start(*returned, var))` gives one FitResult per node.
  w: row weights of mean 1 (`row_weights`), or None."""
  from lee_jax import evaluate

  b, mc = len(prog.roots), prog.n_consts
  cmask = np.zeros((b, mc), bool)
  c0 = np.zeros((b, mc))
  for row, node in enumerate(nodes):
    c = E.constants(node)
    cmask[row, :len(c)] = True
    c0[row, :len(c)] = c
  n = len(y)
  if sub_rows <= 0 or n <= 2 * sub_rows:
    sub_rows = polish = 0  # few rows: every step on all of them (no subsample)
  eps, pick = _draws(seed, b, restarts, mc, n, sub_rows)
  with np.errstate(over="ignore"):  # a decoded 1e99 becomes inf: that start just fails
    starts = (c0[:, None] + 0.5 * (np.abs(c0[:, None]) + 1.0) * eps).astype(np.float32)
  Xp, yp, wp = _padded_rows(X, y, w, evaluate.batch_bucket(n, 256))
  if pick is None:  # (the subsample arrays go unused)
    Xs, ys, ws = Xp[:1], yp[:1], wp[:1]
  else:
    Xs, ys, ws = _padded_rows(X[pick], y[pick], None if w is None else w[pick], sub_rows)
  with np.errstate(over="ignore"):
    lm = _lm_jit(steps, polish, select_all, unroll)(*prog.arrays(), np.int32(prog.pre), cmask,
                                                    starts, Xp, yp, wp, Xs, ys, ws)
  return nodes, prog, X, y, w, cmask, c0, lm


def _check_start(nodes, prog, X, y, w, cmask, c0, lm, var: float) -> tuple:
  """What `_finish_group`'s float64 check can do before the LM's answer (on the host while
  the LM runs): the constant-free nodes (`program.host_buffer`, for two constant vectors:
  the winner and the decoded start; var: the fit rows' (weighted) variance). Returns
  `_finish_group`'s arguments."""
  from lee_jax import program

  return nodes, prog, X, y, w, cmask, c0, lm, program.host_buffer(prog, X, 2), var


def _errors(pred, y, w, var: float):
  """pred [b, R, N] -> MSE / var(y) [b, R] in float64 (non-finite: inf)."""
  with np.errstate(all="ignore"):
    sq = (pred - y) ** 2 if w is None else w * (pred - y) ** 2
    errs = np.mean(sq, axis=-1) / var
  return np.where(np.isfinite(errs), errs, np.inf)


def _finish_group(nodes, prog, X, y, w, cmask, c0, lm, buf, var) -> list[FitResult]:
  """Waits for a `_start_group` call and checks its winners in float64 (`_check_start`'s
  arguments)."""
  from lee_jax import program

  b = len(prog.roots)
  c, f, n_steps = np.asarray(lm[0], np.float64), np.asarray(lm[1], np.float64), int(lm[2])
  # The float32 winner is checked in float64 against the decoded start: float32 can accept
  # constants whose float64 values are far worse (cancellation near a pole), and the
  # returned nmse must mean what scipy's does. (A lane that never ran keeps its float32
  # start, which is inf for a decoded 1e99.)
  winner = c[np.arange(b), np.argmin(f, axis=1)]  # [b, mc]
  options = np.stack([winner, c0], axis=1)  # [b, 2, mc]: start 0 the winner, 1 the decoded
  finite = np.all(np.isfinite(winner) | ~cmask, axis=-1)
  # both candidates in one pass over the program (its per-instruction cost is the host's
  # share of a small call; on 2 cores the LM's threads leave it no idle core to hide in)
  both = np.stack([np.where(np.isfinite(winner), winner, 0.0), c0], axis=1)
  err = _errors(program.run_numpy(prog, both, X, buf), y, w, var)  # [b, 2]
  errs = np.concatenate([np.where(finite[:, None], err[:, :1], np.inf), err[:, 1:]], axis=1)
  pick = np.argmin(errs, axis=1)  # ties: the winner
  best = errs[np.arange(b), pick].tolist()
  out = []
  for row, (node, n_c, k) in enumerate(zip(nodes, cmask.sum(1).tolist(), pick.tolist())):
    if not np.isfinite(best[row]):
      out.append(FitResult(node, c0[row, :n_c], np.inf, n_steps, False, "nonfinite_end"))
    else:
      values = options[row, k, :n_c]
      out.append(FitResult(E.with_constants(node, values), values, best[row], n_steps, True))
  return out
