"""Transformed-target seeds: sqrt(S), 1/S and exp(S) where S is a seed of y^2, 1/y or log y.

Some laws are short only inside an outer function: the distance sqrt((x2-x1)^2 + (y2-y1)^2)
is a six-term polynomial under its root, the thin lens 1/(1/d1 + n/d2) a two-term sum under
its reciprocal, the Gaussian exp(-theta^2/(2 sigma^2))/sigma a two-term sum under its
exponential. The other seed families fit y itself, where these laws are neither sums nor
products, and answer them with 20-30-node curve fits. Where y keeps one sign (up to noise:
`one_sign`), it is transformed by g (y^2, 1/y, log|y|), the power-law, polynomial, separable
and factored seeds are found for g(y), each by least squares with y's weights and with the
delta method's (`targets`, the weights noise on y gives g(y)), and each S found comes back
as g's inverse of S with y's sign.
The transforms give ~150 such seeds on a Feynman table; the KEEP that fit y best with
their least-squares constants (R2 on the rows) are kept and snapped (`fit.snap`: an exact
seed's 0.9999999 coefficients become 1 and leave the tree, `without_units`, which the
six-term square needs to fit in the model's 64 tokens), so the search fits and simplifies
few. It refits their constants on y itself and scores them like any candidate; those of at
most MAX_COMPLEXITY simplified nodes join the pool where they beat its best score (R2 -
alpha C) or are exact (validation R2 within EXACT of 1): a root or a reciprocal of a curve
fit fits a little better than the fit, and the answer is chosen by validation R2.
"""

from __future__ import annotations

import numpy as np

from lee_jax import evaluate
from lee_jax import expr as E
from lee_jax import factored
from lee_jax import fit
from lee_jax import polynomial
from lee_jax import power_law
from lee_jax import score
from lee_jax import separable

# Outer functions g (`targets`) and their inverses (`inverse`).
TRANSFORMS = ("square", "reciprocal", "log")
SQUARE_TERMS = 6  # polynomial terms under a root (the 2-D distance has 6)
MAX_TERMS = 3  # terms of the other sums
# The laws these are for simplify to at most ~23 nodes (the 2-D distance, expanded, 23;
# the thin lens 9; the Gaussian 14). The pool's other seeds stop at factored.MAX_COMPLEXITY.
MAX_COMPLEXITY = 24
KEEP = 12  # seeds, by their R2 on y, that the search fits and scores
# A seed this close to validation R2 1 joins the pool even where its extra nodes cost more
# score than its R2 gains: sqrt(w^2/c^2 - pi^2/d^2) at 14 nodes against a 0.9989 fit at 12.
EXACT = 1e-6
# The most of the weighted rows that may have the other sign (or zero) where y keeps one
# sign up to noise (`one_sign`).
MINORITY = 0.1
# Rows the seeds are found on (the first of the search's fit rows, a random draw): the
# factored seeds' subset searches dominate the cost, and the search refits on all rows.
ROWS = 200


def one_sign(y: np.ndarray, w: np.ndarray) -> float | None:
  """+1 or -1 when y keeps that sign up to noise: the other sign (or zero) on at most
  MINORITY of the weighted rows, each of them nearer zero than the median row. Noise of 10%
  of y's RMS flips the sign of 0.01-30% of the rows of a positive Feynman law (83 of them)
  that is near zero there, where a law that changes sign crosses zero with large values on
  both sides. None otherwise."""
  rows = w > 0
  y, w = y[rows], w[rows]
  if not len(y):
    return None
  for sign in (1.0, -1.0):
    other = sign * y <= 0
    share = w[other].sum() / w.sum()
    if share == 0 or (share <= MINORITY
                      and np.abs(y[other]).max() < np.median(np.abs(y[~other]))):
      return sign
  return None


def targets(y: np.ndarray, w: np.ndarray):
  """(name, sign, rows, g(sign * y[rows]), weights) for each transform y admits
  (`TRANSFORMS`): rows are those of y's sign (`one_sign`), weights w times the inverse of
  the variance that noise on y gives g (1 / g'(y)^2, the delta method), so that a least-
  squares fit of g(y) weighs the rows as a fit of y would: 1/y^2 for the square (y floored
  at its 5% quantile, where noise passes the signal), y^4 for the reciprocal, y^2 for the
  log. Unweighted, a noisy y's near-zero rows dominate 1/y and log y, and its large ones y^2,
  and the seeds found there are no laws (eps 0.1: the thin lens's seed a 26-node fit)."""
  sign = one_sign(y, w)
  if sign is None:
    return
  rows = (sign * y > 0) & (w > 0)
  # No floor on |y| in the transforms: a Gaussian's tail is 1e-5 of its peak and exact
  # under the log. Noise near zero makes poor seeds there, which `best` leaves out.
  a, w = sign * y[rows], w[rows]
  floor = np.quantile(a, 0.05)
  with np.errstate(all="ignore"):
    yield "square", sign, rows, a * a, w / np.maximum(a, floor) ** 2
    yield "reciprocal", sign, rows, 1.0 / a, w * a ** 4
    yield "log", sign, rows, np.log(a), power_law.log_weights(a, w)


