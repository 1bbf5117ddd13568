import numpy as np
import pytest

from lee_jax import expr as E
from lee_jax import score
from lee_jax import transformed as T
from lee_jax import trial


def _x(n=200, k=4, lo=1.0, hi=5.0, seed=0):
  return np.random.default_rng(seed).uniform(lo, hi, (n, k))


def _exact(nodes, X, y):
  """The seeds that fit y exactly."""
  return [n for n in nodes if score.r2(y, trial.predict(n, X)) > 1 - 1e-9]


def test_the_distance_is_seeded_exactly_under_a_root():
  # Feynman I.8.14, sqrt((x2-x1)^2 + (y2-y1)^2): six monomials under the root
  X = _x()
  y = np.sqrt((X[:, 1] - X[:, 0]) ** 2 + (X[:, 3] - X[:, 2]) ** 2)
  exact = _exact(T.transformed_fits(X, y), X, y)
  assert exact and exact[0].name == "sqrt"
  # the same law negated comes back negated (y keeps one sign)
  assert any(n.name == "neg" for n in _exact(T.transformed_fits(X, -y), X, -y))


def test_a_reciprocal_sum_and_a_gaussian():
  X = _x(k=3, seed=1)
  y = 1 / (1 / X[:, 0] + X[:, 2] / X[:, 1])  # I.27.6, the thin lens 1 / (1/d1 + n/d2)
  assert any(n.name == "div" for n in _exact(T.transformed_fits(X, y), X, y))
  X = _x(k=2, seed=2)
  y = np.exp(-(X[:, 0] / X[:, 1]) ** 2 / 2) / X[:, 1]  # I.6.2 without its constant
  assert any(n.name == "exp" for n in _exact(T.transformed_fits(X, y), X, y))


def test_keep_bounds_the_seeds_and_orders_them_by_fit():
  X = _x(seed=3)
  y = np.sqrt(X[:, 0] ** 2 + X[:, 1] * X[:, 2]) + 0.1 * np.sin(3 * X[:, 3])  # no exact law
  nodes = T.transformed_fits(X, y, keep=5)
  assert 1 <= len(nodes) <= 5
  r2 = [score.r2(y, trial.predict(n, X)) for n in nodes]
  assert r2 == sorted(r2, reverse=True)
  assert len({tuple(E.to_prefix(n)) for n in nodes}) == len(nodes)
  assert len(T.transformed_fits(X, y, keep=50)) > 5


def test_which_transforms_a_target_admits():
  w = np.ones(5)
  assert [n for n, *_ in T.targets(np.array([1.0, 2, 3, 4, 5]), w)] == list(T.TRANSFORMS)
  assert [s for _, s, *_ in T.targets(-np.arange(1.0, 6), w)] == [-1.0] * 3
  assert list(T.targets(np.array([-1.0, 2, 3, 4, 5]), w)) == []  # changes sign
  # a row of weight 0 does not count
  assert [n for n, *_ in T.targets(np.array([-1.0, 2, 3, 4, 5]), np.array([0.0, 1, 1, 1, 1]))]
  assert list(T.targets(np.array([0.0, 2, 3, 4, 5]), w)) == []  # a zero has no sign


def test_noise_across_zero_keeps_the_sign_and_leaves_those_rows_out():
  y = np.arange(1.0, 21.0)
  y[0] = -0.5  # 1 row in 20, nearer zero than the median row: noise
  (name, sign, rows, t, wt), *_ = T.targets(y, np.ones(20))
  assert (name, sign) == ("square", 1.0)
  assert not rows[0] and rows[1:].all()
  np.testing.assert_allclose(t, y[1:] ** 2)
  y[0] = -30.0  # as large as the rest: the law changes sign
  assert list(T.targets(y, np.ones(20))) == []
  y[0], y[1], y[2] = -0.5, -0.5, -0.5  # 3 in 20: more than MINORITY
  assert list(T.targets(y, np.ones(20))) == []


def test_the_delta_method_weights():
  # noise on y has variance 4 y^2 sigma^2 in y^2, sigma^2 / y^4 in 1/y, sigma^2 / y^2 in
  # log y: the weights are their inverses (the square's y floored at its 5% quantile)
  y = np.linspace(1.0, 10.0, 101)
  weights = {n: wt for n, _, _, _, wt in T.targets(y, np.ones(101))}
  a = np.maximum(y, np.quantile(y, 0.05))
  np.testing.assert_allclose(weights["square"], 1 / a ** 2)
  np.testing.assert_allclose(weights["reciprocal"], y ** 4)
  np.testing.assert_allclose(weights["log"], y ** 2 / np.mean(y ** 2))  # power_law's


def test_a_noisy_thin_lens_is_seeded():
  # I.27.6 with 10% noise, a few rows across zero: no seed before the delta weights
  X = _x(n=400, k=3, lo=0.2, hi=5.0, seed=6)
  truth = 1 / (1 / X[:, 0] + X[:, 2] / X[:, 1])
  rng = np.random.default_rng(7)
  y = truth + rng.normal(0, 0.1 * np.sqrt(np.mean(truth ** 2)), len(truth))
  nodes = T.transformed_fits(X, y)
  assert nodes
  r2 = max(score.r2(truth, trial.predict(n, X)) for n in nodes)
  assert r2 > 0.99
def test_degenerate_input_gives_no_seeds():
  X = _x(seed=4)
  assert T.transformed_fits(X, np.full(len(X), 2.0)) == []  # constant
  assert T.transformed_fits(X, X[:, 0] - 3) == []  # changes sign
  y = X[:, 0].copy()
  y[0] = np.nan
  assert T.transformed_fits(X, y) == []
  assert T.transformed_fits(X[:3], X[:3, 0]) == []


def test_inverse_names_its_transform():
  s = E.var(0)
  assert trial.predict(T.inverse("square", 1.0, s), np.array([[4.0]]))[0] == pytest.approx(2.0)
  assert trial.predict(T.inverse("reciprocal", -1.0, s), np.array([[4.0]]))[0] == pytest.approx(-0.25)
  assert trial.predict(T.inverse("log", 1.0, s), np.array([[0.0]]))[0] == pytest.approx(1.0)
  with pytest.raises(ValueError, match="unknown transform"):
    T.inverse("cube", 1.0, s)


def test_rows_of_weight_zero_take_no_part():
  X = _x(seed=5)
  y = np.sqrt((X[:, 1] - X[:, 0]) ** 2 + (X[:, 3] - X[:, 2]) ** 2)
  w = np.ones(len(y))
  y_bad, w[:20] = y.copy(), 0.0
  y_bad[:20] = -7.0  # another sign and another law: weight 0
  exact = _exact(T.transformed_fits(X, y_bad, w), X[20:], y[20:])
  assert exact and all(n.name == "sqrt" for n in exact[:1])


def test_without_units_writes_out_unit_factors_and_zero_summands():
  x0, x1 = E.var(0), E.var(1)
  tree = E.op("add", E.op("add", E.op("mul", E.const(1.0), x0), E.const(0.0)),
              E.op("mul", x1, E.const(-1.0)))
  assert T.without_units(tree) == E.op("sub", x0, x1)
  kept = E.op("mul", E.const(2.0), x0)  # other constants stay
  assert T.without_units(kept) == kept
