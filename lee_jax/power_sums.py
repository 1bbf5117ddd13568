"""Power-sum seeds: c1 P1(x) + c2 P2(x), two power laws, and that under a root or reciprocal.

Many Feynman laws are two power laws added, of y or of 1/y, y^2 or 1/y^2: the relativistic
mass m0 / sqrt(1 - v^2/c^2) is 1/y^2 = m0^-2 - v^2 c^-2 m0^-2, Friedmann's sqrt(8 pi G rho /
3 - alpha c^2 / d^2) is y^2 = c1 G rho + c2 alpha c^2 d^-2, mom H / (kb T) + mom alpha M /
(eps c^2 kb T) is y itself. The power-law seeds fit one product on the logs, and a sum of
two has no such linear form; the factored seeds need the second factor's variables out of
the first. The `fast` search answered those 12 laws with curve fits (test R2 0.72-0.9999).

Here the exponents of both products are fitted together by variable projection: for
exponents (a, b) the coefficients (c1, c2) are the least-squares ones, and Levenberg-
Marquardt moves (a, b) on what is left (`_fit`). It starts from the one-product log fit for
a and from a with one exponent moved by -2, -1, 1 or 2 for b (the sum's second product
shares most of the first's variables: m0^-2 and m0^-2 v^2 c^-2), and stops at the first
start that fits exactly. The exponents are rounded to halves (integers on a negative
column) and to integers, the better kept (each at most power_law.MAX_EXPONENT in the law:
twice that in y^2 or 1/y^2), and the coefficients refitted by least squares.
Each target g(y) in y, y^2, 1/y and 1/y^2 (the last three where y keeps one sign up to
noise, `transformed.one_sign`) is fitted with y's weights and with the delta method's, as
the transformed seeds' targets are, and comes back as g's inverse of the sum (of y^2 or
1/y^2 also with the powers both products share out of the root at half their exponent;
those written once where the model's tokens need it); the search
stops at the first exact fit that rounds to a law. Like the transformed seeds they join
the pool only where exact on the validation rows or above its best score (two free
exponents fit many curves a little better than a law), or, the best of them on
validation, where its errors there are below the pool champion's beyond chance
(`search.Round._beats_on_validation`: a law under noise).
"""

from __future__ import annotations

import numpy as np
import scipy.optimize

from lee_jax import configs
from lee_jax import expr as E
from lee_jax import fit
from lee_jax import power_law
from lee_jax import transformed

ROWS = 200  # rows the exponents are fitted on (the first of the search's fit rows, a draw)
STEPS = (-2.0, -1.0, 1.0, 2.0)  # the second product's start: one exponent of the first moved
MAX_EVALS = 60  # Levenberg-Marquardt evaluations per exponent (per start)
EXACT = 1e-20  # weighted NMSE of a start that ends the search (an exact law)
ROUNDED = 4  # the best starts' ends whose exponents are rounded (the best rounded one kept)
NEGLIGIBLE = 1e-6  # a product whose part of t (weighted norm) is below this share is none
EQUAL = 1e-9  # coefficients whose magnitudes differ by less than this share are one
# Longer seeds stay out of the pool. Two products of up to 8 variables: I.10.7 under its
# reciprocal root is 20 nodes, test_6's root 25, II.36.38's sum 26; an inexact seed joins
# above the pool's best score, so it pays for its nodes, or beating its champion on
# validation beyond chance.
MAX_COMPLEXITY = 32
# The targets g(y) and their inverses; weights 1 / g'(y)^2 up to a constant (delta method).
TARGETS = ("identity", "square", "reciprocal", "reciprocal_square")
# The model's tokens less BOS and EOS: a longer seed cannot be scored (search "too_long").
MAX_TOKENS = configs.ModelConfig.max_len - 2
SQUARED = ("square", "reciprocal_square")  # targets whose sums hold the law's exponents twice


def _design(L: np.ndarray, ab: np.ndarray) -> np.ndarray | None:
  """The two products exp(L a), exp(L b) as columns [n, 2]; None where one is not finite."""
  k = L.shape[1]
  with np.errstate(all="ignore"):
    A = np.exp(np.stack([L @ ab[:k], L @ ab[k:]], axis=1))
  return A if np.isfinite(A).all() else None


