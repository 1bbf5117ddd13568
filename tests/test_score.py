import numpy as np

from lee_jax import evaluate
from lee_jax import expr as E
from lee_jax import score


def _tree(text, n=2):
  return E.from_sympy(E.parse_formula(text, [f"x{i}" for i in range(n)]))


def test_r2_matches_its_definition_and_flags_nonfinite():
  y = np.array([1.0, 2.0, 3.0, 4.0])
  assert score.r2(y, y) == 1.0
  assert score.r2(y, np.full(4, 2.5)) == 0.0
  assert score.r2(y, np.array([1.0, 2.0, np.nan, 4.0])) == -np.inf


def test_search_score_clips_r2_and_penalises_complexity():
  assert score.search_score(0.9, 10, 0.002) == 0.9 - 0.02
  assert score.search_score(-50.0, 1, 0.002) == -1.0 - 0.002


def test_ids_and_consts_keep_full_precision_constants():
  node = _tree("3.14159265*x0 + 0.000123456*x1 - 2.0")
  ids, consts = score.ids_and_consts(node, 64)
  pos = score.const_positions(ids)
  np.testing.assert_array_equal(consts[pos], E.constants(node))
  assert np.all(np.delete(consts, pos) == 1.0)


def test_batched_r2_equals_numpy_r2_for_each_candidate():
  rng = np.random.default_rng(0)
  X = rng.uniform(-3, 3, (700, 2))
  y = 1.3 * np.sin(X[:, 0]) + X[:, 1] ** 2
  nodes = [_tree(t) for t in ("1.3*sin(x0) + x1**2", "x1**2", "0.5*x0 - 1.0", "log(x0)")]
  nodes.append(E.from_prefix("div x0 sub x1 x1".split()))
  rows = [score.ids_and_consts(n, 64) for n in nodes]
  got = score.batched_r2(np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows]),
                         score.pad_rows(X, y))
  want = [score.r2(y, evaluate.evaluate_numpy(n, X)) for n in nodes]
  assert got[3] == -np.inf and want[3] == -np.inf  # log of negatives
  assert got[4] == -np.inf  # division by zero everywhere
  np.testing.assert_allclose(got[:3], want[:3], rtol=1e-4, atol=1e-5)
  assert got[0] > 0.9999
