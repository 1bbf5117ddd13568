import numpy as np
import pytest

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
  # Targets near 1e200 square past float64's range; R2 does not depend on the scale.
  big = y * 1e200
  assert score.r2(big, big) == 1.0
  assert score.r2(big, np.full(4, 2.5e200)) == 0.0
  assert score.r2(y, np.array([1.0, 2.0, 1e300, 4.0])) == -np.inf  # finite but overflowing


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
  # The same law in joules (y ~ 1e-20): float32 squares of its spread underflowed, and every
  # candidate, 0 among them, scored R2 ~1; residuals scaled by a power of two keep them in range.
  small = [_tree(t) for t in ("1.3e-20*sin(x0) + 1e-20*x1**2", "0", "1e-20*x1**2")]
  rows = [score.ids_and_consts(n, 64) for n in small]
  got = score.batched_r2(np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows]),
                         score.pad_rows(X, y * 1e-20))
  want = [score.r2(y * 1e-20, evaluate.evaluate_numpy(n, X)) for n in small]
  np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
  assert got[0] > 0.9999 and got[1] < 0
  # Far from zero (4e6 + 0.4 y: its spread 3e-7 of its size, which datasets reject, though
  # pad_rows may meet it): in float32 the target is steps of 1/4, and a constant scored R2
  # 0.43 (a law 0.994). It is scored centred now.
  far = [_tree(t) for t in ("4e6 + 0.52*sin(x0) + 0.4*x1**2", "4000001.2", "4e6 + 0.4*x1**2")]
  rows = [score.ids_and_consts(n, 64) for n in far]
  got = score.batched_r2(np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows]),
                         score.pad_rows(X, 4e6 + 0.4 * y))
  want = [score.r2(4e6 + 0.4 * y, evaluate.evaluate_numpy(n, X)) for n in far]
  np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)
  assert got[1] < 0.01
  assert score.pad_rows(X, y)[4] == 0 and score.pad_rows(X, 4e6 + 0.4 * y)[4] != 0


def test_probe_points_lie_between_training_rows():
  rng = np.random.default_rng(0)
  X = np.array([[-2.0, 1.0], [3.0, 5.0]])
  P = score.probe_points(X, 500, rng)
  # On the one segment between the two rows.
  t = (P[:, 0] + 2.0) / 5.0
  np.testing.assert_allclose(P[:, 1], 1.0 + 4.0 * t)
  assert P[:, 0].min() >= -2.0 and P[:, 0].max() <= 3.0


def test_bounded_rejects_a_pole_between_the_data_and_keeps_smooth_fits():
  rng = np.random.default_rng(0)
  # Rows ~0.12 apart on both sides of a gap of 0.2: a test row can land next to x = 0.
  x = np.concatenate([rng.uniform(-5, -0.1, 40), rng.uniform(0.1, 5, 40)])[:, None]
  y = np.sin(x[:, 0])  # |c/x| <= 1 at every training row for c = 0.1
  probe = score.probe(x, 16384, rng)
  pole = _tree("0.1/x0", 1)
  assert np.all(np.abs(evaluate.evaluate_numpy(pole, x)) <= 1.0 + 1e-12)
  assert not score.bounded(pole, probe, x, y)
  # Judged against their own range at the rows too: a poor fit is not a pole.
  for smooth in ("sin(x0)", "x0**3", "2.0*x0 + 1.0", "exp(x0)", "1.0/(x0**2 + 0.01)"):
    assert score.bounded(_tree(smooth, 1), probe, x, y), smooth
  assert not score.bounded(_tree("log(x0)", 1), probe, x, y)  # NaN for the negative x
  # The same pole is fine where no training point is on its other side.
  right = x[x[:, 0] > 0]
  assert score.bounded(pole, score.probe(right, 4096, rng), right, np.sin(right[:, 0]))


def test_a_pole_in_a_gap_the_data_never_enter_is_kept():
  # shearflow1's law cot(y) cos(x): its trajectories stay off y = 0, so rows lie on both
  # sides of the pole with a wide empty band between them (here |y| < 1 against rows
  # ~0.03 apart). Test rows come from the same trajectories, so the exact law must pass;
  # segments between random pairs of rows would cross the band and reject it.
  rng = np.random.default_rng(1)
  y_col = np.concatenate([rng.uniform(-3, -1, 120), rng.uniform(1, 3, 120)])
  X = np.stack([rng.uniform(-4, 4, 240), y_col], axis=1)
  law = _tree("cos(x0)/tan(x1)", 2)
  target = evaluate.evaluate_numpy(law, X)
  for seed in range(5):
    assert score.bounded(law, score.probe(X, 65536, np.random.default_rng(seed)), X, target)
  # Random pairs (the neighbourhood as large as the data) do cross it.
  wide = score.probe(X, 65536, np.random.default_rng(0), neighbours=239)
  assert not score.bounded(law, wide, X, target)