def _coefficients(A: np.ndarray, t: np.ndarray, sw: np.ndarray) -> np.ndarray:
  """Weighted least-squares (c1, c2) of t on the columns of A (sw: square roots of weights)."""
  return fit.lstsq(A * sw[:, None], t * sw)


class _Projection:
  """Variable projection of t on two power laws: the weighted residual r after the
  least-squares coefficients c, and its Jacobian in the exponents (Golub and Pereyra's,
  P dA c - (A+)^T dA^T r with P the projection off A's columns: one evaluation per step,
  not 2k+1 as differences; Kaufman's shorter form, without the second term, let the two
  products merge into one on Friedmann's law)."""

  def __init__(self, L, t, sw, scale):
    self.L, self.t, self.sw, self.scale = L, t, sw, scale
    self._at, self._r, self._j = None, None, None

  def _at_point(self, ab):
    if self._at is not None and np.array_equal(ab, self._at):
      return
    self._at = ab.copy()
    n, k = self.L.shape
    A = _design(self.L, ab)
    bad = np.full(n, 1e6), np.zeros((n, 2 * k))
    if A is None:
      self._r, self._j = bad
      return
    with np.errstate(all="ignore"):
      Aw = A * self.sw[:, None]
      c = _coefficients(A, self.t, self.sw)
      r = (Aw @ c - self.t * self.sw) / self.scale
      q, _ = np.linalg.qr(Aw)
      pinv_t = np.linalg.pinv(Aw).T  # (A+)^T [n, 2]
      # dAw / d a_i has one column, sw L_i A_0 (b_i: column 1, sw L_i A_1)
      G = [self.L * Aw[:, h:h + 1] for h in (0, 1)]
      D = np.concatenate([G[0] * c[0], G[1] * c[1]], axis=1)
      rw = r * self.scale  # the unscaled weighted residual
      second = np.concatenate([np.outer(pinv_t[:, h], G[h].T @ rw) for h in (0, 1)], axis=1)
      J = (D - q @ (q.T @ D) - second) / self.scale
    ok = np.isfinite(r).all() and np.isfinite(J).all()
    self._r, self._j = (r, J) if ok else bad

  def residual(self, ab):
    self._at_point(ab)
    return self._r

  def jacobian(self, ab):
    self._at_point(ab)
    return self._j


def _fit(L: np.ndarray, t: np.ndarray, w: np.ndarray) -> tuple[list[np.ndarray], bool]:
  """(the continuous exponents (a, b) [2k] of the ROUNDED best starts (module docstring),
  best first; whether the first fits exactly). A start's end that fits a little worse can
  round to the law where the best one does not (Friedmann's law on one draw of rows)."""
  k = L.shape[1]
  sw = np.sqrt(w)
  scale = np.sqrt(np.sum(w * (t - np.average(t, weights=w)) ** 2))
  if not scale > 0:
    return [], False
  with np.errstate(all="ignore"):
    lt = np.log(np.abs(t))
  usable = np.isfinite(lt) & (t != 0)
  if usable.sum() < 2 * k + 2:
    return [], False
  A = np.c_[L[usable], np.ones(int(usable.sum()))] * sw[usable, None]
  sol = fit.lstsq(A, lt[usable] * sw[usable])
  resid = A @ sol - lt[usable] * sw[usable]
  if usable.all() and float(resid @ resid) <= EXACT * max(float(np.sum(w * lt * lt)), 1.0):
    return [], False  # one power law is t exactly: the power-law seeds write it shorter
  a0 = sol[:k]
  ends = []
  for j in range(k):
    for step in STEPS:
      b0 = a0.copy()
      b0[j] += step
      proj = _Projection(L, t, sw, scale)
      try:
        sol = scipy.optimize.least_squares(proj.residual, np.r_[a0, b0], jac=proj.jacobian,
                                           method="lm", max_nfev=MAX_EVALS * 2 * k)
      except (ValueError, np.linalg.LinAlgError):
        continue
      cost = float(sol.fun @ sol.fun)
      if cost <= EXACT:
        return [sol.x], True
      ends.append((cost, len(ends), sol.x))
  ends.sort(key=lambda e: e[:2])
  return [x for _, _, x in ends[:ROUNDED]], False


