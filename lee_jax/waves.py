"""Wave seeds: a sin(c u + phi) + d for a frequency c that the data choose.

The other seed families put their functions around a variable or a product of variables as
they are: sin(x), cos(m g x / (kb T)). A law with a frequency inside, 2.5 sin(2.3 t) or the
Rabi probability sin^2(2 pi E t / h) = 1/2 - 1/2 cos(4 pi E t / h), is then a curve: the
search answered the first with a five-term sum of powers of t and tanh(t), and the constant
c inside the sine is no easier for the constant fits, whose loss is a comb of local minima
in c. Here the frequency is scanned instead: for every argument u (each variable, and each
product or ratio of two or three variables, `composite.monomials`) and every c on a grid of
CYCLES_STEP cycles across u's span, least squares gives a sin(c u) + b cos(c u) + d, so the
phase costs nothing; the best c of the best arguments is refined on finer grids about it
(`scan`). The KEEP arguments that explain the most of y (weighted R2), where that is more
than noise would (`significant`: the scan tries thousands of argument and frequency pairs,
and on 40 rows of pure noise with 5 columns the best explains a third of it), give their
seeds (`seeds`): the phase form A sin(c u + phi) + d, and a sin(c u) + d and a cos(c u) + d
at the same c, each with and without d. The same runs on y / M for the first QUOTIENTS
quotient laws M (`factored.quotients`: power laws of the columns that keep one sign), each
seed times M: x2 cos(3 x0 x1). The search refits every constant, c among them, from these
starting values, and scores the seeds like any candidate.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from lee_jax import composite
from lee_jax import expr as E
from lee_jax import factored
from lee_jax import polynomial
from lee_jax import power_law

MAX_VARS = 3  # variables in one argument (E t / h has 3)
MONOMIAL_LIMIT = 600  # arguments of 2..MAX_VARS variables scanned, fewest variables first
MIN_CYCLES = 0.25  # the grid's frequencies, in cycles across u's span: slower is a line ...
MAX_CYCLES = 16.0  # ... and faster, on ROWS random rows, fits noise
# A step moves the phase at u's far end by pi / 2: half a step off, the wave still explains
# ~95% of what the law does, enough to rank arguments; the best are refined.
CYCLES_STEP = 1 / 4
REFINE = 3  # finer grids (17 points across two steps of the one before) about the best c
KEEP = 4  # arguments whose seeds are made, per target ...
QUOTIENT_KEEP = 2  # ... and per quotient y / M
QUOTIENTS = 4  # quotient laws M scanned, the first (each scan costs ~0.1 s per 100 arguments)
MIN_R2 = 0.1  # an argument whose best wave explains less of y than this makes no seeds
ROWS = 200  # rows the frequencies are found on; the search refits on all of them
CHUNK = 64  # arguments scanned at once ([grid, rows, CHUNK] floats)


def arguments(X: np.ndarray) -> tuple[list[dict[int, int]], np.ndarray]:
  """The usable arguments ({variable: exponent}) and their values ([n, A]): every variable
  and every product or ratio of 2..MAX_VARS of them (`composite.monomials`) that is finite
  and not constant on the rows."""
  args = [{i: 1} for i in range(X.shape[1])] + composite.monomials(X, MAX_VARS, MONOMIAL_LIMIT)
  U = np.stack([power_law.law_values(X, m) for m in args], axis=1)
  with np.errstate(all="ignore"):
    ok = np.isfinite(U).all(axis=0) & (np.ptp(U, axis=0) > 0)
  return [m for m, o in zip(args, ok) if o], U[:, ok]


def _shares(U: np.ndarray, c: np.ndarray, yc: np.ndarray, p: np.ndarray,
            total: float) -> np.ndarray:
  """Share of y's weighted variance that a sin(c u) + b cos(c u) + d explains, for every
  frequency c[g, a] of every column U[:, a]: [G, A]. yc is y centred and times sqrt(p)."""
  sw = np.sqrt(p)
  phase = c[:, None, :] * U[None, :, :]  # [G, n, A]
  with np.errstate(all="ignore"):
    s, k = np.sin(phase), np.cos(phase)
    s = (s - np.einsum("n,gna->ga", p, s)[:, None, :]) * sw[None, :, None]
    k = (k - np.einsum("n,gna->ga", p, k)[:, None, :]) * sw[None, :, None]
    ss, kk, sk = (np.einsum("gna,gna->ga", a, b) for a, b in ((s, s), (k, k), (s, k)))
    sy, ky = np.einsum("gna,n->ga", s, yc), np.einsum("gna,n->ga", k, yc)
    det = ss * kk - sk * sk
    explained = (kk * sy * sy - 2 * sk * sy * ky + ss * ky * ky) / det
    ok = np.isfinite(explained) & (det > 1e-12 * ss * kk)
  return np.where(ok, explained / total, 0.0)


def grid() -> np.ndarray:
  """The frequencies scanned, in cycles across an argument's span."""
  return np.arange(MIN_CYCLES, MAX_CYCLES + CYCLES_STEP / 2, CYCLES_STEP)


