"""Power-law seeds: c * x_1^a_1 * ... * x_t^a_t (and c0 + that), exponents in halves.

A third of the Feynman laws are one such product (n kb T / V, q v B / p, q1 q2 / (4 pi eps
r^2)). The polynomial seeds cannot divide and the separable ones multiply two factors at
most, so the `fast` search answered 15 of those 37 laws with 15-18-node polynomials at test
R2 0.5-0.95. Logarithms make the law linear: log|y| = log|c| + sum a_i log|x_i|. For t =
1..k the best t columns of log|x_i| (`polynomial.best_subsets`) fit log|y| by least squares;
the exponents are rounded to halves (to integers for a negative column, which has no square
root) or to integers, whichever then fits y better, and the coefficient is refitted on y
itself by least squares, through the origin and with an intercept. Like the other seeds
they compete in the pool as ordinary candidates (their constants refitted, scored with the
complexity penalty). Columns that are zero somewhere, change sign or are constant take no
part; the logs are fitted on the rows with y's majority sign, so a little noise across zero
costs nothing, and nothing is seeded when that sign holds on fewer than SIGN_SHARE of the
rows. Where the logs are not exact they are fitted a second time with the delta method's
weights (`log_weights`): noise makes log|y| noise where |y| is small, and those rows then
weigh nothing, in the fit and in the sign's share.
"""

from __future__ import annotations

import numpy as np

from lee_jax import expr as E
from lee_jax import fit
from lee_jax import polynomial

SIGN_SHARE = 0.9  # y keeps one sign on at least this share of the rows
MAX_EXPONENT = 6  # |a_i| above it: not a law this seeds (and x^a overflows)


def _power(i: int, exponent: float) -> E.Node:
  """x_i ** |exponent| for a whole or half exponent: sq, cube, their products, sqrt."""
  whole = int(abs(exponent))
  root = E.op("sqrt", E.var(i)) if abs(exponent) - whole == 0.5 else None
  if not whole:
    return root
  node = polynomial.power(i, whole)
  return node if root is None else E.op("mul", node, root)


def law_values(X: np.ndarray, exps: dict[int, float]) -> np.ndarray:
  """x_1^a_1 * x_2^a_2 * ... on the rows of X ({variable: exponent})."""
  with np.errstate(all="ignore"):
    return np.prod([X[:, i] ** e for i, e in exps.items()], axis=0)


def times_power(node: E.Node, exps: dict[int, float]) -> E.Node:
  """node * (positive powers) / (negative powers)."""
  return polynomial.ratio([node] + [_power(i, a) for i, a in exps.items() if a > 0],
                         [_power(i, a) for i, a in exps.items() if a < 0])


def power_node(exps: dict[int, float], coef: float, intercept: float | None) -> E.Node:
  """coef * (positive powers) / (negative powers) (+ intercept unless None)."""
  node = times_power(E.const(coef), exps)
  return node if intercept is None else E.op("add", node, E.const(intercept))


def rounded(X: np.ndarray, cols: list[int], chosen: list[int], a: np.ndarray,
            step: float) -> dict[int, float]:
  """Exponents a of the chosen columns of X rounded to multiples of step (of 1 on a
  negative column, which has no square root), zeros dropped: {variable: exponent}."""
  steps = np.array([step if (X[:, cols[c]] > 0).all() else 1.0 for c in chosen])
  return {cols[c]: float(e) for c, e in zip(chosen, np.round(a / steps) * steps) if e}


def base_columns(X: np.ndarray) -> list[int]:
  """Columns usable as a base: finite, never zero, one sign, not constant."""
  with np.errstate(all="ignore"):
    return [i for i in range(X.shape[1])
            if np.isfinite(X[:, i]).all() and np.ptp(X[:, i]) > 0
            and ((X[:, i] > 0).all() or (X[:, i] < 0).all())]


