"""Choose at most k input columns for a table with more than LEE's 10 variables.

PySR's `select_k_best` ranks features with a random forest; this is the same idea without
scikit-learn: greedy forward selection by the leave-one-out error of a k-nearest-neighbour
regressor on the chosen columns. A nearest-neighbour fit sees any smooth dependence, also
through interactions (x0 * x1 is invisible to either column's correlation with y), and a
column that carries no information adds only distance noise, so it is chosen last.
"""

from __future__ import annotations

import numpy as np

NEIGHBOURS = 10
MAX_ROWS = 1000  # leave-one-out on n rows costs n^2 per candidate column


def _ranks(v: np.ndarray) -> np.ndarray:
  """Column values -> ranks scaled to [0, 1]: scale-free and robust to outliers. Ties share
  their average rank, so a constant column carries no distance (plain argsort ranks would
  turn it into the row order, which is informative whenever the rows are sorted)."""
  import scipy.stats  # deferred: ~1 s of import for every CLI that never selects columns

  return (scipy.stats.rankdata(v, method="average") - 1) / max(len(v) - 1, 1)


def _loo_error(dist: np.ndarray, y: np.ndarray, neighbours: int) -> float:
  """Mean squared leave-one-out error of the k-nearest-neighbour mean (dist has inf on its
  diagonal, so a row is never its own neighbour)."""
  idx = np.argpartition(dist, neighbours, axis=1)[:, :neighbours]
  return float(np.mean((y[idx].mean(axis=1) - y) ** 2))


def select_features(X, y, k: int, seed: int = 0, neighbours: int = NEIGHBOURS,
                    max_rows: int = MAX_ROWS) -> list[int]:
  """Indices of at most k columns of X [n, p], in the order chosen (most informative first).

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
  base = np.zeros((n, n))
  np.fill_diagonal(base, np.inf)
  chosen: list[int] = []
  for _ in range(k):
    best_j, best_err, best_dist = -1, np.inf, None
    for j in range(p):
      if j in chosen:
        continue
      dist = base + (cols[:, j, None] - cols[None, :, j]) ** 2
      err = _loo_error(dist, y, neighbours)
      if err < best_err:  # ties keep the lower index: deterministic
        best_j, best_err, best_dist = j, err, dist
    chosen.append(best_j)
    base = best_dist
  return chosen
