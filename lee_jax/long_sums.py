"""Long sums: the answer when no short formula fits (black-box data).

Real tables (PMLB's Friedman sets, 609_fri_c0_1000_5: 10 sin(pi u1 u2) + 20 (u3 - 0.5)^2 + 10
u4 + 5 u5 on standardised columns) often follow no short law, and a round's answer then
explains half the variance. Sums of 4-6 of the separable seeds' terms (u(x_i), u(x_i) v(x_j),
their ratios) or of the polynomial seeds' monomials explain far more: on the 72 black-box sets
the best of them by validation explains 0.71 of the test variance on average at ~32 nodes,
where the 2-term sums explain 0.54 (BUILD_NOTES, "Long sums"). Beside them stand the
interaction waves (`interactions`: a sin of a bilinear form in two columns plus x_k and x_k^2
terms, Friedman's own shape), which took those sets' clipped mean 0.722 -> 0.776 at complexity
28.0 -> 23.0 before the parsimony step (BUILD_NOTES, "Interaction waves"); at 5 training rows
per constant, not 10, they fit the law on PMLB's 100-row sets (0.776 -> 0.793; "The waves'
sums on small tables"), and sums of up to 8 terms, the presets' since then, took the 72 sets
to 0.803 ("Long sums of 8 terms"). They need more than the model's 64 tokens, so they never
enter a round's pool: once per trial, the best of them by the paper's score on the validation
fold, r2_val - alpha * complexity, becomes the answer only when it beats the rounds' answer on
validation R2 (how rounds pick theirs) and its extra validation R2 pays for its extra nodes at
the paper's rate (`pays`). Where a short law fits (R2 ~ 1 at complexity ~10) no 30-node sum
can pay for itself, and no shorter approximation replaces an exact law (by the score alone a
3-node 0.986 would replace the 13-node exact relativistic mass of Feynman I.10.7).
"""

from __future__ import annotations

import numpy as np

from lee_jax import complexity
from lee_jax import evaluate
from lee_jax import expr as E
from lee_jax import interactions
from lee_jax import parsimony
from lee_jax import polynomial
from lee_jax import pool as pool_lib
from lee_jax import score
from lee_jax import separable

ROWS = 1000  # training rows the subset searches see (the R2s use all of them)
# sin, cos, tan only of columns spanning at most one period: on wider ones they are
# high-frequency features that fit noise.
PERIODIC_SPAN = 2 * np.pi
ROWS_PER_CONSTANT = 10  # fewer training rows per fitted constant: the sum overfits
# The waves' sums need fewer: their terms are one shape's, not a subset picked from
# hundreds of products (5: Friedman's law, 9 constants, on a 100-row set's 60 training rows).
WAVE_ROWS_PER_CONSTANT = 5
SIMPLIFIED = 4  # sums, best by node count, whose SymPy complexity is counted


def sums(X: np.ndarray, y: np.ndarray, weights: np.ndarray | None, max_terms: int) -> list[E.Node]:
  """The separable and the polynomial seeds' best 1..max_terms-term sums (with and without
  an intercept), each with its least-squares constants, and the interaction waves' sums
  (`interactions`), each with all its constants fitted."""
  return [node for node, _ in with_rows_needed(X, y, weights, max_terms)]


def with_rows_needed(X: np.ndarray, y: np.ndarray, weights: np.ndarray | None,
                     max_terms: int) -> list[tuple[E.Node, int]]:
  """`sums`, each with the training rows it needs to be trusted: ROWS_PER_CONSTANT per
  constant, WAVE_ROWS_PER_CONSTANT for the waves' sums."""
  def needing(nodes, per_constant):
    return [(node, per_constant * len(E.constants(node))) for node in nodes]
  return (needing(separable.separable_fits(X, y, weights, max_terms=max_terms,
                                           periodic_span=PERIODIC_SPAN, thorough=False)
                  + polynomial.sparse_fits(X, y, weights, max_terms=max_terms), ROWS_PER_CONSTANT)
          + needing(interactions.interaction_fits(X, y, weights, max_terms),
                    WAVE_ROWS_PER_CONSTANT))


def candidate(node: E.Node, r2_train: float, r2_val: float, c: int, alpha: float) -> pool_lib.Candidate:
  """A pool record for a sum (its ids unpadded: it is never encoded)."""
  return pool_lib.Candidate(node, *score.ids_and_consts(node, None), r2_train, r2_val, c,
                            score.search_score(r2_train, c, alpha), "long")


def val_score(c: pool_lib.Candidate, alpha: float) -> float:
  """The paper's score on the validation fold: clip(r2_val, -1, 1) - alpha * complexity."""
  return score.search_score(c.r2_val, c.complexity, alpha)


def pays(long: pool_lib.Candidate | None, answer: pool_lib.Candidate | None, alpha: float) -> bool:
  """Whether the long sum replaces the rounds' answer: a higher validation R2 and a better
  validation score (any objects with r2_val and complexity)."""
  if long is None:
    return False
  return answer is None or (long.r2_val > answer.r2_val
                            and val_score(long, alpha) > val_score(answer, alpha))


def best_sum(data, max_terms: int, alpha: float, probe_points: int,
             seed: int) -> pool_lib.Candidate | None:
  """The sum of at most max_terms terms with the best validation score on data (a
  search.SearchData), or None when the data are too few or no sum is valid and bounded.

  Sums are fitted on at most ROWS training rows (`parsimony.rows`: a seeded draw), scored on
  all of them and on the validation rows; a sum needs ROWS_PER_CONSTANT training rows per
  constant (the waves' sums WAVE_ROWS_PER_CONSTANT). The SIMPLIFIED best by r2_val - alpha *
  node count get their SymPy complexity, and the best of those that stays bounded on probe
  points between the rows (score.bounded; probe_points 0 skips it) answers. The node count is
  only a guide: SymPy counts x^2 and a - b as 3 nodes where the tree has 2, so a fifth sum
  within a few nodes' alpha of the fourth could score better after counting and is not counted
  (SymPy on a long sum costs ~0.1-1 s)."""
  X, y = np.asarray(data.X_train, np.float64), np.asarray(data.y_train, np.float64)
  w = None if data.w_train is None else np.asarray(data.w_train, np.float64)
  Xf, yf, w = parsimony.rows(X, y, w, seed, ROWS)
  rows = []
  for node, needed in with_rows_needed(Xf, yf, w, max_terms):
    if needed > len(y):
      continue
    with np.errstate(all="ignore"):
      rt = score.r2(y, evaluate.evaluate_numpy(node, X), data.w_train)
      rv = score.r2(data.y_val, evaluate.evaluate_numpy(node, data.X_val), data.w_val)
    if np.isfinite(rt) and np.isfinite(rv):
      rows.append((float(np.clip(rv, -1, 1)) - alpha * len(node), node, rt, rv))
  rows.sort(key=lambda r: -r[0])
  rows = rows[:SIMPLIFIED]
  if not rows:
    return None
  counts = complexity.complexities([r[1] for r in rows])
  found = sorted((candidate(node, rt, rv, c, alpha) for (_, node, rt, rv), c in zip(rows, counts)),
                 key=lambda c: -val_score(c, alpha))
  probe = (score.probe(X, score.DENSE_PROBES * probe_points, np.random.default_rng([seed, 7]))
           if probe_points else None)
  for c in found:
    if probe is None or score.bounded(c.node, probe, Xf, yf):
      return c
  return None

