import numpy as np
import pytest

from lee_jax import feature_selection as FS


def _data(n=600, p=14, seed=0):
  X = np.random.default_rng(seed).uniform(-3, 3, (n, p))
  # Linear, periodic and an interaction term; the other columns are noise.
  y = 2 * X[:, 3] + np.sin(2 * X[:, 7]) * 1.5 + X[:, 11] * X[:, 5] * 0.5
  return X, y


def test_the_informative_columns_come_first():
  X, y = _data()
  chosen = FS.select_features(X, y, 6)
  assert len(chosen) == len(set(chosen)) == 6
  assert set(chosen[:4]) == {3, 5, 7, 11}  # x5 * x11 too, though neither alone correlates
  assert chosen[0] == 3  # the largest share of the variance


def test_scale_and_rows_do_not_matter_and_it_is_deterministic():
  X, y = _data()
  base = FS.select_features(X, y, 4)
  scaled = X * np.array([1e-3] * 7 + [1e4] * 7) + 50  # ranks: units and offsets are irrelevant
  assert FS.select_features(scaled, 1e6 * y, 4) == base
  assert FS.select_features(X, y, 4) == base
  big_X, big_y = _data(n=3000)
  sub = FS.select_features(big_X, big_y, 4, seed=1, max_rows=500)  # a 500-row subsample
  assert set(sub) == {3, 5, 7, 11}


def test_a_constant_column_is_not_the_row_order():
  X = np.random.default_rng(2).uniform(-3, 3, (300, 4))
  order = np.argsort(X[:, 1])  # rows sorted by the target's driver
  X, y = X[order], np.sin(2 * X[order, 1])
  X[:, 3] = 7.0  # constant: with tie-blind ranks it would equal the row index (and so x1)
  assert FS.select_features(X, y, 2)[0] == 1
  assert np.ptp(FS._ranks(X[:, 3])) == 0 and FS._ranks(np.array([3.0, 1, 3]))[0] == 0.75


def test_edges():
  X = np.random.default_rng(0).uniform(-3, 3, (100, 3))
  y = X[:, 0] + X[:, 1] * X[:, 2]
  assert FS.select_features(X, y, 3) == [0, 1, 2] and FS.select_features(X, y, 10) == [0, 1, 2]
  assert FS.select_features(X[:12], y[:12], 1) in ([0], [1], [2])  # tiny n: fewer neighbours
  for k in (0, 1.5, "2"):
    with pytest.raises(ValueError, match="positive integer"):
      FS.select_features(X, y, k)
  with pytest.raises(ValueError, match="shapes"):
    FS.select_features(X, y[:-1], 2)