def _coefficients(m: np.ndarray, y: np.ndarray, w: np.ndarray):
  """Weighted least squares of y on m: (c through the origin, (c, c0) with an intercept,
  the latter's weighted squared error); None where m is not finite or all zero."""
  with np.errstate(all="ignore"):
    if not np.isfinite(m).all() or not (w @ (m * m)) > 0:
      return None
    origin = float((w @ (m * y)) / (w @ (m * m)))
    A = np.stack([m, np.ones_like(m)], axis=1) * np.sqrt(w)[:, None]
    c, c0 = fit.lstsq(A, y * np.sqrt(w))
    r = y - c * m - c0
    sse = float(w @ (r * r))
  if not (np.isfinite([origin, c, c0, sse]).all()):
    return None
  return origin, (float(c), float(c0)), sse


def log_laws(L: np.ndarray, ly: np.ndarray, w: np.ndarray, limit: int = polynomial.SUBSET_LIMIT):
  """For t = 1..k, the best t columns of L (logs of |x_i|, [n, k]) for ly (log|y|) by
  weighted least squares (`polynomial.best_subsets`): yields (columns, exponents, exact);
  stops after an exact fit."""
  Lc, lyc, usable = polynomial.centred(L, ly, w)
  if not usable.any() or not (lyc @ lyc) > 0:
    return
  for chosen in polynomial.best_subsets(Lc.T @ Lc, Lc.T @ lyc, usable, L.shape[1], limit):
    a, *_ = np.linalg.lstsq(Lc[:, chosen], lyc, rcond=None)
    resid = lyc - Lc[:, chosen] @ a
    exact = float(resid @ resid) <= 1e-20 * float(lyc @ lyc)
    yield chosen, a, exact
    if exact:
      return


def log_weights(y: np.ndarray, w: np.ndarray) -> np.ndarray:
  """w * y^2 (mean 1): the delta method's weights for log|y| under additive noise on y,
  whose variance there is sigma^2 / y^2. Near-zero rows, where noise can flip y's sign and
  log|y| is noise, weigh nothing; a least-squares fit of the logs then weighs the rows as
  a fit of y would."""
  lw = w * y * y
  total = lw.mean()
  return lw / total if np.isfinite(total) and total > 0 else w


def power_fits(X: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None,
               limit: int = polynomial.SUBSET_LIMIT) -> list[E.Node]:
  """For t = 1..k, the best t-variable power law of y (rounded exponents, see the module
  docstring) through the origin and with an intercept; growth stops once the logs fit
  exactly. The logs are fitted twice, with y's weights and with the delta method's
  (`log_weights`): at eps 0.1 noise flips the sign of 10-34% of the rows of a law near zero
  (III.19.51, test_9), and unweighted no seed came back there. Empty when y is not finite,
  changes sign too often, or no column is usable."""
  X = np.asarray(X, np.float64)
  y = np.asarray(y, np.float64)
  w = np.ones(len(y)) if weights is None else np.asarray(weights, np.float64)
  if len(y) < 4 or not np.isfinite(y).all():
    return []
  cols = base_columns(X)
  if not cols:
    return []
  out, seen, exact = [], set(), False
  for lw in (w, log_weights(y, w)):
    if exact:  # the logs fit exactly: the law is found, and the second fit finds no other
      break
    sign = 1.0 if (lw @ (y > 0)) >= (lw @ (y < 0)) else -1.0
    rows = (sign * y > 0) & (lw > 0)
    if rows.sum() < 4 or lw[rows].sum() < SIGN_SHARE * lw.sum():
      continue
    for chosen, a, exact in log_laws(np.log(np.abs(X[rows][:, cols])), np.log(sign * y[rows]),
                                     lw[rows], limit):
      best = None
      for step in (0.5, 1.0):
        exps = rounded(X, cols, chosen, a, step)
        key = tuple(sorted(exps.items()))
        if not exps or key in seen or max(abs(e) for e in exps.values()) > MAX_EXPONENT:
          continue
        seen.add(key)
        fits = _coefficients(law_values(X, exps), y, w)
        if fits is not None and (best is None or fits[2] < best[1][2]):
          best = (exps, fits)
      if best is not None:
        exps, (origin, (c, c0), _) = best
        out += [power_node(exps, origin, None), power_node(exps, c, c0)]
  return out
