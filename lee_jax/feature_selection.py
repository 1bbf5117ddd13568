"""Choose at most k input columns for a table with more than LEE's 10 variables.

PySR's `select_k_best` ranks features with a random forest; this is the same idea without
scikit-learn: greedy forward selection by the leave-one-out error of a k-nearest-neighbour
regressor on the chosen columns. A nearest-neighbour fit sees any smooth dependence, and a
column that carries no information adds only distance noise, so it is chosen last.

One column at a time cannot find a pure interaction: on zero-centred data x5 * x11 (or
x3 * cos(x7)) has the same mean for every value of x5 alone, so neither column helps until
the other is chosen. So while at least two slots remain, each step also weighs a PAIR of
unchosen columns: every pair is screened by the leave-one-out error of cell means of the
current residual (y less the leave-one-out fit on the chosen columns) on a grid of rank bins
(one bincount per column, ~0.05 s for 100 columns), and the best few pairs are then scored
like a single column, by the nearest-neighbour error on the chosen columns plus the pair.
The best pair is taken when it beats what greedy selection reaches with the same two slots
(the best column, then the best column after it), so a pair is never taken where one
column at a time does as well: an additive y = x1 + 2 * x4 is still chosen x4 first, then
x1, exactly as without the pair step. A taken pair enters in the order of the two columns'
own errors.
"""

from __future__ import annotations

import numpy as np

NEIGHBOURS = 10
MAX_ROWS = 1000  # leave-one-out on n rows costs n^2 per candidate column
PAIRS_CONFIRMED = 5  # the best pairs by the binned screen that get a nearest-neighbour score


def _ranks(v: np.ndarray) -> np.ndarray:
  """Column values -> ranks scaled to [0, 1]: scale-free and robust to outliers. Ties share
  their average rank, so a constant column carries no distance (plain argsort ranks would
  turn it into the row order, which is informative whenever the rows are sorted)."""
  import scipy.stats  # deferred: ~1 s of import for every CLI that never selects columns

  return (scipy.stats.rankdata(v, method="average") - 1) / max(len(v) - 1, 1)


def _loo_fit(dist: np.ndarray, y: np.ndarray, neighbours: int) -> np.ndarray:
  """Leave-one-out k-nearest-neighbour mean of every row (dist has inf on its diagonal, so a
  row is never its own neighbour)."""
  idx = np.argpartition(dist, neighbours, axis=1)[:, :neighbours]
  return y[idx].mean(axis=1)


def _loo_error(dist: np.ndarray, y: np.ndarray, neighbours: int) -> float:
  """Mean squared leave-one-out error of the k-nearest-neighbour mean."""
  return float(np.mean((_loo_fit(dist, y, neighbours) - y) ** 2))


def _pair_screen(bins: np.ndarray, r: np.ndarray, nb: int, cand: list[int]) -> np.ndarray:
  """Leave-one-out error of the cell means of r on the nb x nb grid of each pair of columns
  in cand: [len(cand), len(cand)], inf on and below the diagonal. bins [n, p] holds each
  column's rank bin (0 .. nb-1); a cell of one row predicts r's mean."""
  n, m = len(r), len(cand)
  r = r - r.mean()
  out = np.full((m, m), np.inf)
  for a in range(m - 1):
    rest = np.asarray(cand[a + 1:])
    width = len(rest)
    cell = (bins[:, cand[a], None] * nb + bins[:, rest] + np.arange(width) * nb * nb).ravel()
    size = width * nb * nb
    count = np.bincount(cell, minlength=size)
    total = np.bincount(cell, np.broadcast_to(r[:, None], (n, width)).ravel(), size)
    square = np.bincount(cell, np.broadcast_to(r[:, None] ** 2, (n, width)).ravel(), size)
    # sum over a cell of (r_i - mean of the others)^2 = (c / (c-1))^2 * (Q - S^2 / c)
    safe = np.maximum(count, 2)
    err = np.where(count >= 2, (safe / (safe - 1)) ** 2 * (square - total ** 2 / safe), square)
    out[a, a + 1:] = err.reshape(width, nb * nb).sum(axis=1) / n
  return out


