import numpy as np
import pytest

from lee_jax import evaluate
from lee_jax import polynomial as P
from lee_jax import score
from lee_jax import trial


def _xy(n=300, k=2, seed=0):
  return np.random.default_rng(seed).uniform(0.5, 4, (n, k))


def _best(nodes, X, y):
  return max(score.r2(y, trial.predict(n, X)) for n in nodes)


def test_monomials():
  assert P.monomials(2, 3) == [(1, 0), (0, 1), (2, 0), (1, 1), (0, 2), (3, 0), (2, 1), (1, 2),
                               (0, 3)]
  assert len(P.monomials(10, 3)) == 285
  assert str(P.monomial_node((2, 1))) == "mul sq x0 x1"
  assert str(P.monomial_node((5,))) == "mul cube x0 sq x0"


def test_a_three_term_law_that_greedy_selection_misses_is_found():
  X = _xy()
  x, y_ = X[:, 0], X[:, 1]
  y = 3 * x - 2 * x * y_ - x ** 2  # Lotka-Volterra: x^2 y alone correlates best with it
  nodes = P.sparse_fits(X, y)
  assert len(nodes) == 6  # 1, 2, 3 terms, each with and without an intercept
  exact = [n for n in nodes if score.r2(y, trial.predict(n, X)) > 1 - 1e-12]
  assert exact and min(len(n) for n in exact) == len(P.polynomial_node(
      [(1, 0), (2, 0), (1, 1)], np.ones(3), None))  # the through-origin form is among them
  # Forcing the greedy path (no exhaustive search) still gets there through the swap round.
  assert _best(P.sparse_fits(X, y, limit=1), X, y) > 1 - 1e-12


def test_wide_data_uses_the_greedy_path_and_stops_once_exact():
  X = _xy(k=8, seed=1)
  y = 0.5 * X[:, 6] ** 3 - 4 * X[:, 2] + 7
  nodes = P.sparse_fits(X, y)  # 164 monomials: 735k 3-subsets, over the limit
  assert _best(nodes, X, y) > 1 - 1e-12
  assert len(nodes) == 4  # exact at 2 terms: no 3-term seeds


def test_swaps_repeat_until_none_helps():
  # Feynman I.11.19 on positive ranges: greedy growth picks x1 x3 y1 and x2 y2 y3 first, and
  # one round of single swaps still ended at R2 0.94 (83 monomials: 92k 3-subsets, greedy path)
  X = np.random.default_rng(2).uniform(1, 5, (300, 6))
  y = X[:, 0] * X[:, 3] + X[:, 1] * X[:, 4] + X[:, 2] * X[:, 5]
  assert _best(P.sparse_fits(X, y), X, y) > 1 - 1e-12
  assert _best(P.sparse_fits(X, y, limit=1), X, y) > 1 - 1e-12


def test_weights_and_degenerate_input():
  X = _xy()
  y = 2 * X[:, 0] ** 2 + 1
  w = np.ones(len(y))
  junk = np.arange(len(y)) % 10 == 0
  y_bad = np.where(junk, 1e3, y)
  w[junk] = 1e-12  # the corrupted rows count for nothing
  nodes = P.sparse_fits(X, y_bad, w)
  assert _best(nodes, X[~junk], y[~junk]) > 1 - 1e-9
  assert P.sparse_fits(X[:5], y[:5]) == []  # too few rows for 3 terms
  assert P.sparse_fits(X, np.where(junk, np.nan, y)) == []
  assert P.sparse_fits(np.ones((50, 2)), np.arange(50.0)) == []  # no usable column


@pytest.mark.parametrize("unit", [1e-2, 1e-20, 1e6])
def test_the_exact_seed_does_not_depend_on_the_columns_units(unit):
  # A fixed ridge on the Gram matrix swamped columns of small values (x in units 1e-20 gave
  # 14 nodes at R2 0.997 in `LEERegressor`), and the SVD's rank cut-off then dropped x1^2
  # beside x0 (their scales 1e-40 apart).
  X = _xy(seed=3)
  y = 3 * X[:, 0] + X[:, 1] ** 2
  nodes = P.sparse_fits(X * unit, y, max_terms=2)
  assert _best(nodes, X * unit, y) > 1 - 1e-9
  assert P.unit_columns(np.diag([4e-80, 1.0]), np.ones(2), np.ones(2, bool))[2].all()


def test_exact_duplicates_keep_their_first_column():
  # On a column of -1, 0 and 1, x^3 = x: the search keeps x (the lower degree, listed first),
  # and its correlation form is unit-free.
  x = np.random.default_rng(4).integers(-1, 2, 200).astype(float)
  M = np.c_[2.0 * x, x ** 3, x ** 2, np.ones(200) * 5]
  Mc, yc, usable = P.centred(M, x + x ** 2, np.ones(200))
  G, b, keep = P.unit_columns(Mc.T @ Mc, Mc.T @ yc, usable)
  assert keep.tolist() == [True, False, True, False]  # the constant was never usable
  np.testing.assert_allclose(np.diag(G)[keep], 1.0)
  assert P.best_subsets(Mc.T @ Mc, Mc.T @ yc, usable, 2, 100) == [[0], [0, 2]]


def test_a_duplicated_column_leaves_the_other_subsets_their_fit():
  # A singular subset (the same column twice, at values ~1e3) failed the whole batch's solve:
  # every 2-term subset scored -inf and the first one, 2.02 x0 + 2.02 x1 + 26, was the seed.
  rng = np.random.default_rng(1)
  X = rng.uniform(1, 2, (200, 2)) * 1e3
  X = np.c_[X, X[:, 0]]
  y = 2.0 * X[:, 0] * X[:, 1] + 3.0 * X[:, 1] ** 2
  seeds = P.sparse_fits(X, y, max_terms=2)
  assert max(score.r2(y, evaluate.evaluate_numpy(n, X)) for n in seeds) > 1 - 1e-9
