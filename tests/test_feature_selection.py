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


def _centred(n=500, p=30, seed=0):
  """Zero-centred columns: a pure interaction's columns tell nothing one at a time."""
  return np.random.default_rng(seed).uniform(-3, 3, (n, p))


def test_a_pure_interaction_is_found_among_30_columns():
  X = _centred()
  y = X[:, 5] * X[:, 11]  # E[y | x5] = 0 for every x5: greedy one column at a time misses it
  assert set(FS.select_features(X, y, 2)) == {5, 11}
  three = FS.select_features(X, y, 3)
  assert set(three[:2]) == {5, 11} and len(set(three)) == 3


def test_a_pure_interaction_beside_a_main_effect():
  X = _centred()
  chosen = FS.select_features(X, X[:, 5] * X[:, 11] + np.sin(X[:, 2]), 3)
  assert set(chosen) == {2, 5, 11}
  assert set(chosen[:2]) == {5, 11}  # the pair carries most of the variance: it comes first


def test_a_product_with_a_periodic_factor_is_found():
  X = _centred(seed=1)
  assert set(FS.select_features(X, X[:, 3] * np.cos(X[:, 7]), 2)) == {3, 7}
  assert set(FS.select_features(X, X[:, 3] * np.cos(X[:, 7]), 3)[:2]) == {3, 7}


def _plain_greedy(X, y, k, neighbours=FS.NEIGHBOURS):
  """The selection before the pair step: one column at a time (no row subsample needed)."""
  n, p = X.shape
  cols = np.stack([FS._ranks(X[:, j]) for j in range(p)], axis=1)
  y = (y - y.mean()) / y.std()
  base = np.zeros((n, n))
  np.fill_diagonal(base, np.inf)
  chosen = []
  for _ in range(k):
    best = (np.inf, -1, None)
    for j in set(range(p)) - set(chosen):
      dist = base + (cols[:, j, None] - cols[None, :, j]) ** 2
      best = min(best, (FS._loo_error(dist, y, min(neighbours, n - 2)), j, dist),
                 key=lambda t: t[:2])
    chosen.append(best[1])
    base = best[2]
  return chosen


def test_an_additive_target_keeps_the_one_column_at_a_time_order():
  # Where no pair beats what greedy selection reaches with the same two slots, the pair
  # step changes nothing: x4 (twice the weight) first, then x1, then the same noise column.
  rng = np.random.default_rng(3)
  X = rng.uniform(-3, 3, (400, 15))
  y = X[:, 1] + 2 * X[:, 4] + 0.3 * rng.standard_normal(400)
  chosen = FS.select_features(X, y, 3)
  assert chosen[:2] == [4, 1] and chosen == _plain_greedy(X, y, 3)
  y = 2 * X[:, 3] + np.sin(2 * X[:, 7]) * 1.5 + 0.3 * rng.standard_normal(400)
  assert FS.select_features(X, y, 4) == _plain_greedy(X, y, 4)


def test_never_a_column_twice():
  # With three columns or fewer left the pair screen's best five reached its diagonal, and
  # a "pair" (a, a) was taken: k columns asked, k - 1 distinct given (7 of 200 draws here).
  for seed in range(200):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40, 3))
    chosen = FS.select_features(X, X[:, 0] + 2.0 * rng.normal(size=40), 2)
    assert len(set(chosen)) == 2, (seed, chosen)


def test_a_constant_column_is_chosen_last():
  # It adds no distance, so it scored as "nothing added" and beat x2 of y = x0 x2 whenever
  # x2's first step raised the error (8 of 20 draws).
  for seed in range(10):
    rng = np.random.default_rng(seed)
    X = np.stack([rng.normal(size=300), np.full(300, 7.0), rng.uniform(1, 2, 300),
                  rng.normal(size=300)], 1)
    assert sorted(FS.select_features(X, X[:, 0] * X[:, 2], 2)) == [0, 2], seed
    assert 1 not in FS.select_features(X, X[:, 0] * X[:, 2], 3)  # (4 of 4: all, in order)
