"""Composite-argument seeds: functions of products and ratios of variables, f(x1 x2 / x3).

Physics puts its functions around dimensionless groups: n0 exp(-m g x / (kb T)),
2 U (1 - cos(k d)), n mu tanh(mu B / (kb T)), x1 (cos(w t) + a cos(w t)^2). The separable
seeds apply each function to one variable, so none of them reach these laws, and no seed
family builds a function of a product. Here every monomial u of 2..MAX_VARS variables with
exponents +-1 (`monomials`, at most MONOMIAL_LIMIT of them, fewest variables first) is
scored by how much of the target one function of it explains alone (a f(u) + b, f among
the separable seeds' functions and their reciprocals) and, apart, by one product u * v or
v / u with a one-variable factor v (q B v sin(theta): B v alone explains little of it).
The KEEP and the PRODUCTS best (`Ranking.rank`) become extra columns of the data; the
separable seeds of the widened data (products only where a factor is such a column: the
others were seeded already), those columns written back as their monomials, are the seeds.
The same runs on y / M for every power law M of the factored seeds
(`factored.quotient_laws`), each S times M a seed: the M that works is often not the law's
own prefactor (x1 (cos(w t) + a cos(w t)^2) came from M = x1 w t a, S = cos(w t) / (a w t)
+ cos(w t)^2 / (w t)), so none is left out. Seeds that use no composite column are dropped
(the separable and factored seeds hold them); as with the factored seeds, only those of at
most factored.MAX_COMPLEXITY simplified nodes join the pool.
"""

from __future__ import annotations

import itertools

import numpy as np

from lee_jax import expr as E
from lee_jax import factored
from lee_jax import polynomial
from lee_jax import power_law
from lee_jax import separable

MAX_VARS = 5  # variables in one monomial (m g x / (kb T) has 5)
MONOMIAL_LIMIT = 1000  # monomials scored: all of 2..t variables while they fit
KEEP = 4  # best monomials by one function of them that become columns, per target ...
PRODUCTS = 2  # ... and best by a product with a one-variable factor
MAX_TERMS = 2  # terms of the separable sums
# Rows the seeds are found on (a round's fit rows are a random draw, so the first ones are
# too); the search refits every seed's constants on all of them. The separable search over
# the widened data costs rows x factors x new factors, per target.
ROWS = 200

Monomial = dict[int, int]  # {variable: exponent +1 or -1}


def monomials(X: np.ndarray, max_vars: int = MAX_VARS,
              limit: int = MONOMIAL_LIMIT) -> list[Monomial]:
  """Products of 2..max_vars usable columns (finite, never zero, not constant) with
  exponents +-1, the first +1 (1/u is a factor of u already); all monomials of t variables
  or none, while the count stays within limit."""
  with np.errstate(all="ignore"):
    cols = [i for i in range(X.shape[1]) if np.isfinite(X[:, i]).all()
            and (X[:, i] != 0).all() and np.ptp(X[:, i]) > 0]
  out: list[Monomial] = []
  for t in range(2, min(max_vars, len(cols)) + 1):
    combos = list(itertools.combinations(cols, t))
    if len(out) + len(combos) * 2 ** (t - 1) > limit:
      break
    out += [dict(zip(c, (1,) + signs)) for c in combos
            for signs in itertools.product((1, -1), repeat=t - 1)]
  return out


def node(mono: Monomial) -> E.Node:
  """x_i * x_j / x_l ... (the first exponent is +1, so the numerator is never empty)."""
  return polynomial.ratio([E.var(i) for i, e in mono.items() if e > 0],
                          [E.var(i) for i, e in mono.items() if e < 0])


