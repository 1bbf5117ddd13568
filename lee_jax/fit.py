"""Constant fitting: scipy L-BFGS-B on the training fold (paper §3.5, App. H).

The objective is the mean squared error divided by var(y) (so tolerances mean the same on
every dataset; the minimiser is the MSE's). Tolerances are tight (ftol 1e-13 against an
objective of scale 1 - R2) so exact skeletons reach R2 ~ 1 - 1e-12 instead of stopping at
scipy's default 2e-9. Its gradient in the constants is exact, from a
forward-mode pass over the tree (`value_and_jacobian`), so one objective call is one pass
instead of scipy's (n_constants + 1) finite-difference passes.

Nothing a decoder emits can raise here: a start that is non-finite on the fit rows, an
overflow during the search, or any scipy error is a `FitResult` with ok=False and a reason,
which the search counts.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.optimize

from lee_jax import expr as E
from lee_jax import vocab

_BAD = 1e30  # objective value for non-finite predictions (finite: L-BFGS-B backtracks from it)


@dataclasses.dataclass(frozen=True)
class FitResult:
  node: E.Node  # the tree with the fitted constants (the input tree when not ok)
  values: np.ndarray  # fitted constants in prefix order
  nmse: float  # MSE / var(y) on the fit rows (inf when not ok)
  iterations: int
  ok: bool
  reason: str = ""  # why not ok: 'nonfinite_start', 'nonfinite_end', 'error: ...'


def _const_slots(node: E.Node) -> dict[int, int]:
  """id(constant node) -> index in prefix order."""
  return {id(n): i for i, n in enumerate(m for m in E.walk(node) if m.name in ("const", "C"))}


def value_and_jacobian(node: E.Node, X: np.ndarray, values: np.ndarray):
  """Tree on X [N, k] with constants `values` -> (y [N], dy/dvalues [N, n]) in float64.

  Same protected semantics as evaluate.evaluate_numpy: non-finite values become NaN.
  """
  slots = _const_slots(node)
  n_c, n = len(values), X.shape[0]

  def ev(nd: E.Node):
    if nd.name in ("const", "C"):
      j = np.zeros((n, n_c))
      j[:, slots[id(nd)]] = 1.0
      return np.full(n, values[slots[id(nd)]]), j
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
      d = _unary_derivative(name, a, v)[:, None] * da
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


def fit_constants(node: E.Node, X: np.ndarray, y: np.ndarray, max_iter: int) -> FitResult:
  """Fit the constants of `node` to (X, y), starting from its current values."""
  X, y = np.asarray(X, np.float64), np.asarray(y, np.float64)
  start = np.asarray(E.constants(node), np.float64)
  scale = max(float(np.var(y)), 1e-12)

  def objective(c):
    pred, jac = value_and_jacobian(node, X, c)
    r = pred - y
    if not np.all(np.isfinite(r)) or not np.all(np.isfinite(jac)):
      return _BAD, np.zeros_like(c)
    with np.errstate(all="ignore"):
      f = float(np.mean(r * r)) / scale
      g = 2.0 * (r @ jac) / (len(y) * scale)
    if not (np.isfinite(f) and np.all(np.isfinite(g))):
      return _BAD, np.zeros_like(c)
    return f, g

  try:
    f0, _ = objective(start)
    if f0 >= _BAD:
      return FitResult(node, start, np.inf, 0, False, "nonfinite_start")
    if len(start) == 0 or max_iter <= 0:
      return FitResult(node, start, f0, 0, True)
    res = scipy.optimize.minimize(objective, start, jac=True, method="L-BFGS-B",
                                  options={"maxiter": int(max_iter), "ftol": 1e-13, "gtol": 1e-10})
    values = np.asarray(res.x, np.float64)
    f = float(res.fun)
    if f >= _BAD or not np.all(np.isfinite(values)):
      return FitResult(node, start, np.inf, int(res.nit), False, "nonfinite_end")
    if f > f0:  # line-search trouble can end above the start; keep the better point
      values, f = start, f0
    return FitResult(E.with_constants(node, values), values, f, int(res.nit), True)
  except (ArithmeticError, ValueError, np.linalg.LinAlgError) as e:
    return FitResult(node, start, np.inf, 0, False, f"error: {type(e).__name__}")