def inverse(name: str, sign: float, s: E.Node) -> E.Node:
  """sign * g^-1(s): sqrt(s), 1/s or exp(s)."""
  if name == "square":
    node = E.op("sqrt", s)
  elif name == "reciprocal":
    node = E.op("div", E.const(1.0), s)
  elif name == "log":
    node = E.op("exp", s)
  else:
    raise ValueError(f"unknown transform {name!r}; choose from {TRANSFORMS}")
  return node if sign > 0 else E.op("neg", node)


def inner_fits(name: str, X: np.ndarray, t: np.ndarray, w: np.ndarray,
               limit: int = polynomial.SUBSET_LIMIT) -> list[E.Node]:
  """The seeds S of the transformed target t: power laws, short polynomials (up to
  SQUARE_TERMS under a root), separable sums and, but under the exponential, factored sums
  (a power law times a sum in an exponent is no law we know, and they cost the most)."""
  square = name == "square"
  return (power_law.power_fits(X, t, w, limit)
          + polynomial.sparse_fits(X, t, w, degree=2 if square else polynomial.DEGREE,
                                   max_terms=SQUARE_TERMS if square else MAX_TERMS, limit=limit)
          + separable.separable_fits(X, t, w, max_terms=MAX_TERMS, limit=limit)
          + (factored.factored_fits(X, t, w, limit=limit) if name != "log" else []))


def best(nodes: list[E.Node], X: np.ndarray, y: np.ndarray, w: np.ndarray,
         keep: int) -> list[E.Node]:
  """The keep nodes of highest weighted R2 on (X, y) with their own constants, distinct
  by prefix; those not finite on every row left out."""
  scored, seen = [], set()
  for node in nodes:
    key = tuple(E.to_prefix(node))
    if key in seen:
      continue
    seen.add(key)
    with np.errstate(all="ignore"):
      y_hat = evaluate.evaluate_numpy(node, X)
    if np.isfinite(y_hat).all():
      scored.append((score.r2(y, y_hat, w), len(scored), node))
  scored.sort(key=lambda s: (-s[0], s[1]))
  return [node for _, _, node in scored[:keep]]


def _is(node: E.Node, value: float) -> bool:
  return node.name == "const" and node.value == value


def without_units(node: E.Node) -> E.Node:
  """The tree with unit factors and zero summands written out: mul(1, a) -> a,
  mul(-1, a) -> neg(a), add(a, 0) -> a, add(a, neg(b)) -> sub(a, b). Each constant costs 9
  tokens, and the six unit coefficients of the 2-D distance's square would not leave it
  room in the model's 64."""
  kids = tuple(without_units(c) for c in node.children)
  if node.name == "mul":
    for c, other in (kids, kids[::-1]):
      if _is(c, 1.0):
        return other
      if _is(c, -1.0):
        return E.op("neg", other)
  if node.name == "add":
    a, b = kids
    if _is(b, 0.0) or _is(a, 0.0):
      return a if _is(b, 0.0) else b
    if b.name == "neg":
      return E.op("sub", a, b.children[0])
  return E.Node(node.name, kids, node.value)


def transformed_fits(X: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None,
                     keep: int = KEEP, limit: int = polynomial.SUBSET_LIMIT) -> list[E.Node]:
  """The keep best (`best`) of sign * g^-1(S) for every transform g that y admits and every
  seed S of g(sign * y) (`inner_fits`). Empty when y is not finite or changes sign."""
  X = np.asarray(X, np.float64)
  y = np.asarray(y, np.float64)
  w = np.ones(len(y)) if weights is None else np.asarray(weights, np.float64)
  if len(y) < 4 or not np.isfinite(y).all():
    return []
  X, y, w = X[w > 0], y[w > 0], w[w > 0]  # a row of weight 0 may hold any sign
  out = []
  # y's sign on every row, not only the first ROWS
  for name, sign, rows, t, wt in targets(y, w):
    Xt, t, wt = X[rows][:ROWS], t[:ROWS], wt[:ROWS]
    if len(t) < 4 or not np.isfinite(t).all() or np.ptp(t) == 0:
      continue
    # Fitted both ways, y's weights and the delta method's, and `best` judges the seeds on y:
    # the delta method's weights find the laws under noise and fit most other targets
    # better, but they lose some exact ones (the Gaussian's tail weighs 1e-10 in its log).
    for wi in (w[rows][:ROWS], wt / wt.mean() if np.isfinite(wt).all() else None):
      if wi is not None:
        out += [inverse(name, sign, s) for s in inner_fits(name, Xt, t, wi, limit)]
  # Snapped (exact seeds' coefficients of 0.999999 and terms of 1e-15 go) so that they fit
  # in the model's tokens.
  snapped = [without_units(fit.snap(n, X, y, w)) for n in best(out, X, y, w, keep)]
  return list({tuple(E.to_prefix(n)): n for n in snapped}.values())
