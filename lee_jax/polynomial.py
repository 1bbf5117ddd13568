"""Sparse polynomial seeds: the best 1-, 2-, ..., T-term polynomials of the data.

A round's pool starts from the model's decodes and the constant/linear baselines. Laws that
are short polynomials (Lotka-Volterra's 3x - 2xy - x^2, van der Pol's 10y - 10/3 x^3 +
10/3 x) are exactly what least squares finds in milliseconds, and what a small model can
miss. For t = 1..T, the t monomials of degree <= `degree` whose least-squares fit explains
the most (every t-subset where there are few, else greedy growth plus a round of swaps:
`best_subsets`; greedy selection alone misses Lotka-Volterra) become two seeds, with and
without an intercept. Seeds then compete in the pool like any candidate (their constants
refitted, scored with the complexity penalty, usable as parents).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from lee_jax import expr as E
from lee_jax import fit

DEGREE = 3
MAX_TERMS = 3
SUBSET_LIMIT = 5000  # exhaustive subset search up to this many subsets of one size
BEAM = 16  # subsets of each size grown by one column on the greedy path
SWAP_ROUNDS = 8  # rounds of single swaps after greedy growth (each stops at no change)
RIDGE = 1e-12  # on the unit diagonal of the subset search's correlation matrix
DUPLICATE = 1e-12  # |correlation| >= 1 - this: the later column is dropped


def monomials(n_vars: int, degree: int = DEGREE) -> list[tuple[int, ...]]:
  """Exponent tuples of every monomial of total degree 1..degree, lowest degree first."""
  out = []
  for d in range(1, degree + 1):
    for combo in itertools.combinations_with_replacement(range(n_vars), d):
      out.append(tuple(combo.count(i) for i in range(n_vars)))
  return out


def power(i: int, p: int) -> E.Node:
  """x_i ** p for a whole p >= 1: x, sq, cube, and cube times the rest above 3."""
  x = E.var(i)
  return {1: x, 2: E.op("sq", x), 3: E.op("cube", x)}.get(p) or E.op(
      "mul", E.op("cube", x), power(i, p - 3))


def product(factors: list[E.Node]) -> E.Node:
  """f1 * f2 * ... as a left-nested chain of binary muls."""
  node = factors[0]
  for f in factors[1:]:
    node = E.op("mul", node, f)
  return node


def ratio(num: list[E.Node], den: list[E.Node]) -> E.Node:
  """product(num) / product(den), or product(num) when den is empty."""
  node = product(num)
  return E.op("div", node, product(den)) if den else node


def monomial_node(exps: tuple[int, ...]) -> E.Node:
  return product([power(i, p) for i, p in enumerate(exps) if p])


def polynomial_node(terms: list[tuple[int, ...]], coefs: np.ndarray,
                    intercept: float | None) -> E.Node:
  """c1 * m1 + c2 * m2 + ... (+ c0 unless intercept is None)."""
  return sum_node([E.op("mul", E.const(c), monomial_node(e)) for e, c in zip(terms, coefs)],
                  intercept)


def sum_node(terms: list[E.Node], intercept: float | None) -> E.Node:
  """t1 + t2 + ... (+ c0 unless intercept is None)."""
  node = terms[0]
  for t in terms[1:]:
    node = E.op("add", node, t)
  return node if intercept is None else E.op("add", node, E.const(intercept))


def _solved(A: np.ndarray, v: np.ndarray) -> np.ndarray:
  """A^-1 v, or NaN (scored -inf) where A is singular."""
  try:
    return np.linalg.solve(A, v)
  except np.linalg.LinAlgError:
    return np.full(len(v), np.nan)


def unit_columns(G: np.ndarray, b: np.ndarray,
                 usable: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """(G, b) of the centred columns scaled to unit variance, and which stay usable: those of
  positive finite variance, less each column whose correlation with an earlier usable one is
  +-1 (to DUPLICATE). With G as it comes, the fixed ridge swamped columns of small values
  (3 x0 + x1^2 with x in units 1e-20 lost its exact seed), while a ridge scaled to each
  column left ties between duplicates to rounding, which lost the long sums of
  229_pwLinear, whose columns take only -1, 0 and 1 (BUILD_NOTES)."""
  var = np.diag(G).astype(np.float64)
  usable = np.asarray(usable, bool) & np.isfinite(var) & (var > 0)
  d = np.sqrt(np.where(usable, var, 1.0))
  with np.errstate(all="ignore"):
    G = G / np.outer(d, d)
    b = b / d
  keep: list[int] = []
  for c in np.flatnonzero(usable):
    if np.any(np.abs(G[c, keep]) >= 1.0 - DUPLICATE):  # (nan compares False)
      usable[c] = False
    else:
      keep.append(c)
  return G, b, usable


def best_subsets(G: np.ndarray, b: np.ndarray, usable: np.ndarray, max_terms: int,
                  limit: int) -> list[list[int]]:
  """For t = 1..max_terms, the t columns whose least-squares fit explains the most, from
  their Gram matrix G and correlations b (centred data): every t-subset when there are at
  most `limit` of them, else the BEAM best (t-1)-subsets each grown by one column (a beam
  search) followed by rounds of single swaps until none helps. A greedy sequence alone
  misses 3x - 2xy - x^2 (it starts from x^2 y, which correlates best with the whole law),
  and greedy growth plus swaps missed x1 y1 + x2 y2 + x3 y3 on positive ranges (Feynman
  I.11.19) in 4 of 8 draws.

  The search runs on the correlation form of G (`unit_columns`): a subset's gain does not
  depend on its columns' units, and exact duplicates (x^3 = x on a column of -1, 0 and 1)
  keep only their first column."""
  G, b, usable = unit_columns(G, b, usable)
  cols = np.flatnonzero(usable)
  out: list[list[int]] = []

  def explained(subsets: np.ndarray) -> np.ndarray:  # [S, t] -> b_S' G_SS^-1 b_S
    Gs = G[subsets[:, :, None], subsets[:, None, :]]
    bs = b[subsets]
    # A tiny ridge keeps collinear subsets (x and x^3 on a narrow range) solvable; on the
    # unit diagonal it is the same share of every column's variance.
    A = Gs + RIDGE * np.eye(Gs.shape[1])
    with np.errstate(all="ignore"):
      try:
        sol = np.linalg.solve(A, bs[..., None])[..., 0]
      except np.linalg.LinAlgError:  # (one singular subset: the others still count)
        sol = np.stack([_solved(a, v) for a, v in zip(A, bs)])
      gain = np.einsum("st,st->s", bs, sol)
    return np.where(np.isfinite(gain), gain, -np.inf)

  def swapped(best: list[int]) -> tuple[list[int], float]:
    """Single swaps until none helps (at most SWAP_ROUNDS rounds): (subset, its gain)."""
    gain = -np.inf
    for _ in range(SWAP_ROUNDS):
      start = sorted(best)
      for i in range(len(best)):
        keep = best[:i] + best[i + 1:]
        trial = np.array([keep[:i] + [c] + keep[i:] for c in cols if c not in keep])
        gains = explained(trial)
        best, gain = trial[int(np.argmax(gains))].tolist(), float(gains.max())
      if sorted(best) == start:
        break
    return best, gain

  beam: list[tuple[int, ...]] = [()]
  for t in range(1, min(max_terms, len(cols)) + 1):
    if math.comb(len(cols), t) <= limit:
      subsets = np.array(list(itertools.combinations(cols, t)))
    else:
      subsets = np.array(sorted({tuple(sorted(s + (c,))) for s in beam for c in cols
                                 if c not in s}))
    gains = explained(subsets)
    order = np.argsort(-gains, kind="stable")
    beam = [tuple(subsets[i].tolist()) for i in order[:BEAM]]
    if math.comb(len(cols), t) <= limit:
      out.append(list(beam[0]))
    else:  # each of the beam polished by swaps: the best start need not end best
      polished = [swapped(list(s)) for s in beam]
      out.append(sorted(max(polished, key=lambda p: p[1])[0]))
  return out


def monomial_values(X: np.ndarray, terms: list[tuple[int, ...]]) -> np.ndarray:
  """Each monomial's (exponents per variable) values on the rows of X: [n, len(terms)]."""
  with np.errstate(all="ignore"):
    return np.stack([np.prod(X ** np.asarray(e), axis=1) for e in terms], axis=1)


