import helpers
import numpy as np

from lee_jax import evaluate
from lee_jax import expr as E
from lee_jax import interactions
from lee_jax import long_sums
from lee_jax import score
from lee_jax import search


def _r2(node, X, y):
  return score.r2(y, evaluate.evaluate_numpy(node, X), None)


def test_friedmans_law_comes_back_as_one_wave_and_four_terms():
  X, y = helpers.friedman()
  fits = interactions.interaction_fits(X, y, None, 6)
  best = max(fits, key=lambda f: _r2(f, X, y))
  assert _r2(best, X, y) > 1 - 1e-8
  # the wave is of the interacting pair
  waves = [n for n in E.walk(best) if n.name == "sin"]
  names = {m.name for m in E.walk(waves[0]) if m.name.startswith("x")}
  assert len(waves) == 1 and names == {"x0", "x1"}
  # and on fresh rows the law holds
  assert _r2(best, *helpers.friedman(n=2000, seed=2)) > 1 - 1e-8
  # every sum holds the wave
  assert all(any(n.name == "sin" for n in E.walk(f)) for f in fits)


def test_the_screen_finds_the_interacting_pair_among_ten_columns():
  X, y = helpers.friedman(n=400, k=10, seed=3, noise=0.5)
  p = np.full(len(y), 1 / len(y))
  Z = (X - X.mean(0)) / X.std(0)
  base, yc, ok = interactions.polynomial.centred(
      np.concatenate([X, X ** 2], axis=1), y, np.ones(len(y)))
  assert interactions.screen(Z, base[:, ok], yc, p)[0] == (0, 1)


def test_the_wave_is_written_in_the_raw_columns():
  rng = np.random.default_rng(4)
  X = rng.normal([3.0, -20.0], [0.5, 7.0], (50, 2))
  m, s = X.mean(0), X.std(0)
  t = np.array([0.7, -0.4, 1.3])
  node = interactions.wave_node(0, 1, t, 0.9, m[0], s[0], m[1], s[1])
  Z = (X - m) / s
  want = np.sin(t[0] * Z[:, 0] * Z[:, 1] + t[1] * Z[:, 0] + t[2] * Z[:, 1] + 0.9)
  np.testing.assert_allclose(evaluate.evaluate_numpy(node, X), want, atol=1e-9)
  # where a constant in x would overflow there is no node (E.const raised)
  assert interactions.wave_node(0, 1, t, 0.9, 1e160, 1.0, 1e160, 1.0) is None


def test_rows_of_zero_weight_are_left_out():
  X, y = helpers.friedman(n=300, seed=5)
  w = np.ones(len(y))
  w[::3] = 0.0
  spoiled = y.copy()
  spoiled[::3] += 100.0 * np.random.default_rng(6).normal(size=len(y[::3]))
  fits = interactions.interaction_fits(X, spoiled, w, 6)
  assert max(_r2(f, X[w > 0], y[w > 0]) for f in fits) > 1 - 1e-8


def test_nothing_to_fit_gives_no_sums():
  X, y = helpers.friedman(n=100)
  assert interactions.interaction_fits(X[:, :1], y, None, 6) == []  # one column
  assert interactions.interaction_fits(X, np.ones(100), None, 6) == []  # constant target
  assert interactions.interaction_fits(X[:10], y[:10], None, 6) == []  # too few rows
  bad = y.copy()
  bad[0] = np.nan
  assert interactions.interaction_fits(X, bad, None, 6) == []
  # columns near 1e160: the wave's constants in x overflow (b m_i m_j), which raised
  Z = np.random.default_rng(9).normal(size=(300, 3))
  assert interactions.interaction_fits((10.0 + Z) * 1e160, np.sin(Z[:, 0] * Z[:, 1]) + Z[:, 2],
                                       None, 6) == []


def test_the_long_sums_offer_the_wave():
  X, y = helpers.friedman(n=400, seed=7, noise=0.3)
  k = 300
  c = long_sums.best_sum(search.SearchData(X[:k], y[:k], X[k:], y[k:]), 6, 0.002, 1024, seed=0)
  assert c is not None and any(n.name == "sin" for n in E.walk(c.node))
  assert c.r2_val > 0.99


def test_a_column_constant_where_the_weights_are_does_no_harm():
  X, y = helpers.friedman(n=200, k=6, seed=8)
  w = np.ones(len(y))
  w[:20] = 0.0
  X[20:, 5] = 1.0  # x5 varies on the rows of weight 0 only
  fits = interactions.interaction_fits(X, y, w, 6)
  assert fits and max(_r2(f, X[20:], y[20:]) for f in fits) > 1 - 1e-8
  assert not any(n.name == "x5" for f in fits for n in E.walk(f))
  y2 = y.copy()
  y2[20:] = 3.0  # y constant where the weights are
  assert interactions.interaction_fits(X, y2, w, 6) == []
