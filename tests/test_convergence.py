"""experiments/convergence.py: Fig. 3a curves across datasets and the Fig. 3b latent path."""

import csv
import dataclasses
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import helpers

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "experiments"))
import convergence  # noqa: E402
import runner  # noqa: E402


def _row(name, rnd, it, best):
  return {"dataset": name, "round": rnd, "iteration": it, "champion_score": best,
          "best_r2_train": best}


def test_curves_hold_each_value_until_the_next_record_and_average_rounds():
  rows = [_row("a", 0, 0, 0.2), _row("a", 0, 5, 0.6), _row("a", 0, 10, 0.8),
          _row("a", 1, 0, 0.4), _row("a", 1, 10, 1.0),
          _row("b", 0, 0, -np.inf), _row("b", 0, 10, 0.5)]  # -inf: an empty pool
  grid, names, values = convergence.curves(rows)
  assert grid.tolist() == [0, 5, 10] and names == ["a", "b"]
  np.testing.assert_allclose(values, [[0.3, 0.5, 0.9], [-1.0, -1.0, 0.5]])
  center, lo, hi = convergence.band(values, "iqr")
  np.testing.assert_allclose(center, values.mean(axis=0))  # the median of two curves
  assert np.all(lo <= center) and np.all(center <= hi)
  mean, lo, hi = convergence.band(values, "std")
  np.testing.assert_allclose(hi - lo, values.std(axis=0))


def test_pca_matches_sklearn_up_to_sign_and_handles_degenerate_paths():
  from sklearn.decomposition import PCA

  z = np.random.default_rng(0).normal(size=(12, 6)) * [4, 2, 1, 0.5, 0.1, 0.1]
  points, ratio = convergence.pca_2d(z)
  ref = PCA(2).fit(z)
  np.testing.assert_allclose(np.abs(points), np.abs(ref.transform(z)), atol=1e-9)
  np.testing.assert_allclose(ratio, ref.explained_variance_ratio_)
  line = np.outer(np.arange(4.0), np.ones(6))  # points on a line: one component
  points, ratio = convergence.pca_2d(line)
  assert points.shape == (4, 2) and np.all(points[:, 1] == 0) and ratio.tolist() == [1.0, 0.0]
  assert convergence.pca_2d(z[:1])[0].tolist() == [[0.0, 0.0]]


def _read(path):
  with open(path) as f:
    return list(csv.DictReader(f))


@pytest.mark.slow
def test_end_to_end_on_two_datasets(tmp_path):
  cfg = dataclasses.replace(helpers.SMALL_SEARCH, rounds=1, iterations=10)
  # Iterative: no gradient segment to compile (the engine is shared with test_timing).
  setup = runner.Setup(*runner.load_engine(None, "tiny"), cfg, "iterative", seed=0)
  sets = runner.load_all(["strogatz_lv1", "strogatz_shearflow1"])
  written = convergence.run(setup, sets, tmp_path, pca_dataset="strogatz_shearflow1")
  assert all((tmp_path / f).stat().st_size > 0 for f in written)
  assert (tmp_path / "fig3a.png").read_bytes()[:4] == b"\x89PNG"
  history = _read(tmp_path / "history.csv")
  assert list(history[0]) == ["dataset", "round", "iteration", "champion_score", "best_r2_train"]
  per_round = 1 + cfg.iterations // cfg.parents  # the initial pool, then every batch
  assert len(history) == 2 * per_round
  curve = _read(tmp_path / "fig3a.csv")
  assert [int(r["iteration"]) for r in curve] == [0, 5, 10]
  for r in curve:
    lo, c, hi = float(r["lo"]), float(r["center"]), float(r["hi"])
    assert -1 <= lo <= c <= hi <= 1 and r["datasets"] == "2"
  path = _read(tmp_path / "trajectory.csv")
  assert len(path) == 1 + per_round and path[0]["kind"] == "z0"
  assert all(r["kind"] == "champion" and r["expression"] for r in path[1:])
  pcs = np.array([[float(r["pc1"]), float(r["pc2"])] for r in path])
  assert np.all(np.isfinite(pcs)) and np.abs(pcs.mean(axis=0)).max() < 1e-6  # centred


def test_an_unknown_dataset_is_a_one_line_error(tmp_path):
  r = subprocess.run([sys.executable, str(REPO / "experiments" / "convergence.py"),
                      "--random_model=tiny", f"--out_dir={tmp_path}",
                      "--datasets=strogatz_lv1,strogatz_nope"],
                     capture_output=True, text=True, timeout=120, cwd=REPO)
  assert r.returncode == 2
  assert r.stderr.splitlines()[-1].startswith("error: unknown dataset 'strogatz_nope'")
  assert not list(tmp_path.iterdir())  # nothing written
