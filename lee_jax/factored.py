"""Factored seeds: a power law times a short sum, M(x) * S(x).

Many Feynman laws are a product of powers times a short sum or one function: G m1 m2 (1/r2 -
1/r1), kappa A (T2 - T1) / d, n kb T ln(V2 / V1), p_d cos(theta) / (4 pi eps r^2). No single
seed family writes them: the power-law seeds need one sign and one product, the polynomial
and separable seeds cannot carry four or five factors. Logarithms separate them: log|y| =
log|M| + log|S|, and where S's variables are not M's the least-squares fit of log|y| on the
log|x_i| gives M's exponents. For each of the power-law seeds' best t-column subsets
(`power_law.log_laws`, on every row where y is not zero, so S may change sign) the exponents
rounded to halves and to integers give M (log|S| is heavy-tailed where S crosses zero, and
I.13.12's m2 comes out 1.47 on 200 rows: halves alone find an exact M in 3 of 12 draws,
both in 12 of 12); the separable and polynomial seeds of y / M give S, and each S
times M is a seed. A wrong M costs nothing but its seeds' fits: a variable of S that lands
in M is divided out again where S has the room (I.13.12's 1/(r1 r2) times r1 - r2). Like the
other seeds they compete in the pool as ordinary candidates, those that simplify to at most
MAX_COMPLEXITY nodes.
"""

from __future__ import annotations

import numpy as np

from lee_jax import expr as E
from lee_jax import polynomial
from lee_jax import power_law
from lee_jax import separable

MAX_TERMS = 2  # terms of S
# Longer seeds stay out of the pool. The laws these seeds are for simplify to 11-15 nodes
# (I.13.12 15, II.6.15b 13, n kb T ln(V2/V1) 11); longer ones are curve fits (a Taylor
# polynomial times a power law), which win on validation R2 (the answer is chosen by it, not
# by the penalised score) at 20-27 nodes: on 52 Feynman sets uncapped, test R2 0.941 ->
# 0.958 at complexity 11.0 -> 13.2; their answers above 16 nodes reverted, 0.956 at 10.7.
MAX_COMPLEXITY = 16


def quotient_laws(X: np.ndarray, y: np.ndarray, w: np.ndarray,
                  limit: int = polynomial.SUBSET_LIMIT) -> list[dict[int, float]]:
  """The distinct rounded power laws M (`power_law.rounded`, to halves and to integers) of
  the best t-column log fits of |y| (t = 1..k), leaving out an exact one (y is then M
  itself, a power-law seed) and any with an exponent above power_law.MAX_EXPONENT."""
  rows = (y != 0) & (w > 0)
  cols = power_law.base_columns(X)
  if not cols or rows.sum() < 4:
    return []
  out: list[dict[int, float]] = []
  with np.errstate(all="ignore"):
    laws = power_law.log_laws(np.log(np.abs(X[rows][:, cols])), np.log(np.abs(y[rows])),
                              w[rows], limit)
    for chosen, a, exact in laws:
      for step in (0.5, 1.0):
        exps = power_law.rounded(X, cols, chosen, a, step)
        if (not exact and exps and exps not in out
            and max(abs(e) for e in exps.values()) <= power_law.MAX_EXPONENT):
          out.append(exps)
  return out


def quotients(X: np.ndarray, y: np.ndarray, w: np.ndarray,
              limit: int = polynomial.SUBSET_LIMIT):
  """(M, y / M) for every quotient law M (`quotient_laws`) where both are finite."""
  for exps in quotient_laws(X, y, w, limit):
    m = power_law.law_values(X, exps)
    with np.errstate(all="ignore"):
      q = y / m
    if np.isfinite(q).all() and np.isfinite(m).all():
      yield exps, q


def factored_fits(X: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None,
                  max_terms: int = MAX_TERMS,
                  limit: int = polynomial.SUBSET_LIMIT) -> list[E.Node]:
  """S(x) * M(x) for every quotient law M (`quotient_laws`) and every separable and
  polynomial seed S (1..max_terms terms) of y / M. Empty when y is not finite or no column
  can be a base."""
  X = np.asarray(X, np.float64)
  y = np.asarray(y, np.float64)
  w = np.ones(len(y)) if weights is None else np.asarray(weights, np.float64)
  if len(y) < 4 or not np.isfinite(y).all():
    return []
  out = []
  for exps, q in quotients(X, y, w, limit):
    sums = (separable.separable_fits(X, q, w, max_terms=max_terms, limit=limit)
            + polynomial.sparse_fits(X, q, w, max_terms=max_terms, limit=limit))
    out += [power_law.times_power(s, exps) for s in sums]
  return out
