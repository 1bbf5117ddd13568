"""Separable seeds: the best 1..T-term sums of products of two unary functions of the data.

The polynomial seeds (polynomial.py) cover laws that are short polynomials. Many other laws
are short sums of products and ratios of one-variable functions: shear flow's cos(x)/tan(y),
the glider's x - cos(y)/x, the bead's 0.5 sin(x - y) - sin(x) = 0.5 sin(x)cos(y) -
0.5 cos(x)sin(y) - sin(x). A model that misses them from the scatter alone can still refine
them once they are in the pool as parents (it decodes shear flow's law from the law's own
tokens every time, never from its scatter). Each factor is u(x_i) or 1/u(x_i) for u in
FUNCTIONS; a term is one factor or the product of two. Terms are scored by least squares
with the products streamed, never all held (`best_terms`): the KEEP best alone, then the
best beside a partner (a second term such as cos(y)/x that explains little of y alone) and
the plain factors best beside any kept term (log(sigma) beside theta^2/sigma^2), then, for
three terms, the best against what two leave. The polynomial seeds' subset search
(`polynomial.column_fits`) gives the best 1..T-term sums of those, with and without an
intercept. Like the polynomial seeds they compete in the pool as ordinary candidates.
"""

from __future__ import annotations

import math

import numpy as np

from lee_jax import expr as E
from lee_jax import fit
from lee_jax import polynomial

MAX_TERMS = 3
KEEP = 64  # terms, by their own fit, that the subset search sees
FIRSTS = 8  # best terms that partner a second term ...
PARTNERS = 32  # ... beside this many best plain factors u(x_i)

# name -> (values, node): a unary function as the vocabulary writes it.
FUNCTIONS: dict[str, tuple] = {
    "x": (lambda v: v, lambda x: x),
    "sin": (np.sin, lambda x: E.op("sin", x)),
    "cos": (np.cos, lambda x: E.op("cos", x)),
    "tan": (np.tan, lambda x: E.op("tan", x)),
    "tanh": (np.tanh, lambda x: E.op("tanh", x)),
    "exp": (np.exp, lambda x: E.op("exp", x)),
    "log": (np.log, lambda x: E.op("log", x)),
    "sqrt": (np.sqrt, lambda x: E.op("sqrt", x)),
    "sq": (np.square, lambda x: E.op("sq", x)),
    "cube": (lambda v: v * v * v, lambda x: E.op("cube", x)),
    "sin2": (lambda v: np.sin(v) ** 2, lambda x: E.op("sq", E.op("sin", x))),
    "cos2": (lambda v: np.cos(v) ** 2, lambda x: E.op("sq", E.op("cos", x))),
}

PERIODIC = ("sin", "cos", "tan", "sin2", "cos2")

Factor = tuple[int, str, int]  # (variable, function, power +1 or -1)


def factors(X: np.ndarray, periodic_span: float | None = None) -> tuple[list[Factor], np.ndarray]:
  """Every u(x_i) and 1/u(x_i) that is finite and not constant on the rows: ([F], [n, F]).
  periodic_span: no periodic u of a column whose values span more than this (sin of an
  integer count from 4 to 122 is a column of noise that a long sum fits)."""
  specs, cols = [], []
  with np.errstate(all="ignore"):
    for i in range(X.shape[1]):
      wide = periodic_span is not None and np.ptp(X[:, i]) > periodic_span
      for name, (f, _) in FUNCTIONS.items():
        if wide and name in PERIODIC:
          continue
        v = f(X[:, i])
        for p, col in ((1, v), (-1, 1.0 / v)):
          if np.isfinite(col).all() and np.ptp(col) > 0:
            specs.append((i, name, p))
            cols.append(col)
  return specs, (np.stack(cols, axis=1) if cols else np.zeros((len(X), 0)))


