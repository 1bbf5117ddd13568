"""The answer's constants fitted once more, on the training and validation rows together.

The search fits each candidate on the training fold (on a draw of `fit_rows` of it: 500 in
`fast`) and chooses among them by the validation fold (60/15/25). Once the answer is chosen
the validation rows have done their job, and holding them out of its constants leaves a
fifth of the training part unused: on 687_sleuth_ex1605 (62 rows) 9 of its 46. As sklearn's
GridSearchCV(refit=True) or a PySR fit on every row, the chosen formula's free constants are
refitted on all of them (an integer or a half, which the parsimony step or `fit.snap` set,
stays; so does the form). Measured on the answers of the last sweeps: black-box clipped test
R2 +0.001 (40 sets better, 23 worse), Feynman +0.0008 / +0.0008 / +0.0004 at eps 0 / 0.01 /
0.1, Strogatz the same (BUILD_NOTES, "The answer refitted on every training row").

The refit is kept only when the fit succeeds, stays finite on every row, passes the pole
probe the answer passed (`score.bounded`) and is no longer in SymPy's count. The answer's
validation R2 stays the held-out one that chose it.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from lee_jax import complexity
from lee_jax import evaluate
from lee_jax import fit
from lee_jax import parsimony
from lee_jax import pool as pool_lib
from lee_jax import score

MAX_ROWS = 10_000  # rows the refit sees (a seeded draw beyond: SRBench's own training cap)
MAX_ITER = 200  # L-BFGS-B iterations


def every_row(data) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
  """The training and validation folds of a search.SearchData as one set of rows (X, y, w)."""
  X = np.concatenate([np.asarray(data.X_train, np.float64), np.asarray(data.X_val, np.float64)])
  y = np.concatenate([np.asarray(data.y_train, np.float64), np.asarray(data.y_val, np.float64)])
  w = None
  if data.w_train is not None or data.w_val is not None:
    w = np.concatenate([np.ones(len(data.y_train)) if data.w_train is None else data.w_train,
                        np.ones(len(data.y_val)) if data.w_val is None else data.w_val])
  return X, y, w


def refit(c: pool_lib.Candidate, data, alpha: float, seed: int,
          bounded=None) -> tuple[pool_lib.Candidate, int]:
  """(the answer c with its free constants refitted on the training and validation rows,
  the number of rows) -- or (c, rows) itself when the fit fails, is not finite on every
  row, fails `bounded` (an optional predicate on a tree: the pole probe) or comes out longer
  in SymPy's count (two constants that were equal parted).
  The result's r2_val is c's (held out when c was chosen); r2_train and score are the
  refitted tree's on the training fold."""
  X, y, w = every_row(data)
  Xr, yr, wr = parsimony.rows(X, y, w, seed, MAX_ROWS)
  free = parsimony.free_mask(c.node)
  if not free.any() or len(yr) < 2:
    return c, len(yr)
  # (fit_constants keeps its start where the search ends above it: never a worse fit)
  r = fit.fit_constants(c.node, Xr, yr, MAX_ITER, weights=wr, free=free)
  if not r.ok:
    return c, len(yr)
  with np.errstate(all="ignore"):
    finite = np.all(np.isfinite(evaluate.evaluate_numpy(r.node, X)))
  if not finite or (bounded is not None and not bounded(r.node)):
    return c, len(yr)
  # Constants SymPy wrote as one (4 pi c - 4 pi v is 4 pi (c - v)) are two in the tree, and
  # a refit that parts them makes the formula longer: not taken.
  cx = complexity.complexity(r.node)
  if cx > c.complexity:
    return c, len(yr)
  with np.errstate(all="ignore"):
    rt = score.r2(data.y_train, evaluate.evaluate_numpy(r.node, data.X_train), data.w_train)
  ids, consts = score.ids_and_consts(r.node, None)
  return dataclasses.replace(c, node=r.node, ids=ids, consts=consts, r2_train=float(rt),
                             complexity=cx, score=score.search_score(rt, cx, alpha)), len(yr)
