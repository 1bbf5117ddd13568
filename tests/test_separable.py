import numpy as np

from lee_jax import separable as S
from lee_jax import score
from lee_jax import trial


def _xy(n=300, lo=0.3, hi=1.4, seed=0):
  return np.random.default_rng(seed).uniform(lo, hi, (n, 2))


def _best(nodes, X, y):
  return max(score.r2(y, trial.predict(n, X)) for n in nodes)


def test_terms_become_the_vocabulary_s_nodes():
  assert str(S.term_node(((0, "cos", 1), (1, "tan", -1)), 2.0)) == "div mul + 2 . 0 0 e + 0 0 cos x0 tan x1"
  assert str(S.term_node(((0, "x", -1), (1, "sin2", -1)), 2.0)) == "div + 2 . 0 0 e + 0 0 mul x0 sq sin x1"
  X = _xy()
  term = ((0, "cos", 1), (1, "tan", -1))
  np.testing.assert_allclose(S.term_values([term], X)[:, 0], np.cos(X[:, 0]) / np.tan(X[:, 1]))
  np.testing.assert_allclose(trial.predict(S.sum_node([term], [2.0], 0.5), X),
                             2 * np.cos(X[:, 0]) / np.tan(X[:, 1]) + 0.5, rtol=1e-6)


def test_factors_skip_what_is_not_finite_on_the_rows():
  X = np.random.default_rng(0).uniform(-2, 2, (100, 1))
  specs, V = S.factors(X)
  names = {(name, p) for _, name, p in specs}
  assert ("log", 1) not in names and ("sqrt", 1) not in names  # negative rows
  assert ("x", -1) in names and ("exp", -1) in names and V.shape == (100, len(specs))
  assert S.factors(np.zeros((10, 1)))[0] == []  # constant or infinite everywhere


def test_periodic_factors_only_of_columns_spanning_one_period():
  X = np.c_[np.linspace(-3, 3, 50), np.linspace(4, 122, 50)]  # spans 6 and 118
  wide = {(i, name) for i, name, _ in S.factors(X, periodic_span=2 * np.pi)[0]}
  assert {(0, f) for f in S.PERIODIC} <= wide and not {(1, f) for f in S.PERIODIC} & wide
  assert (1, "sq") in wide and (1, "sin") in {(i, n) for i, n, _ in S.factors(X)[0]}


def test_shear_flow_is_one_exact_term():
  X = _xy()
  y = np.cos(X[:, 0]) / np.tan(X[:, 1])  # Strogatz shearflow1, which the model misses
  nodes = S.separable_fits(X, y)
  assert len(nodes) == 2  # exact at one term: with and without an intercept, no more
  assert _best(nodes, X, y) > 1 - 1e-12
  assert "div mul" in str(nodes[1]) and "cos x0 tan x1" in str(nodes[1])


def test_a_second_term_that_only_fits_beside_a_partner_is_found():
  X = _xy(lo=0.5, hi=4.0, seed=1)
  y = X[:, 0] - np.cos(X[:, 1]) / X[:, 0]  # glider2: cos(y)/x is not among y's best terms
  w = np.ones(len(y))
  yc = (y - y.mean()) / np.sqrt(len(y))
  term = ((0, "x", -1), (1, "cos", 1))
  table = S.factors(X)
  assert term not in S.best_terms(table, yc, w)  # alone it explains too little of y
  (x,) = S.best_terms(table, yc, w, 1, singles=True)
  partner = (X[:, 0] - X[:, 0].mean()) / np.sqrt(len(y))
  assert x == ((0, "x", 1),) and S.best_terms(table, yc, w, 1, partners=partner[:, None]) == [term]
  assert _best(S.separable_fits(X, y), X, y) > 1 - 1e-12


def test_a_plain_factor_beside_a_term_below_the_firsts_is_found():
  # log of Feynman I.6.2's Gaussian: -theta^2 / (2 sigma^2) - log(sigma) - log(sqrt(2 pi))
  X = np.random.default_rng(0).uniform(1, 3, (300, 2))
  y = -0.5 * X[:, 0] ** 2 / X[:, 1] ** 2 - np.log(X[:, 1]) - 0.5 * np.log(2 * np.pi)
  yc = (y - y.mean()) / np.sqrt(len(y))
  kept = S.best_terms(S.factors(X), yc, np.ones(len(y)))
  ratio = [u for u in kept if set(u) == {(0, "sq", 1), (1, "sq", -1)}]
  assert ratio and kept.index(ratio[0]) >= S.FIRSTS  # no partner of the second-term pass
  nodes = S.separable_fits(X, y, max_terms=2)
  assert _best(nodes, X, y) > 1 - 1e-12
  assert any("log x1" in str(n) and "sq x1" in str(n) for n in nodes)
  assert _best(S.separable_fits(X, y, max_terms=2, thorough=False), X, y) < 1 - 1e-6


def test_weights_and_degenerate_input():
  X = _xy(seed=2)
  y = np.sin(X[:, 0]) * np.exp(X[:, 1])
  w = np.ones(len(y))
  junk = np.arange(len(y)) % 10 == 0
  w[junk] = 1e-12  # the corrupted rows count for nothing
  nodes = S.separable_fits(X, np.where(junk, 1e3, y), w)
  assert _best(nodes, X[~junk], y[~junk]) > 1 - 1e-9
  assert S.separable_fits(X[:5], y[:5]) == []  # too few rows for 3 terms
  assert S.separable_fits(X, np.where(junk, np.nan, y)) == []
  assert S.separable_fits(X, np.ones(len(y))) == []  # nothing to explain
  assert S.separable_fits(np.ones((50, 2)), np.arange(50.0)) == []  # no usable term


def test_fresh_keeps_only_products_with_an_appended_column():
  X = np.random.default_rng(3).uniform(0.5, 2.0, (200, 3))
  y = np.cos(X[:, 0]) * np.sin(X[:, 1])
  yc = (y - y.mean()) / np.sqrt(len(y))
  w = np.ones(len(y))
  table = S.factors(X)
  every = S.best_terms(table, yc, w, 100_000)
  assert any(len(t) == 2 and max(f[0] for f in t) < 2 for t in every)
  terms = S.best_terms(table, yc, w, 100_000, fresh=2)
  assert all(len(t) == 1 or max(f[0] for f in t) == 2 for t in terms)
  assert any(len(t) == 2 for t in terms)  # products with column 2 are still there
  assert _best(S.separable_fits(X, y), X, y) > 1 - 1e-12
  assert _best(S.separable_fits(X, y, fresh=2), X, y) < 0.999  # cos x0 sin x1 is left out