def _fit_share(C: np.ndarray, yc: np.ndarray, sw: np.ndarray, w: np.ndarray,
               partners: np.ndarray | None = None) -> np.ndarray:
  """Share of the centred target's variance ([n]) each column of C ([n, m] -> [m]) explains
  alone or, with partners (centred columns [n, J]), beside its best partner; 0 for
  non-finite or constant columns."""
  with np.errstate(all="ignore"):
    Cc = (C - (w @ C) / w.sum()) * sw[:, None]
    yb, gbb = Cc.T @ yc, np.einsum("nm,nm->m", Cc, Cc)
    if partners is None:
      share = yb ** 2 / gbb
    else:  # the two-column least-squares fit of each (partner a, column b), in closed form
      ya, gaa, gab = partners.T @ yc, np.einsum("nj,nj->j", partners, partners), Cc.T @ partners
      det = gaa * gbb[:, None] - gab ** 2
      pair = (ya ** 2 * gbb[:, None] - 2 * ya * yb[:, None] * gab + yb[:, None] ** 2 * gaa) / det
      # b (nearly) a multiple of a adds nothing: a's own share
      pair = np.where(det > 1e-9 * gaa * gbb[:, None], pair, ya ** 2 / gaa)
      share = pair.max(axis=1)
    share = share / (yc @ yc)
  return np.where(np.isfinite(share), share, 0.0)


def best_terms(table: tuple[list[Factor], np.ndarray], yc: np.ndarray, w: np.ndarray,
               keep: int = KEEP, partners: np.ndarray | None = None,
               singles: bool = False, fresh: int | None = None) -> list[tuple[Factor, ...]]:
  """The `keep` terms (one factor or two) of the factor table (`factors`) whose weighted
  least-squares fit to the centred, weighted target yc explains the most, alone or beside
  their best partner (`_fit_share`), best first. Products of two factors are made one first
  factor at a time, so the [n, F^2] matrix never exists (F = 24 per variable at most).
  singles: one factor only, u(x_i). fresh: products only where a factor's variable is >=
  fresh (columns appended to the data; the others' products were scored before)."""
  sw = np.sqrt(w / w.sum())
  specs, V = table
  # Candidates as factor indices (second -1 for one factor), scores per block in the same
  # order; tuples are made for the kept ones only.
  firsts: list[np.ndarray] = []
  seconds: list[np.ndarray] = []
  scores: list[np.ndarray] = []

  def prune():
    s = np.concatenate(scores)
    top = np.argsort(-s, kind="stable")[:keep]
    firsts[:], seconds[:] = [np.concatenate(firsts)[top]], [np.concatenate(seconds)[top]]
    scores[:] = [s[top]]

  def offer(a, b, C):
    firsts.append(a)
    seconds.append(b)
    scores.append(_fit_share(C, yc, sw, w, partners))
    if sum(len(x) for x in firsts) > 4 * keep:
      prune()

  offer(np.arange(len(specs)), np.full(len(specs), -1), V)
  ids: dict[tuple, int] = {}
  kind = np.array([ids.setdefault(s[:2], len(ids)) for s in specs], int)  # (variable, function)
  var = np.array([s[0] for s in specs], int)
  for a in range(0 if singles else len(specs) - 1):
    # (u, +1) x (u, -1) is 1 and (u, p) x (u, p) a square: pairs of distinct functions only
    rest = np.arange(a + 1, len(specs))
    ok = kind[rest] != kind[a]
    if fresh is not None:
      ok &= np.maximum(var[a], var[rest]) >= fresh
    rest = rest[ok]
    if len(rest):
      with np.errstate(all="ignore"):
        C = V[:, a:a + 1] * V[:, rest]
      offer(np.full(len(rest), a), rest, C)
  if not scores:
    return []
  prune()
  return [(specs[a],) if b < 0 else (specs[a], specs[b])
          for a, b, s in zip(firsts[0], seconds[0], scores[0]) if s > 0]


def term_values(terms: list[tuple[Factor, ...]], X: np.ndarray) -> np.ndarray:
  """Values of terms on the rows of X: [n, len(terms)]."""
  cols = []
  with np.errstate(all="ignore"):
    for term in terms:
      col = np.ones(len(X))
      for i, name, p in term:
        col = col * FUNCTIONS[name][0](X[:, i]) ** p
      cols.append(col)
  return np.stack(cols, axis=1) if cols else np.zeros((len(X), 0))


def term_node(term: tuple[Factor, ...], coef: float) -> E.Node:
  """coef * (numerator factors) / (denominator factors)."""
  num = [FUNCTIONS[name][1](E.var(i)) for i, name, p in term if p > 0]
  den = [FUNCTIONS[name][1](E.var(i)) for i, name, p in term if p < 0]
  return polynomial.ratio([E.const(coef)] + num, den)