def select_features(X, y, k: int, seed: int = 0, neighbours: int = NEIGHBOURS,
                    max_rows: int = MAX_ROWS) -> list[int]:
  """Indices of at most k columns of X [n, p], in the order chosen (most informative first;
  the two columns of a pair that matters only jointly are chosen together).

  Deterministic for a given seed (which only picks the rows when n > max_rows).
  """
  X = np.asarray(X, np.float64)
  y = np.asarray(y, np.float64)
  if X.ndim != 2 or y.shape != (len(X),):
    raise ValueError(f"need X [n, p] and y [n]; got shapes {X.shape} and {y.shape}")
  if not isinstance(k, (int, np.integer)) or k < 1:
    raise ValueError(f"k must be a positive integer, got {k!r}")
  n, p = X.shape
  if k >= p:
    return list(range(p))
  if n > max_rows:
    rows = np.sort(np.random.default_rng(seed).choice(n, max_rows, replace=False))
    X, y = X[rows], y[rows]
    n = max_rows
  neighbours = max(1, min(neighbours, n - 2))
  cols = np.stack([_ranks(X[:, j]) for j in range(p)], axis=1)
  y = (y - y.mean()) / (y.std() or 1.0)
  nb = max(2, int(np.sqrt(n / neighbours)))  # ~neighbours rows per cell of the pair screen
  bins = np.minimum((cols * nb).astype(np.int64), nb - 1)
  base = np.zeros((n, n))
  np.fill_diagonal(base, np.inf)
  # A constant column adds no distance, so it scored as "nothing added" and beat a column
  # the law needs whenever that one's first step raised the error (x0 x2 with x1 constant).
  varies = np.ptp(cols, axis=0) > 0

  def singles(base, skip):
    """(error of every column not in skip added to base (inf for those in skip; the largest
    float for a constant one, chosen only when nothing else is left), the best column's
    distance matrix). Ties keep the lower index: deterministic."""
    errs, best, best_dist = np.full(p, np.inf), np.inf, None
    for j in range(p):
      if j in skip:
        continue
      dist = base + (cols[:, j, None] - cols[None, :, j]) ** 2
      errs[j] = _loo_error(dist, y, neighbours) if varies[j] else np.finfo(float).max
      if errs[j] < best:
        best, best_dist = errs[j], dist
    return errs, best_dist

  chosen: list[int] = []
  ahead = None  # singles after the previous step's look-ahead column, when it was taken
  while len(chosen) < k:
    errs, best_dist = ahead if ahead is not None else singles(base, chosen)
    ahead = None
    best_j = int(np.argmin(errs))
    cand = [j for j in range(p) if j not in chosen and j != best_j and varies[j]]
    if k - len(chosen) < 2 or len(cand) < 2:
      chosen.append(best_j)
      base = best_dist
      continue
    # What greedy selection reaches with two slots: best_j, then the best column after it.
    ahead = singles(best_dist, chosen + [best_j])
    greedy_err = float(np.min(ahead[0]))
    # A pair holding best_j cannot beat that (the second greedy column is the best partner).
    fit = _loo_fit(base, y, neighbours) if chosen else np.zeros(n)
    screen = _pair_screen(bins, y - fit, nb, cand)
    pair, pair_err, pair_dist = None, greedy_err, None
    for flat in np.argsort(screen, axis=None, kind="stable")[:PAIRS_CONFIRMED]:
      if not np.isfinite(screen.flat[flat]):  # on or below the diagonal: no pair (a, a)
        break
      a, b = cand[flat // len(cand)], cand[flat % len(cand)]
      dist = base + (cols[:, a, None] - cols[None, :, a]) ** 2 \
          + (cols[:, b, None] - cols[None, :, b]) ** 2
      err = _loo_error(dist, y, neighbours)
      if err < pair_err:
        pair, pair_err, pair_dist = (a, b), err, dist
    if pair is None:
      chosen.append(best_j)
      base = best_dist
    else:  # the column that tells more on its own first; ties keep the lower index
      chosen += sorted(pair, key=lambda j: (errs[j], j))
      base, ahead = pair_dist, None
  return chosen
