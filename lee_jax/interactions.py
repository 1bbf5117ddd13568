"""Interaction waves: A sin(b x_i x_j + c x_i + d x_j + e) beside a short additive polynomial.

Friedman's benchmark function, 10 sin(pi u1 u2) + 20 (u3 - 1/2)^2 + 10 u4 + 5 u5 on
standardised columns (u = m + s x; 35 of SRBench's 72 black-box sets: the 34 `fri_c*` and
564_fried), and any law
with one smooth interaction of two columns among additive effects, is a wave of a bilinear
form in two columns plus a polynomial of single columns. The long sums' separable products
(cos(x1) cos(x2), x1 cos(x2), ...) approximate the wave piece by piece, and no short formula
of the model's 64 tokens holds the whole law. Here the wave's inner constants are searched
by variable projection: for a pair (i, j) and g = b z_i z_j + c z_i + d z_j on the pair's
standardised columns z, the outer constants (of sin g, cos g, every x_k and x_k^2, and 1)
are least squares, so scipy's least_squares moves (b, c, d) alone, from STARTS. Pairs are
screened first: the PAIRS pairs whose cross terms (z_i z_j, z_i^2 z_j, z_i z_j^2, z_i^2 z_j^2)
add most to the additive fit. The best pair's wave, with its amplitude and phase from the
full fit, is then one column beside the additive ones in the subset search
(`polynomial.column_fits`), and every sum that holds it has all its constants refitted
together (`fit.fit_constants`). `long_sums` offers the sums beside its own.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import scipy.optimize

from lee_jax import expr as E
from lee_jax import fit
from lee_jax import polynomial

PAIRS = 3  # pairs, by the screen, whose wave is fitted
# (b, c, d) starts: b > 0 only, since -g spans the same sin/cos columns; on standardised
# columns Friedman's pi u1 u2 is b ~ 0.26, c = d ~ 0.45 (and a phase).
STARTS = tuple(itertools.product((0.25, 1.0), (-0.5, 0.5), (-0.5, 0.5)))
MAX_NFEV = 60  # residual evaluations per start
POLISH = 200  # L-BFGS-B iterations refitting every constant of a sum that holds the wave


def additive_terms(n_vars: int) -> list[tuple[int, ...]]:
  """Every x_k and x_k^2 as monomial exponents (`polynomial.monomial_node`)."""
  return [tuple(p if i == k else 0 for i in range(n_vars)) for k in range(n_vars) for p in (1, 2)]


def _standardised(v: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, float, float]:
  """(v - m) / s with p's weighted mean m and standard deviation s (just v - m where s is 0,
  v constant on the rows of positive weight, or not finite)."""
  with np.errstate(over="ignore", invalid="ignore"):
    m = float(p @ v)
    s = math.sqrt(float(p @ (v - m) ** 2))
    return ((v - m) / s if 0 < s < math.inf else v - m), m, s


def _explained(A: np.ndarray, yc: np.ndarray) -> float:
  """Share of yc (centred, weighted) that the weighted, centred columns A explain."""
  coef = fit.lstsq(A, yc)
  r = yc - A @ coef
  return 1.0 - float(r @ r) / float(yc @ yc)


def screen(Z: np.ndarray, base: np.ndarray, yc: np.ndarray, p: np.ndarray,
           pairs: int = PAIRS) -> list[tuple[int, int]]:
  """The `pairs` pairs (i, j) whose cross terms of the standardised columns Z add most to
  the centred additive columns `base` (weighted, as yc), best first."""
  sw = np.sqrt(p)
  gains = []
  alone = _explained(base, yc)
  for i, j in itertools.combinations(range(Z.shape[1]), 2):
    zi, zj = Z[:, i], Z[:, j]
    cross = np.stack([zi * zj, zi * zi * zj, zi * zj * zj, zi * zi * zj * zj], axis=1)
    cross = (cross - p @ cross) * sw[:, None]
    gains.append((_explained(np.concatenate([base, cross], axis=1), yc) - alone, (i, j)))
  gains.sort(key=lambda g: -g[0])
  return [ij for _, ij in gains[:pairs]]


def wave_fit(zi: np.ndarray, zj: np.ndarray, base: np.ndarray, yc: np.ndarray,
             p: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
  """The best (b, c, d) for the pair's standardised columns by variable projection from
  every start: (explained share, (b, c, d), the wave's [sin, cos] least-squares weights)."""
  sw = np.sqrt(p)
  total = float(yc @ yc)

  def columns(t):
    g = t[0] * zi * zj + t[1] * zi + t[2] * zj
    W = np.stack([np.sin(g), np.cos(g)], axis=1)
    return np.concatenate([(W - p @ W) * sw[:, None], base], axis=1)

  def residual(t):
    A = columns(t)
    return yc - A @ fit.lstsq(A, yc)

  best = (-np.inf, np.zeros(3), np.zeros(2))
  for start in STARTS:
    with np.errstate(all="ignore"):
      try:
        t = scipy.optimize.least_squares(residual, np.asarray(start, float), method="lm",
                                         max_nfev=MAX_NFEV).x
      except (ValueError, np.linalg.LinAlgError):
        continue
      r = residual(t)
      share = 1.0 - float(r @ r) / total
    if np.isfinite(share) and share > best[0]:
      best = (share, t, fit.lstsq(columns(t), yc)[:2])
  return best


def wave_node(i: int, j: int, t: np.ndarray, phase: float, mi: float, si: float, mj: float,
              sj: float) -> E.Node | None:
  """sin(b z_i z_j + c z_i + d z_j + phase) with z = (x - m) / s, written in x:
  sin(B x_i x_j + C x_i + D x_j + e); None where a constant is not finite (columns near
  1e160 overflow b m_i m_j)."""
  b, c, d = (float(v) for v in t)
  with np.errstate(all="ignore"):
    B = b / (si * sj)
    C = c / si - b * mj / (si * sj)
    D = d / sj - b * mi / (si * sj)
    e = phase + b * mi * mj / (si * sj) - c * mi / si - d * mj / sj
  if not np.isfinite([B, C, D, e]).all():
    return None
  xi, xj = E.var(i), E.var(j)
  arg = E.op("add", E.op("add", E.op("add", E.op("mul", E.const(B), E.op("mul", xi, xj)),
                                            E.op("mul", E.const(C), xi)),
                                E.op("mul", E.const(D), xj)), E.const(e))
  return E.op("sin", arg)


def interaction_fits(X: np.ndarray, y: np.ndarray, weights: np.ndarray | None,
                     max_terms: int) -> list[E.Node]:
  """Of the best 1..max_terms-term sums of the best pair's wave and the additive terms x_k,
  x_k^2 (`polynomial.column_fits`, with and without an intercept), those that hold the
  wave, every constant refitted. Empty with fewer than two columns that vary where the
  weights are positive, too few rows, a value of X or y not finite, or y constant."""
  X = np.asarray(X, np.float64)
  y = np.asarray(y, np.float64)
  n, k = X.shape
  w = np.ones(n) if weights is None else np.asarray(weights, np.float64)
  if k < 2 or n < 2 * (max_terms + 1) or not np.isfinite(y).all() or np.ptp(y) == 0:
    return []
  if not np.isfinite(X).all():
    return []
  p = w / w.sum()
  Z, centre, spread = np.zeros_like(X), np.zeros(k), np.ones(k)
  for c in range(k):
    Z[:, c], centre[c], spread[c] = _standardised(X[:, c], p)
  # columns that vary on the rows of positive weight (and whose square does not overflow)
  usable = [c for c in range(k) if 0 < spread[c] < math.inf and np.isfinite(Z[:, c]).all()]
  if len(usable) < 2:
    return []
  terms = [e for e in additive_terms(k) if any(e[c] for c in usable)]
  M = polynomial.monomial_values(X, terms)
  base, yc, ok = polynomial.centred(M, y, w)
  if not float(yc @ yc) > 0:  # y constant where the weights are
    return []
  base = base[:, ok]
  Zu = Z[:, usable]
  best = None
  for a, b in screen(Zu, base, yc, p):
    share, t, sc = wave_fit(Zu[:, a], Zu[:, b], base, yc, p)
    if best is None or share > best[0]:
      best = (share, usable[a], usable[b], t, sc)
  if best is None or not np.isfinite(best[0]) or not np.isfinite(best[3]).all():
    return []
  _, i, j, t, (s, c) = best
  wave = wave_node(i, j, t, math.atan2(c, s), centre[i], spread[i], centre[j], spread[j])
  if wave is None:
    return []
  from lee_jax import evaluate  # deferred: evaluate imports JAX
  v = evaluate.evaluate_numpy(wave, X)
  if not np.isfinite(v).all():
    return []

  def build(chosen, coefs, intercept):
    parts = [E.op("mul", E.const(float(cf)),
                  wave if col == 0 else polynomial.monomial_node(terms[col - 1]))
             for col, cf in zip(chosen, coefs)]
    return polynomial.sum_node(parts, intercept)

  sums = polynomial.column_fits(np.concatenate([v[:, None], M], axis=1), y, w, max_terms,
                                polynomial.SUBSET_LIMIT,
                                lambda chosen, coefs, c0: (build(chosen, coefs, c0)
                                                           if 0 in chosen else None))
  out = []
  for node in sums:
    if node is None:
      continue
    polished = fit.fit_constants(node, X, y, POLISH, weights=w)
    out.append(polished.node if polished.ok and np.isfinite(polished.nmse) else node)
  return out