class Ranking:
  """Scores monomials against targets (`rank`); what does not depend on the target (the
  functions of every monomial, centred and normalised; the moments of its products with
  the one-variable factors) is computed once for all the targets of one call."""

  def __init__(self, X: np.ndarray, w: np.ndarray, monos: list[Monomial]):
    self.monos = monos
    self.p = w / w.sum()
    sw = np.sqrt(self.p)
    U = (np.stack([power_law.law_values(X, m) for m in monos], axis=1) if monos
         else np.zeros((len(X), 0)))
    blocks = []
    with np.errstate(all="ignore"):
      for f, _ in separable.FUNCTIONS.values():
        v = f(U)
        for col in (v, 1.0 / v):
          cc = (col - self.p @ col) * sw[:, None]
          norm = np.sqrt(np.einsum("nm,nm->m", cc, cc))
          ok = np.isfinite(col).all(axis=0) & np.isfinite(norm) & (norm > 0)
          blocks.append(np.where(ok, cc / np.where(ok, norm, 1.0), 0.0))
      self.alone = np.concatenate(blocks, axis=1)  # [n, functions * 2 * M], unit columns
      _, self.V = separable.factors(X)  # the one-variable factors v
      self.products = []  # u * v and v / u: (columns u or 1/u, E[uv], Var[uv], usable)
      for W in (U, 1.0 / U):
        W = np.where(np.isfinite(W), W, 0.0)
        mean = (W * self.p[:, None]).T @ self.V
        second = (W * W * self.p[:, None]).T @ (self.V * self.V)
        var = second - mean * mean
        self.products.append((W, mean, var, np.isfinite(var) & (var > 1e-12 * second)))

  def rank(self, y: np.ndarray, keep: int = KEEP, products: int = PRODUCTS) -> list[Monomial]:
    """The keep monomials u whose best single f(u) or 1/f(u) (f in separable.FUNCTIONS)
    explains the most of y's weighted variance by least squares, best first, then the
    `products` others whose best product u * v or v / u with a one-variable factor v
    (`separable.factors`) does (B v in Ef + B v sin(theta): B v alone explains little of
    it); none that explains nothing."""
    M = len(self.monos)
    yc = (y - self.p @ y) * np.sqrt(self.p)
    total = float(yc @ yc)
    if not M or np.ptp(y) == 0 or not total > 0:
      return []
    with np.errstate(all="ignore"):
      best = ((self.alone.T @ yc) ** 2 / total).reshape(-1, M).max(axis=0)
    order = [i for i in np.argsort(-best, kind="stable")[:keep] if best[i] > 1e-12]
    if products:
      paired = np.zeros(M)
      with np.errstate(all="ignore"):
        for W, mean, var, ok in self.products:
          cov = (W * (self.p * y)[:, None]).T @ self.V - mean * (self.p @ y)
          share = np.where(ok, cov * cov / np.where(ok, var, 1.0), 0.0) / total
          if share.size:
            paired = np.maximum(paired, np.where(np.isfinite(share), share, 0.0).max(axis=1))
      paired[order] = 0.0
      order += [i for i in np.argsort(-paired, kind="stable")[:products] if paired[i] > 1e-12]
    return [self.monos[i] for i in order]


def substitute(node_: E.Node, table: dict[int, E.Node]) -> E.Node:
  """node_ with the variables x_i of table replaced by table[i]."""
  if not node_.children:
    return table.get(int(node_.name[1:]), node_) if node_.name[:1] == "x" else node_
  return E.Node(node_.name, tuple(substitute(c, table) for c in node_.children), node_.value)


def _sums(X: np.ndarray, y: np.ndarray, w: np.ndarray, ranking: Ranking, keep: int,
          products: int, max_terms: int, limit: int) -> list[E.Node]:
  """Separable seeds of y on X widened by its best monomials, those that use one."""
  chosen = ranking.rank(y, keep, products)
  if not chosen:
    return []
  k = X.shape[1]
  wide = np.concatenate([X] + [power_law.law_values(X, m)[:, None] for m in chosen], axis=1)
  table = {k + j: node(m) for j, m in enumerate(chosen)}
  return [substitute(s, table)
          for s in separable.separable_fits(wide, y, w, max_terms=max_terms, limit=limit, fresh=k)
          if _columns(s) & table.keys()]


def _columns(node_: E.Node) -> set[int]:
  """The column indices x<i> of node_ reads, past the vocabulary's x9 too: the widened
  table's monomials are x10 and up on 10 columns, which E.variables_used does not see (every
  seed of a 10-column table was dropped)."""
  return {int(n.name[1:]) for n in E.walk(node_) if n.name[:1] == "x" and n.name[1:].isdigit()}


def first_rows(X, y, weights, rows: int):
  """(X, y, w) as float arrays on the first `rows` rows of positive weight (w: ones when
  weights is None); None when y is not finite."""
  X = np.asarray(X, np.float64)
  y = np.asarray(y, np.float64)
  w = np.ones(len(y)) if weights is None else np.asarray(weights, np.float64)
  if not np.isfinite(y).all():
    return None
  use = np.flatnonzero(w > 0)[:rows]
  return X[use], y[use], w[use]


def composite_fits(X: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None,
                   keep: int = KEEP, products: int = PRODUCTS, max_terms: int = MAX_TERMS,
                   rows: int = ROWS, limit: int = polynomial.SUBSET_LIMIT) -> list[E.Node]:
  """Separable sums with monomial arguments, of y and of y / M for every quotient law M
  (times M), found on the first `rows` rows of positive weight. Empty when y is not finite
  or fewer than two columns are usable."""
  data = first_rows(X, y, weights, rows)
  if data is None:
    return []
  X, y, w = data
  monos = monomials(X)
  if len(y) < 2 * (max_terms + 1) or not monos:
    return []
  ranking = Ranking(X, w, monos)
  out = _sums(X, y, w, ranking, keep, products, max_terms, limit)
  for exps, q in factored.quotients(X, y, w, limit):
    out += [power_law.times_power(s, exps)
            for s in _sums(X, q, w, ranking, keep, products, max_terms, limit)]
  return out
