import numpy as np

from lee_jax import expr as E
from lee_jax import factored as F
from lee_jax import power_law
from lee_jax import score
from lee_jax import trial


def _x(n=200, k=5, lo=1.0, hi=5.0, seed=0):
  return np.random.default_rng(seed).uniform(lo, hi, (n, k))


def _exact(nodes, X, y):
  """The seeds that fit y exactly."""
  return [n for n in nodes if score.r2(y, trial.predict(n, X)) > 1 - 1e-9]


def test_gravity_difference_changes_sign_and_is_seeded_exactly():
  # Feynman I.13.12, G m1 m2 (1/r2 - 1/r1): every draw of 200 rows (m2's log exponent alone
  # comes out anywhere in 1.0-1.5)
  for seed in range(4):
    X = _x(seed=seed)
    y = X[:, 0] * X[:, 1] * X[:, 2] * (1 / X[:, 4] - 1 / X[:, 3])
    assert (y > 0).any() and (y < 0).any()
    exact = _exact(F.factored_fits(X, y), X, y)
    assert exact and all(E.variables_used(n) == {0, 1, 2, 3, 4} for n in exact), seed


def test_a_power_law_times_a_log_difference_or_a_trig_product():
  X = _x(seed=5)
  y = X[:, 0] * X[:, 1] * X[:, 2] * np.log(X[:, 3] / X[:, 4])  # I.44.4, n kb T ln(V2 / V1)
  assert _exact(F.factored_fits(X, y), X, y)
  X = _x(k=4, seed=6)
  y = X[:, 0] / X[:, 1] * np.cos(X[:, 2]) * np.sin(X[:, 2]) / X[:, 3] ** 3  # II.6.15b
  assert _exact(F.factored_fits(X, y), X, y)


def test_the_seed_is_the_sum_times_the_power_law():
  sums = [E.op("add", E.var(2), E.const(1.0))]
  node = power_law.times_power(sums[0], {0: 1.0, 1: -0.5})
  X = _x(k=3)
  np.testing.assert_allclose(trial.predict(node, X), (X[:, 2] + 1) * X[:, 0] / np.sqrt(X[:, 1]),
                             rtol=1e-6)


def test_quotient_laws_skip_an_exact_power_law_and_large_exponents():
  X = _x(k=3, seed=7)
  laws = F.quotient_laws(X, X[:, 0] ** 2 / X[:, 1], np.ones(len(X)))
  assert {0: 2.0, 1: -1.0} not in laws  # that is a power-law seed already
  assert laws  # fewer columns are not exact
  big = F.quotient_laws(X, X[:, 0] ** 9 * (1 + np.sin(X[:, 2])), np.ones(len(X)))
  assert all(max(abs(e) for e in law.values()) <= power_law.MAX_EXPONENT for law in big)


def test_weights_and_degenerate_input():
  X = _x(seed=8)
  y = X[:, 0] * X[:, 1] * (X[:, 2] - X[:, 3]) / X[:, 4]  # II.2.42, kappa A (T2 - T1) / d
  junk = np.arange(len(y)) % 10 == 0
  w = np.where(junk, 0.0, 1.0)  # rows of weight 0 count for nothing
  assert _exact(F.factored_fits(X, np.where(junk, 1e3, y), w), X[~junk], y[~junk])
  assert F.factored_fits(X, np.where(junk, np.nan, y)) == []  # not finite
  assert F.factored_fits(X[:3], y[:3]) == []  # too few rows
  assert F.factored_fits(X, np.zeros(len(y))) == []  # no row to take a log of
  crossing = np.random.default_rng(8).uniform(-1, 1, (len(y), 2))
  crossing[0, 1] = 0.0  # column 0 changes sign, column 1 has a zero
  assert F.factored_fits(crossing, y) == []  # no usable column
