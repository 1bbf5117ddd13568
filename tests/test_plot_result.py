import numpy as np
import pytest

from lee_jax import plot_result

EQUATIONS = [{"complexity": 1, "r2_val": 0.0, "expression": "3.14159265358979"},
             {"complexity": 4, "r2_val": 0.9, "expression": "2.00000012345*x + 0.5"},
             {"complexity": 7, "r2_val": 1.0, "expression": "2*x + sin(x)"}]
HISTORY = [[(0, 0.5, 0.9), (25, 0.9, 0.99)], [(0, 0.2, 0.3), (25, 1.0, 1.0)]]


def _fig(X, y, histories=HISTORY, best=4):
  def f(Xq):
    return 2 * Xq[:, 0] + np.sin(Xq[:, 0])
  return plot_result.figure(EQUATIONS, best, f, {"train": (X, y), "test": (X[:5], y[:5])},
                            ["x"] if X.shape[1] == 1 else ["x", "z"], histories, title="t")


def test_one_feature_draws_the_formula_over_the_data_and_stars_the_answer():
  X = np.linspace(-3, 3, 40)[:, None]
  y = 2 * X[:, 0] + np.sin(X[:, 0])
  fig = _fig(X, y)
  ax_eq, ax_fit, ax_run = fig.axes
  star = [l for l in ax_eq.lines if l.get_marker() == "*"]
  assert len(star) == 1 and star[0].get_xdata()[0] == 4
  np.testing.assert_allclose(star[0].get_ydata()[0], 0.1)  # 1 - R2 = 1 - 0.9
  # The exact fit sits on the log axis' floor instead of vanishing at 1 - R2 = 0.
  table = ax_eq.lines[0].get_ydata()
  assert table[-1] == plot_result._FLOOR and np.all(np.isfinite(table))
  curve = [l for l in ax_fit.lines if len(l.get_xdata()) == 512]
  assert len(curve) == 1
  np.testing.assert_allclose(curve[0].get_xdata()[[0, -1]], [-3, 3])
  assert len(ax_fit.collections) == 2  # train and test points
  assert len(ax_run.lines) == 2  # one curve per round
  labels = [t.get_text() for t in ax_eq.texts]
  assert "2*x + 0.5" in labels and "3.142" in labels  # constants at 4 significant figures


def test_several_features_draw_predicted_against_true(tmp_path):
  rng = np.random.default_rng(0)
  X = rng.uniform(-2, 2, (50, 2))
  y = 2 * X[:, 0] + np.sin(X[:, 0])
  fig = _fig(X, y, histories=(), best=99)  # no star when the answer is not in the table
  ax_eq, ax_fit, _ = fig.axes
  assert not [l for l in ax_eq.lines if l.get_marker() == "*"]
  pts = ax_fit.collections[0].get_offsets()
  np.testing.assert_allclose(pts[:, 1], pts[:, 0])  # a perfect formula lies on the diagonal
  path = plot_result.save(fig, tmp_path / "f.svg")
  assert path.read_text().lstrip().startswith("<?xml") and not list(tmp_path.glob("*.tmp"))


def test_a_formula_that_fails_on_some_points_still_draws(tmp_path):
  X = np.linspace(-1, 1, 21)[:, None]  # 1/x is inf at x = 0
  fig = plot_result.figure(EQUATIONS[:1], 1, lambda Xq: 1 / Xq[:, 0], {"data": (X, X[:, 0])},
                           ["x"])
  path = plot_result.save(fig, plot_result.check_path(tmp_path / "f.png"))
  assert path.read_bytes()[:4] == b"\x89PNG"


def test_paths_are_checked_before_anything_runs(tmp_path):
  with pytest.raises(plot_result.PlotError, match="format"):
    plot_result.check_path(tmp_path / "f.jpg")
  with pytest.raises(plot_result.PlotError, match="does not exist"):
    plot_result.check_path(tmp_path / "no" / "f.png")
  (tmp_path / "f.png").write_bytes(b"keep")
  with pytest.raises(plot_result.PlotError, match="--overwrite"):
    plot_result.check_path(tmp_path / "f.png")
  assert plot_result.check_path(tmp_path / "f.png", overwrite=True) == tmp_path / "f.png"
  assert plot_result.trial_paths(tmp_path / "f.png", 1) == [tmp_path / "f.png"]
  assert [p.name for p in plot_result.trial_paths(tmp_path / "f.pdf", 2)] == [
      "f_trial1.pdf", "f_trial2.pdf"]
  with pytest.raises(plot_result.PlotError, match="no data"):
    plot_result.figure(EQUATIONS, 1, lambda Xq: Xq[:, 0], {}, ["x"])