def test_a_narrow_pole_between_rows_is_found_by_its_sign_change():
  # The planets' semi-major axes (AU) and Kepler's T = a^1.5: a probe's answer was
  # a^1.5 + a tan(a)/995, validated on 2 rows; its 22 tan poles are each too narrow for
  # sampled points (within 1e-5 of a pole) and sat between the rows.
  a = np.array([0.387, 0.723, 1.0, 1.524, 2.77, 5.203, 9.537, 19.19, 30.07, 39.48, 43.1, 67.8])
  X, y = a[:, None], a ** 1.5
  probe = score.probe(X, 65536, np.random.default_rng(0))
  narrow = _tree("x0**(3/2) + x0*tan(x0)/995", 1)
  sampled_only = score.Probe(probe.points, probe.ends, np.zeros((0, 2), np.int64))
  assert score.bounded(narrow, sampled_only, X, y)  # what the guard saw before
  assert not score.bounded(narrow, probe, X, y)
  assert score.bounded(_tree("x0**(3/2)", 1), probe, X, y)
  assert "cos" in [p.name for p in score.singular_parts(narrow)]  # a tan pole: its cosine's zero


def test_removable_zeros_and_a_fits_residue_pass_the_sign_change_check():
  # Rows either side of x = 0, one exactly where a bisection step lands (t = 0.375 of the
  # segment from -0.3 to 0.5): sin(x)/x is 0/0 there and its limit 1 next to it.
  X = np.array([[-0.3], [0.5], [-1.7], [1.1], [2.3], [-2.9]])
  y = np.sin(X[:, 0]) / X[:, 0]
  probe = score.probe(X, 4096, np.random.default_rng(0))
  assert score.bounded(_tree("sin(x0)/x0", 1), probe, X, y)
  assert not score.bounded(_tree("sin(x0)/x0 + 0.01/x0", 1), probe, X, y)
  # tan(y) has zeros and poles between these rows: cos(x)/tan(y) has poles only at its zeros.
  rng = np.random.default_rng(2)
  X2 = np.stack([rng.uniform(-3, 3, 300), rng.uniform(0.2, 2.9, 300)], axis=1)  # y = pi/2 inside
  law = _tree("cos(x0)/tan(x1)", 2)
  target = evaluate.evaluate_numpy(law, X2)
  assert score.bounded(law, score.probe(X2, 4096, np.random.default_rng(0)), X2, target)
  # A residue of 2e-11/y beside a law blows up only within 1e-10 of y = 0: no test row's.
  X3 = np.stack([rng.uniform(1, 2, 300), rng.uniform(-1, 1, 300)], axis=1)
  law3 = _tree("x0 - cos(x1)/x0", 2)
  target3 = evaluate.evaluate_numpy(law3, X3)
  residue = _tree("x0 - cos(x1)/x0 - 2.08e-11/x1", 2)
  assert score.bounded(residue, score.probe(X3, 4096, np.random.default_rng(0)), X3, target3)


def test_weighted_r2_is_sklearns_and_batched_r2_agrees():
  rng = np.random.default_rng(1)
  X = rng.uniform(-3, 3, (600, 2))
  y = 1.3 * np.sin(X[:, 0]) + X[:, 1] ** 2
  w = rng.uniform(0.1, 3.0, 600)
  nodes = [_tree(t) for t in ("x1**2", "0.5*x0 - 1.0", "1.2*sin(x0) + x1**2")]
  preds = [evaluate.evaluate_numpy(n, X) for n in nodes]
  for p in preds:  # sklearn's r2_score(sample_weight=w), written out
    mean = np.sum(w * y) / np.sum(w)
    want = 1 - np.sum(w * (y - p) ** 2) / np.sum(w * (y - mean) ** 2)
    assert score.r2(y, p, w) == pytest.approx(want, rel=1e-12)
    assert score.r2(y, p, w) != pytest.approx(score.r2(y, p), rel=1e-6)  # the weights matter
    assert score.r2(y, p, np.full(600, 2.5)) == pytest.approx(score.r2(y, p), rel=1e-12)
  rows = [score.ids_and_consts(n, 64) for n in nodes]
  ids, consts = np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows])
  got = score.batched_r2(ids, consts, score.pad_rows(X, y, weights=w))
  np.testing.assert_allclose(got, [score.r2(y, p, w) for p in preds], rtol=1e-4, atol=1e-5)
  # No weights and weights of one are the same computation, to the bit.
  np.testing.assert_array_equal(score.batched_r2(ids, consts, score.pad_rows(X, y)),
                                score.batched_r2(ids, consts, score.pad_rows(X, y, weights=np.ones(600))))
  # R2 is scale-free; weights beyond float32 (1e40) once overflowed to inf and every
  # candidate scored -inf. Scaled by a power of two, they score the same to the bit.
  np.testing.assert_array_equal(score.batched_r2(ids, consts, score.pad_rows(X, y, weights=w * 2.0**140)),
                                got)