def _laws(X: np.ndarray, cols: list[int], ab: np.ndarray, t: np.ndarray, w: np.ndarray,
          max_exponent: float):
  """(weighted squared error, the rounded pair of power laws ({variable: exponent} twice)
  that fits t better, their least-squares coefficients); None where the two are one
  product, an exponent is above max_exponent, or they do not fit."""
  k = len(cols)
  sw = np.sqrt(w)
  best = None
  for step in (0.5, 1.0):
    pair = [power_law.rounded(X, cols, list(range(k)), ab[h * k:(h + 1) * k], step)
            for h in (0, 1)]
    if pair[0] == pair[1] or max((abs(e) for p in pair for e in p.values()), default=0) > max_exponent:
      continue
    # The products themselves, with a negative column's sign (the fit's logs saw |x|, and
    # an odd power of a negative column flips the product's sign: power_law.rounded keeps
    # its exponents whole)
    with np.errstate(all="ignore"):
      A = np.stack([power_law.law_values(X, p) if p else np.ones(len(t)) for p in pair], axis=1)
    if not np.isfinite(A).all():
      continue
    c = _coefficients(A, t, sw)
    with np.errstate(all="ignore"):
      sse = float(np.sum(w * (A @ c - t) ** 2))
      part = np.linalg.norm(A * c * sw[:, None], axis=0) / np.linalg.norm(t * sw)
    if not (part > NEGLIGIBLE).all():  # one product in all but name (c2 ~ 1e-17)
      continue
    if np.isfinite(sse) and np.isfinite(c).all() and (best is None or sse < best[0]):
      best = (sse, pair, c)
  return best


def _targets(y: np.ndarray, w: np.ndarray):
  """(name, sign, rows, g(sign * y[rows]), the weightings to fit it with) for each target y
  admits: y itself on every row, with y's weights (the delta method's are the same); y^2,
  1/y (`transformed.targets`) and 1/y^2 where y keeps one sign up to noise, on its rows,
  with y's weights and then the delta method's: those find laws under noise, but their
  stress on a few rows let both products merge into one on Friedmann's law at eps 0."""
  yield "identity", 1.0, np.ones(len(y), bool), y, (w,)
  for name, sign, rows, t, wt in transformed.targets(y, w):
    if name in ("square", "reciprocal"):
      yield name, sign, rows, t, (w[rows], wt)
    if name == "reciprocal":  # 1/y^2, weighted w y^6 (1/y's w y^4 times y^2)
      with np.errstate(all="ignore"):
        yield "reciprocal_square", sign, rows, t * t, (w[rows], wt / (t * t))


def _inverse(name: str, sign: float, s: E.Node) -> E.Node:
  """sign * g^-1(s) for a target g of TARGETS."""
  if name == "identity":
    return s
  if name in ("square", "reciprocal"):
    return transformed.inverse(name, sign, s)
  if name == "reciprocal_square":
    return transformed.inverse("reciprocal", sign, E.op("sqrt", s))
  raise ValueError(f"unknown target {name!r}; choose from {TARGETS}")


def _without(p: dict[int, float], q: dict[int, float]) -> dict[int, float]:
  """The power law p / q (q's variables a subset of p's), zero exponents dropped."""
  return {v: e - q.get(v, 0.0) for v, e in p.items() if e != q.get(v, 0.0)}


def _outside(name: str, pair, positive: set[int] | frozenset[int]) -> dict[int, float]:
  """The powers both products share (of each variable in both with one sign, the exponent
  smaller in magnitude) that can leave the root of a squared target: y^2's at half their
  exponent (sqrt(r^-10 S) = r^-5 sqrt(S)), 1/y^2's at minus half, where that half is a
  power `power_law` writes (whole or half) and equals sqrt(x^e): on a positive column (on
  the fitted rows, as half exponents assume), or an even half on any.
  Shorter (I.10.7 is m0 / sqrt(1 - v^2 c^-2), not 1 / sqrt(m0^-2 - m0^-2 v^2 c^-2)), and
  in float32's range (XLA flushes values below its normals to 0): r^-10 alone is a normal
  for r in [1.4e-4, 6.2e3], r^-5 in [2e-8, 3.8e7]. Empty for the other targets."""
  if name not in SQUARED:
    return {}
  p, q = pair
  shared = {v: min(e, q[v], key=abs) for v, e in p.items() if v in q and e * q[v] > 0}
  return {v: e for v, e in shared.items() if e == round(e) and (v in positive or e % 4 == 0)}


