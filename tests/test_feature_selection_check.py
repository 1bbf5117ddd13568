"""experiments/feature_selection_check.py: the padding and the correlation baselines."""

import pathlib
import sys

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "experiments"))
import feature_selection_check as check  # noqa: E402


def test_padding_hides_the_real_columns_where_it_says():
  rng = np.random.default_rng(0)
  X = np.c_[rng.uniform(1, 2, 200), rng.uniform(-50, 50, 200)]
  full, real = check.padded(X, 9, np.random.default_rng(3))
  assert full.shape == (200, 9) and len(real) == 2
  np.testing.assert_array_equal(full[:, real], X)  # the real columns, in their order
  noise = np.delete(full, real, axis=1)
  for col in noise.T:  # each noise column lies within one real column's range
    assert any(col.min() >= c.min() and col.max() <= c.max() for c in X.T)


def test_correlation_baselines():
  rng = np.random.default_rng(1)
  X = rng.uniform(-1, 1, (500, 4))
  y = np.exp(3 * X[:, 2])  # monotone: both see x2; only Spearman is exact about it
  assert list(check.correlation_pick(X, y, 1, spearman=False)) == [2]
  assert list(check.correlation_pick(X, y, 1, spearman=True)) == [2]
  y = X[:, 0] ** 2  # symmetric: neither correlation sees x0
  assert 0 not in check.correlation_pick(X, y, 1, spearman=True)


def test_a_width_no_dataset_fits_under_is_one_line_not_a_division_by_zero():
  import subprocess
  for args, needle in ((["--group=strogatz", "--width=2", "--rows=50"],
                        "no dataset of strogatz has fewer than --width=2 variables"),
                       (["--rows=0"], "--rows=0")):
    r = subprocess.run([sys.executable, str(REPO / "experiments" / "feature_selection_check.py"),
                        *args], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr, r.stderr