def sum_node(terms: list[tuple[Factor, ...]], coefs: np.ndarray, intercept: float | None) -> E.Node:
  """c1 * t1 + c2 * t2 + ... (+ c0 unless intercept is None)."""
  return polynomial.sum_node([term_node(t, float(c)) for t, c in zip(terms, coefs)], intercept)


def separable_fits(X: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None,
                   max_terms: int = MAX_TERMS, keep: int = KEEP,
                   limit: int = polynomial.SUBSET_LIMIT, fresh: int | None = None,
                   periodic_span: float | None = None, thorough: bool = True) -> list[E.Node]:
  """The best 1..max_terms-term sums of terms, with and without an intercept. The subset
  search sees the `keep` terms that fit y best alone, the keep/2 best beside a partner, the
  keep/4 plain factors best beside any of the first `keep`, and for three terms the keep/4
  that best fit what the best two-term sum leaves; every pair of them is tried. fresh: see
  `best_terms`; periodic_span: see `factors`; thorough=False leaves out the plain factors'
  pass and the every-pair search (the long sums' curve fits: with them, 9 of the 13 sums
  that changed had a lower validation R2). Empty when the data are too few, not finite or
  constant."""
  X = np.asarray(X, np.float64)
  y = np.asarray(y, np.float64)
  w = np.ones(len(y)) if weights is None else np.asarray(weights, np.float64)
  if len(y) < 2 * (max_terms + 1) or not np.isfinite(y).all() or np.ptp(y) == 0:
    return []
  sw = np.sqrt(w / w.sum())
  yc = (y - (w @ y) / w.sum()) * sw
  table = factors(X, periodic_span)  # shared by every pass below

  def subset_limit(n: int) -> int:  # thorough: every pair of n terms (a few thousand 2 x 2
    # solves; a beam missed bacres1's best pair among 112 terms), the beam above that
    return max(limit, math.comb(n, 2)) if thorough else limit

  terms = best_terms(table, yc, w, keep, fresh=fresh)
  for t in range(1, max_terms):
    if not terms:
      return []
    if t == 1:
      # The second term: scored beside its best partner among the best terms and the plain
      # one-variable factors (x - cos(y)/x: x is far from the best terms alone, and cos(y)/x
      # explains little of y by itself).
      firsts = terms[:FIRSTS] + [u for u in best_terms(table, yc, w, PARTNERS, singles=True)
                                 if u not in terms[:FIRSTS]]
      P, _, usable = polynomial.centred(term_values(firsts, X), y, w)
      more = best_terms(table, yc, w, keep // 2, partners=P[:, usable], fresh=fresh)
      # and plain factors beside any kept term: log(sigma) explains little of a Gaussian's
      # log y alone, and its partner theta^2/sigma^2 ranks 10th-16th (Feynman I.6.2)
      if thorough:
        K, _, usable = polynomial.centred(term_values(terms, X), y, w)
        more += [u for u in best_terms(table, yc, w, keep // 4, partners=K[:, usable],
                                       singles=True) if u not in more]
    else:  # the third: scored against what the best two-term sum leaves
      Mc, yc2, usable = polynomial.centred(term_values(terms, X), y, w)
      subsets = polynomial.best_subsets(Mc.T @ Mc, Mc.T @ yc2, usable, t,
                                        subset_limit(len(terms)))
      if not subsets:  # (no term of finite variance)
        break
      chosen = subsets[-1]
      coefs = fit.lstsq(Mc[:, chosen], yc2)
      resid = yc2 - Mc[:, chosen] @ coefs
      if float(resid @ resid) <= 1e-20 * float(yc2 @ yc2):
        break
      more = best_terms(table, resid, w, keep // 4, fresh=fresh)
    terms += [u for u in more if u not in terms]
  if not terms:
    return []
  # Shortest first: of two terms equal on the data (tan(x) cos(x)^2 and sin(x) cos(x))
  # the subset search keeps the first (`polynomial.unit_columns`).
  terms.sort(key=lambda t: len(E.to_prefix(term_node(t, 1.0))))
  return polynomial.column_fits(term_values(terms, X), y, w, max_terms,
                                subset_limit(len(terms)),
                                lambda chosen, coefs, c0: sum_node([terms[c] for c in chosen], coefs, c0))