def sparse_fits(X: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None,
                degree: int = DEGREE, max_terms: int = MAX_TERMS,
                limit: int = SUBSET_LIMIT) -> list[E.Node]:
  """The best 1..max_terms-term polynomials (`best_subsets`), each with its (weighted)
  least-squares coefficients, with an intercept and without. Stops growing once a fit is
  exact. Empty when the data are too few or not finite."""
  X = np.asarray(X, np.float64)
  terms = monomials(X.shape[1], degree)
  M = monomial_values(X, terms)
  return column_fits(M, y, weights, max_terms, limit,
                     lambda chosen, coefs, c0: polynomial_node([terms[c] for c in chosen], coefs, c0))


def column_fits(M: np.ndarray, y: np.ndarray, weights: np.ndarray | None, max_terms: int,
                limit: int, build) -> list[E.Node]:
  """Seeds from the columns of M (one candidate term each, [n, D]): for t = 1..max_terms the
  best t columns (`best_subsets`) with their weighted least-squares coefficients, as
  build(columns, coefs, intercept) and as build(columns, coefs, None) through the origin.
  Stops growing once a fit is exact; empty when the rows are too few or y is not finite."""
  M = np.asarray(M, np.float64)
  y = np.asarray(y, np.float64)
  n = len(y)
  w = np.ones(n) if weights is None else np.asarray(weights, np.float64)
  if n < 2 * (max_terms + 1) or not np.isfinite(y).all():
    return []
  Mc, yc, usable = centred(M, y, w)
  if not usable.any():
    return []
  sw = np.sqrt(w / w.sum())
  sst = float(yc @ yc)
  out = []
  for chosen in best_subsets(Mc.T @ Mc, Mc.T @ yc, usable, max_terms, limit):
    coefs = fit.lstsq(Mc[:, chosen], yc)
    intercept = float((w @ (y - M[:, chosen] @ coefs)) / w.sum())
    if np.isfinite(coefs).all() and np.isfinite(intercept):
      out.append(build(chosen, coefs, intercept))
    raw = fit.lstsq(M[:, chosen] * sw[:, None] * np.sqrt(w.sum()), y * sw * np.sqrt(w.sum()))
    if np.isfinite(raw).all():  # the same terms through the origin
      out.append(build(chosen, raw, None))
    resid = yc - Mc[:, chosen] @ coefs
    if float(resid @ resid) <= 1e-20 * sst:
      break
  return out


def centred(M: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """(columns, target) centred and scaled by the square-root weights, and which columns are
  usable (finite, not constant; the others zero). Weighted centring takes the intercept out
  of the selection; the Gram matrix of the centred columns gives every subset's fit without
  touching the rows again."""
  usable = np.isfinite(M).all(axis=0) & (np.ptp(M, axis=0) > 0)
  sw = np.sqrt(w / w.sum())
  with np.errstate(all="ignore"):
    Mc = (M - (w @ np.where(usable, M, 0.0)) / w.sum()) * sw[:, None]
  Mc[:, ~usable] = 0.0
  return Mc, (y - (w @ y) / w.sum()) * sw, usable