def scan(U: np.ndarray, y: np.ndarray, w: np.ndarray,
         refine: int | None = None) -> tuple[np.ndarray, np.ndarray]:
  """The best frequency of every column U[:, a] (finite, not constant) and its share of
  y's variance: ([A], [A]), share 0 where y is constant. The grid's best is refined for the
  `refine` columns of the highest share (None: all)."""
  p = w / w.sum()
  yc = (y - p @ y) * np.sqrt(p)
  total = float(yc @ yc)
  A = U.shape[1]
  best_c, best_r2 = np.zeros(A), np.zeros(A)
  if not total > 0 or not A:
    return best_c, best_r2
  base = 2 * math.pi / np.ptp(U, axis=0)  # one cycle across the span
  cycles = grid()
  for lo in range(0, A, CHUNK):
    cols = slice(lo, lo + CHUNK)
    c = cycles[:, None] * base[None, cols]
    r2 = _shares(U[:, cols], c, yc, p, total)
    g = r2.argmax(axis=0)
    at = np.arange(r2.shape[1])
    best_c[cols], best_r2[cols] = c[g, at], r2[g, at]
  top = np.argsort(-best_r2, kind="stable")[:refine]
  step = CYCLES_STEP * base[top]
  for _ in range(REFINE):  # finer grids about the best
    c = best_c[None, top] + np.linspace(-1, 1, 17)[:, None] * step[None, :]
    r2 = _shares(U[:, top], c, yc, p, total)
    g = r2.argmax(axis=0)
    at = np.arange(len(top))
    better = r2[g, at] > best_r2[top]
    best_c[top] = np.where(better, c[g, at], best_c[top])
    best_r2[top] = np.where(better, r2[g, at], best_r2[top])
    step = step / 8
  return best_c, best_r2


def significant(n: int, hypotheses: int) -> float:
  """The share of variance a wave must explain to make seeds: MIN_R2, or more where noise
  alone would reach it. One (argument, frequency) pair's share of n rows of noise is about
  chi2_2 / n, so the best of H exceeds 2 ln(20 H) / n about one time in twenty."""
  return max(MIN_R2, 2 * math.log(20 * max(hypotheses, 1)) / max(n, 1))


def _wave(kind: str, c: float, arg: E.Node) -> E.Node:
  return E.op(kind, E.op("mul", E.const(c), arg))


def seeds(u: np.ndarray, arg: E.Node, c: float, y: np.ndarray, w: np.ndarray) -> list[E.Node]:
  """A sin(c u + phi) + d, a sin(c u) + d and a cos(c u) + d, each with and without d, with
  their least-squares constants at this c; arg is u as a formula."""
  out = []
  with np.errstate(all="ignore"):
    s, k = np.sin(c * u), np.cos(c * u)
  sw = np.sqrt(w)
  for intercept in (True, False):
    for kind, cols in (("phase", (s, k)), ("sin", (s,)), ("cos", (k,))):
      M = np.stack(cols + ((np.ones_like(u),) if intercept else ()), axis=1)
      coef = np.linalg.lstsq(M * sw[:, None], y * sw, rcond=None)[0]
      if not np.isfinite(coef).all():
        continue
      if kind == "phase":
        amp, phi = math.hypot(coef[0], coef[1]), math.atan2(coef[1], coef[0])
        term = E.op("mul", E.const(amp), E.op(
            "sin", E.op("add", E.op("mul", E.const(c), arg), E.const(phi))))
      else:
        term = E.op("mul", E.const(float(coef[0])), _wave(kind, c, arg))
      out.append(E.op("add", term, E.const(float(coef[-1]))) if intercept else term)
  return out


def _target_seeds(y: np.ndarray, w: np.ndarray, args: list[dict[int, int]], U: np.ndarray,
                  keep: int) -> list[E.Node]:
  """The seeds of the keep arguments (columns of U) whose best wave explains the most of y,
  those above `significant`."""
  c, r2 = scan(U, y, w, refine=keep)
  floor = significant(len(y), U.shape[1] * len(grid()))
  out = []
  for a in np.argsort(-r2, kind="stable")[:keep]:
    if r2[a] >= floor:
      out += seeds(U[:, a], composite.node(args[a]), float(c[a]), y, w)
  return out


def wave_fits(X: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None,
              keep: int = KEEP, quotient_keep: int = QUOTIENT_KEEP, rows: int = ROWS,
              limit: int = polynomial.SUBSET_LIMIT) -> list[E.Node]:
  """Wave seeds of y and of y / M for every quotient law M (times M), found on the first
  `rows` rows of positive weight. Empty when y is not finite or nothing is usable."""
  data = composite.first_rows(X, y, weights, rows)
  if data is None:
    return []
  X, y, w = data
  args, U = arguments(X)
  if len(y) < 8 or not args:
    return []
  out = _target_seeds(y, w, args, U, keep)
  for exps, q in itertools.islice(factored.quotients(X, y, w, limit), QUOTIENTS):
    out += [power_law.times_power(s, exps)
            for s in _target_seeds(q, w, args, U, quotient_keep)]
  return out
