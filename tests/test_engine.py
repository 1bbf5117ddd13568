import jax
import numpy as np
import pytest

from lee_jax import engine as engine_lib
from lee_jax import expr as E

import helpers


@pytest.fixture(scope="module")
def eng():
  return engine_lib.Engine(helpers.tiny_model())


@pytest.fixture(scope="module")
def scatter():
  X, y = helpers.toy_data()
  return engine_lib.make_scatter(X, y, 200, helpers.TINY.n_features, np.random.default_rng(0))


def test_decode_compiles_once_per_batch_bucket(eng, scatter):
  z0 = eng.encode(None, scatter)
  before = eng.traces["decode"]
  outs = []
  for i, (n, temp, greedy, n_vars) in enumerate([(16, 0.7, 1, 2), (13, 1.3, 0, 1), (9, 0.2, 9, 2)]):
    ids = eng.decode(np.repeat(z0, n, axis=0) + i, jax.random.key(i), temp, greedy, n_vars)
    assert ids.shape == (n, helpers.TINY.max_len)
    outs.append(ids)
  assert eng.traces["decode"] - before <= 1  # all three share the 16-row bucket
  for ids, n_vars in zip(outs, (2, 1, 2)):
    for row in ids:
      assert max(E.variables_used(E.parse_ids(row)), default=0) < n_vars


def test_greedy_rows_are_deterministic_and_sampled_rows_vary(eng, scatter):
  z = np.repeat(eng.encode(None, scatter), 8, axis=0)
  a = eng.decode(z, jax.random.key(0), 1.0, 8, 2)
  b = eng.decode(z, jax.random.key(1), 1.0, 8, 2)
  np.testing.assert_array_equal(a, b)
  assert len({tuple(r) for r in a}) == 1
  s = eng.decode(z, jax.random.key(2), 1.5, 0, 2)
  assert len({tuple(r) for r in s}) > 1


def test_batched_encode_matches_one_at_a_time(eng, scatter):
  nodes = [E.from_prefix(t.split()) for t in ("x0", "sin x1", "add x0 x1")]
  tokens = np.stack([E.to_ids(n, helpers.TINY.max_len) for n in nodes])
  together = eng.encode(tokens, scatter)
  for i in range(3):
    np.testing.assert_allclose(eng.encode(tokens[i:i + 1], scatter)[0], together[i], atol=1e-5)
  assert not np.allclose(together[0], together[1])


def test_descend_lowers_the_objective_and_stays_near_the_anchor(eng, scatter):
  z0 = eng.encode(None, scatter)[0]
  before = eng.traces["descend"]
  z, losses = eng.descend(z0, z0, scatter, steps=50, lr=5e-3, prox=0.1)
  assert losses.shape == (50,) and losses[-1] < losses[0]
  assert 0 < np.linalg.norm(z - z0) < 50 * 5e-3 * np.sqrt(z.size) + 1e-6  # Adam step bound
  eng.descend(z, z0, scatter, steps=50, lr=1e-3, prox=0.5)
  assert eng.traces["descend"] - before == 1


def test_bundle_round_trip_gives_the_same_model(eng, scatter):
  again = engine_lib.Engine(engine_lib.from_bundle(engine_lib.to_bundle(helpers.tiny_model())))
  np.testing.assert_allclose(again.encode(None, scatter), eng.encode(None, scatter), atol=1e-6)


def test_encode_each_uses_each_rows_own_scatter(eng, scatter):
  nodes = [E.from_prefix(t.split()) for t in ("x0", "sin x1", "add x0 x1")]
  tokens = np.stack([E.to_ids(n, helpers.TINY.max_len) for n in nodes])
  rng = np.random.default_rng(1)
  other = engine_lib.make_scatter(rng.uniform(-3, 3, (300, 2)), rng.normal(size=300), 200,
                                  helpers.TINY.n_features, rng)
  rows = [scatter, other, scatter]
  batched = engine_lib.Scatter(*(np.stack([getattr(s, f) for s in rows]) for f in ("x", "y", "mask")))
  z = eng.encode_each(tokens, batched)
  assert z.shape == (3, helpers.TINY.d_z)
  for i, s in enumerate(rows):
    np.testing.assert_allclose(z[i], eng.encode(tokens[i:i + 1], s)[0], atol=1e-5)