def test_a_failed_write_is_a_plot_error_and_leaves_no_temporary_file(tmp_path):
  import matplotlib.pyplot as plt
  fig = plt.figure()
  try:
    with pytest.raises(plot_result.PlotError, match="f.png: cannot write it"):
      plot_result.save(fig, tmp_path / "gone" / "f.png")  # its folder went after the check
  finally:
    plt.close(fig)
  assert not list(tmp_path.rglob("*.tmp"))


def _redraw_cli(*args):
  import subprocess
  import sys
  return subprocess.run([sys.executable, "-m", "lee_jax.plot_result", *args],
                        capture_output=True, text=True, timeout=120)


def test_redraw_from_a_users_table_result(tmp_path):
  # a --data run's result: the table is read again (its weight-0 rows left out), split by
  # the trial's seed, and the answer drawn from its full-precision constants
  import json
  rows = "".join(f"{i},{0 if i == 3 else 1},{2 * i + 0.5}\n" for i in range(30))
  (tmp_path / "t.csv").write_text("a,w,y\n" + rows)
  rep = {"found": True, "prefix": "add mul + 2 . 0 0 e + 0 0 x0 + 5 . 0 0 e - 0 1",
         "constants": [2.0, 0.5], "seed": 0, "noise": 0.0, "dataset": "t",
         "expression": "2*a + 0.5", "complexity": 5, "r2_test": 1.0,
         "equations": EQUATIONS, "rounds": [{"history": HISTORY[0]}]}
  spec = {"data": str(tmp_path / "t.csv"), "target": "y", "features": None, "weights": "w",
          "select_k_best": None}
  (tmp_path / "r.json").write_text(json.dumps({"input": spec, "trials": [rep]}))
  r = _redraw_cli(str(tmp_path / "r.json"))
  assert r.returncode == 0, r.stderr
  assert r.stdout.strip() == f"plot written to {tmp_path / 'r.png'}"
  assert (tmp_path / "r.png").read_bytes()[:4] == b"\x89PNG"
  # with the digest of the rows infer read: the same rows draw, an edited table is refused
  from lee_jax import datasets
  digest = datasets.fingerprint(datasets.load_input(**spec))
  (tmp_path / "r.json").write_text(json.dumps({"input": spec, "rows_sha256": digest,
                                               "trials": [rep]}))
  assert _redraw_cli(str(tmp_path / "r.json"), "--overwrite").returncode == 0
  (tmp_path / "t.csv").write_text("a,w,y\n" + rows.replace(",0.5\n", ",9.5\n"))
  r = _redraw_cli(str(tmp_path / "r.json"), "--overwrite")
  assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
  assert "are not the ones the run read (edited since?)" in r.stderr


def test_redraw_reads_the_columns_a_trial_recorded(tmp_path):
  # infer's select_k_best chooses each trial's columns on its training rows and records
  # them; a record from before that read the columns chosen on every row.
  import numpy as np
  from lee_jax import datasets
  X = np.random.default_rng(0).uniform(-1, 1, (60, 12))
  every = datasets.Dataset("t", "user", X, 3 * X[:, 4], tuple(f"f{i}" for i in range(12)))
  spec = {"select_k_best": 2}
  ds = plot_result.trial_columns(every, spec, {"features": ["f9", "f1"]})
  assert ds.feature_names == ("f9", "f1")
  np.testing.assert_array_equal(ds.X, X[:, [9, 1]])
  old = plot_result.trial_columns(every, spec, {})
  assert old.feature_names == datasets.select_columns(every, 2).feature_names and "f4" in old.feature_names
  assert plot_result.trial_columns(every, {"select_k_best": None}, {}) is every


@pytest.mark.parametrize("content, needle", [
    (None, "not a `python -m lee_jax.infer --out` file"),
    ("[1, 2]", "not a `python -m lee_jax.infer --out` file"),
    ('{"dataset": "mine", "trials": []}', "does not say which table its rows came from"),
    ('{"dataset": "strogatz_lv1", "trials": [{"found": false}]}', "no trial found a formula"),
    ('{"dataset": "strogatz_lv1", "trials": [{"found": true, "prefix": "add x0"}]}',
     "trial 1 is not a record infer writes"),
])
def test_redraw_of_a_file_that_is_no_result_is_one_line(tmp_path, content, needle):
  path = tmp_path / "r.json"
  if content is not None:
    path.write_text(content)
  r = _redraw_cli(str(path))
  assert r.returncode == 2 and needle in r.stderr and r.stderr.count("\n") == 1, r.stderr