def _sum_nodes(name: str, sign: float, pair, coefs,
               positive: set[int] | frozenset[int] = frozenset()) -> list[E.Node]:
  """sign * g^-1(c1 P1 + c2 P2) for the target g called name; for a squared target also
  with the shared powers out of its root (`_outside`; positive: the columns that are),
  first: both, as SymPy writes one or the other shorter (test_5's 2 pi / sqrt(G (m1 + m2) /
  d^3) is a node shorter than 2 pi d^1.5 / (sqrt(G) sqrt(m1 + m2))), and the search's ties
  go to the shorter. Where one is longer than MAX_TOKENS, with the powers both products
  still hold with equal exponents written once outside the sum (II.6.15a's root of p^2 z^2
  (x^2 + y^2) / (eps^2 r^10) was 66 tokens as two products); left out where that is still
  too long (the search could only fit and drop it)."""
  side = 1.0 if name == "square" else -1.0

  def tree(taken, common):
    terms = [power_law.power_node(_without(p, {**taken, **common}), c, None)
             for p, c in zip(pair, coefs)]
    inner = _inverse(name, sign, power_law.times_power(E.op("add", *terms), common))
    return power_law.times_power(inner, {v: side * e / 2 for v, e in taken.items()})

  def within_tokens(taken):
    node = tree(taken, {})
    if len(E.to_prefix(node)) <= MAX_TOKENS:
      return node
    rest = [_without(p, taken) for p in pair]
    node = tree(taken, {v: e for v, e in rest[0].items() if rest[1].get(v) == e})
    return node if len(E.to_prefix(node)) <= MAX_TOKENS else None

  taken = _outside(name, pair, positive)
  nodes = [within_tokens(taken)] + ([within_tokens({})] if taken else [])
  return [n for n in nodes if n is not None]


def power_sum_fits(X: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None) -> list[E.Node]:
  """For each target g(y) (`_targets`), g's inverse of the best sum of two power laws of
  g(y) (module docstring), fitted on the first ROWS rows. Empty when y is not finite, or no
  column can be a base (`power_law.base_columns`)."""
  X = np.asarray(X, np.float64)
  y = np.asarray(y, np.float64)
  w = np.ones(len(y)) if weights is None else np.asarray(weights, np.float64)
  if len(y) < 4 or not np.isfinite(y).all():
    return []
  keep = w > 0
  X, y, w = X[keep][:ROWS], y[keep][:ROWS], w[keep][:ROWS]
  cols = power_law.base_columns(X)
  if not cols:
    return []
  out = []
  exact = False
  for name, sign, rows, t, weightings in _targets(y, w):
    Xt = X[rows]
    positive = {i for i in cols if (Xt[:, i] > 0).all()}
    L = np.log(np.abs(Xt[:, cols]))
    if len(t) < 2 * len(cols) + 2 or not np.isfinite(t).all():
      continue
    # the law's own exponents stay within power_law.MAX_EXPONENT; y^2 doubles them
    # (II.6.15a's r^-5 is r^-10 in y^2)
    limit = power_law.MAX_EXPONENT * (2 if name in SQUARED else 1)
    for wi in weightings:
      if exact or not (np.isfinite(wi).all() and wi.mean() > 0):
        continue
      wi = wi / wi.mean()
      ends, exact = _fit(L, t, wi)
      found = [f for f in (_laws(Xt, cols, ab, t, wi, limit) for ab in ends) if f is not None]
      nodes = []
      if found:
        _, (p1, p2), (c1, c2) = min(found, key=lambda f: f[0])
        if abs(abs(c1) - abs(c2)) <= EQUAL * max(abs(c1), abs(c2)):
          # one constant in two places, as a law has it (4 pi (1 - v/c) for 4 pi - 4 pi v/c):
          # equal in the tree, so SymPy writes it once
          c2 = float(np.copysign(abs(c1), c2))
        nodes = _sum_nodes(name, sign, (p1, p2), (float(c1), float(c2)), positive)
        out.extend(nodes)
      # an exact fit with no law in halves within the limit is a limit itself (ln x as
      # (x^e - 1)/e on I.44.4, exp as high powers on I.40.1), not a law, and a law over the
      # model's tokens is no seed: the other targets go on
      exact = exact and bool(nodes)
    if exact:  # the other targets can only add curve fits
      break
  return list({tuple(E.to_prefix(n)): n for n in out}.values())
