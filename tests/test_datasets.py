"""Tests for lee_jax.datasets: shipped data, user tables, the SRBench split, the CLI."""

import collections
import gzip
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from lee_jax import datasets as D

REPO = pathlib.Path(__file__).resolve().parent.parent


# --- shipped datasets ----------------------------------------------------------------------

def test_strogatz():
  ds = D.load_dataset("strogatz_shearflow1")
  assert (ds.group, ds.X.shape, ds.y.shape) == ("strogatz", (400, 2), (400,))
  assert ds.feature_names == ("x", "y") and ds.X.dtype == np.float64
  assert "cot" in ds.formula and "x'" not in ds.formula
  # Full precision survives the csv -> tsv.gz conversion (first row of the source file).
  np.testing.assert_array_equal(ds.X[0], [-1.40163422326322, -1.42574462518204])
  assert ds.y[0] == -0.024593114806583
  assert not ds.X.flags.writeable  # cached arrays are shared, so read-only


def test_strogatz_formulas_reproduce_targets():
  from lee_jax import expr
  for info in D.list_datasets():
    if info.group == "strogatz":
      ds = D.load_dataset(info.name)
      f = expr.numpy_function(expr.parse_formula(ds.formula, ds.feature_names), ds.feature_names)
      np.testing.assert_allclose(f(ds.X), ds.y, rtol=1e-9, atol=1e-12, err_msg=info.name)


def test_feynman_matches_formula_recomputed_with_numpy():
  ds = D.load_dataset("feynman_I_6_2", feynman_rows=5000)
  assert ds.group == "feynman" and ds.feature_names == ("sigma", "theta")
  assert ds.X.shape == (5000, 2) and np.all((ds.X >= 1) & (ds.X <= 3))
  sigma, theta = ds.X.T
  expected = np.exp(-(theta / sigma)**2 / 2) / (np.sqrt(2 * np.pi) * sigma)
  np.testing.assert_allclose(ds.y, expected, rtol=1e-12)
  D._load_cached.cache_clear()  # regeneration itself is deterministic, not just the cache
  np.testing.assert_array_equal(D.load_dataset("feynman_I_6_2", feynman_rows=5000).X, ds.X)


def test_feynman_arc_functions_and_default_rows():
  ds = D.load_dataset("feynman_test_10")
  assert ds.X.shape == (100_000, 3) and ds.formula.startswith("acos(")
  c, v, theta2 = ds.X.T
  expected = np.arccos((np.cos(theta2) - v / c) / (1 - v / c * np.cos(theta2)))
  np.testing.assert_allclose(ds.y, expected, rtol=1e-12)


def test_every_feynman_regenerates_finite():
  names = [d.name for d in D.list_datasets() if d.group == "feynman"]
  for name in names:
    ds = D.load_dataset(name, feynman_rows=500)
    assert np.isfinite(ds.y).all() and np.ptp(ds.y) > 0, name


def test_blackbox():
  ds = D.load_dataset("1027_ESL")
  info = {d.name: d for d in D.list_datasets()}["1027_ESL"]
  assert ds.group == "blackbox" and ds.formula is None
  assert ds.X.shape == (info.rows, info.features) == (488, 4)
  assert ds.feature_names == ("in1", "in2", "in3", "in4")


def test_list_datasets():
  infos = D.list_datasets()
  assert collections.Counter(d.group for d in infos) == {"strogatz": 14, "feynman": 119,
                                                         "blackbox": 72}
  assert infos == sorted(infos, key=lambda d: (D.GROUPS.index(d.group), d.name))
  assert all(1 <= d.features <= 10 and d.rows >= 10 for d in infos)
  assert all(d.formula for d in infos if d.group != "blackbox")


def test_unknown_dataset_suggests_close_match():
  with pytest.raises(D.DataError, match="strogatz_vdp1"):
    D.load_dataset("strogatz_vdp3")


def _write_pmlb(root, name, header, rows):
  (root / name).mkdir(parents=True)
  text = "\t".join(header) + "\n" + "".join("\t".join(map(str, r)) + "\n" for r in rows)
  (root / name / f"{name}.tsv.gz").write_bytes(gzip.compress(text.encode()))


def test_resolve_names_and_groups_for_sweeps():
  strogatz = D.resolve(None, ["strogatz"])
  assert len(strogatz) == 14 and all(n.startswith("strogatz_") for n in strogatz)
  assert len(D.resolve(None, ["all"])) == 14 + 119 + 72
  assert len(D.resolve(None, ["strogatz", "blackbox"])) == 14 + 72
  assert D.resolve(["192_vineyard", "strogatz_lv1"], ["feynman"]) == ["192_vineyard", "strogatz_lv1"]
  with pytest.raises(D.DataError, match="strogatz_shearflow1"):  # checked, with a hint
    D.resolve(["strogatz_lv1", "strogatz_shearflw1"], ["strogatz"])
  with pytest.raises(D.DataError, match="--datasets names no dataset"):  # --datasets=
    D.resolve([], ["strogatz"])
  for groups in (["strogatz", "strogtz"], ["user"], []):  # no user tables ship
    with pytest.raises(D.DataError, match="unknown group"):
      D.resolve(None, groups)


def test_pmlb_layout_data_dir(tmp_path):
  rng = np.random.default_rng(0)
  _write_pmlb(tmp_path, "mine", ["a", "b", "target"], rng.normal(size=(30, 3)))
  _write_pmlb(tmp_path, "feynman_I_6_2", ["sigma", "theta", "target"], rng.uniform(1, 3, (20, 3)))
  ds = D.load_dataset("mine", data_dir=tmp_path)
  assert (ds.group, ds.X.shape, ds.feature_names) == ("blackbox", (30, 2), ("a", "b"))
  real = D.load_dataset("feynman_I_6_2", data_dir=str(tmp_path))  # a file beats regeneration
  assert real.X.shape == (20, 2) and "sigma" in real.formula
  infos = {d.name: d for d in D.list_datasets(tmp_path)}
  assert len(infos) == 206 and (infos["mine"].rows, infos["mine"].features) == (30, 2)
  assert infos["feynman_I_6_2"].rows == 20
  with pytest.raises(D.DataError, match="not a directory"):
    D.load_dataset("mine", data_dir=tmp_path / "nope")


# --- split ---------------------------------------------------------------------------------

def _data(n, k=3, seed=0):
  rng = np.random.default_rng(seed)
  X = rng.normal(size=(n, k))
  return X, X.sum(1) + 2.0


@pytest.mark.parametrize("n", [400, 101])
def test_split_sizes_disjoint_covering(n):
  X, y = _data(n)
  s = D.split(X, y, seed=3)
  assert len(s.test_index) == np.ceil(0.25 * n)
  assert len(s.val_index) == round(0.2 * np.floor(0.75 * n))
  if n == 400:
    assert (len(s.y_train), len(s.y_val), len(s.y_test)) == (240, 60, 100)
  idx = np.concatenate([s.train_index, s.val_index, s.test_index])
  assert len(np.unique(idx)) == len(idx) == n  # ceil(n/4) + floor(3n/4) == n
  np.testing.assert_array_equal(s.X_val, X[s.val_index])
  np.testing.assert_array_equal(s.y_test, y[s.test_index])
  assert s.noise_sigma == 0 and np.array_equal(s.y_train, y[s.train_index])


@pytest.mark.parametrize("seed", [0, 7, 42])
def test_split_matches_sklearn(seed):
  model_selection = pytest.importorskip("sklearn.model_selection")
  X, y = _data(103)
  X_tr, X_te, y_tr, y_te = model_selection.train_test_split(
      X, y, train_size=0.75, test_size=0.25, random_state=seed)
  s = D.split(X, y, seed=seed, val_fraction=0.0, max_train_samples=None)
  np.testing.assert_array_equal(s.X_train, X_tr)
  np.testing.assert_array_equal(s.X_test, X_te)
  np.testing.assert_array_equal(s.y_test, y_te)
  assert len(s.y_val) == 0


def test_split_noise():
  X, y = _data(40_000)
  clean = D.split(X, y, seed=1, max_train_samples=None)
  noisy = D.split(X, y, seed=1, noise=0.1, max_train_samples=None)
  np.testing.assert_array_equal(clean.train_index, noisy.train_index)
  rms = np.sqrt(np.mean(np.concatenate([clean.y_train, clean.y_val])**2))
  assert noisy.noise_sigma == pytest.approx(0.1 * rms)
  for a, b in ((noisy.y_train, clean.y_train), (noisy.y_val, clean.y_val)):
    assert np.std(a - b) == pytest.approx(0.1 * rms, rel=0.05)
  np.testing.assert_array_equal(noisy.y_test, clean.y_test)
  np.testing.assert_array_equal(noisy.X_train, clean.X_train)


def test_split_max_train_samples():
  X, y = _data(1000)
  s = D.split(X, y, seed=5, max_train_samples=100)
  assert (len(s.y_train), len(s.y_val), len(s.y_test)) == (80, 20, 250)
  uncapped = D.split(X, y, seed=5, max_train_samples=None)
  assert set(s.train_index) | set(s.val_index) <= set(uncapped.train_index) | set(
      uncapped.val_index)
  np.testing.assert_array_equal(s.test_index, uncapped.test_index)
  with pytest.raises(D.DataError):
    D.split(X, y, seed=-1)


# --- user tables ---------------------------------------------------------------------------

def _csv(tmp_path, header, rows, name="t.csv"):
  p = tmp_path / name
  p.write_text(",".join(header) + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows))
  return p


def test_load_table_ok(tmp_path):
  rows = [[i, i % 2 == 0, 0.5 * i, i * i] for i in range(20)]  # int and bool columns
  ds = D.load_table(_csv(tmp_path, ["a", "flag", "b", "y"], rows), target="y")
  assert ds.group == "user" and ds.name == "t" and ds.feature_names == ("a", "flag", "b")
  assert ds.X.dtype == np.float64 and ds.X[0, 1] == 1.0 and ds.y[3] == 9.0
  sub = D.load_table(_csv(tmp_path, ["a", "flag", "b", "y"], rows), "y", features=["b", "a"])
  assert sub.feature_names == ("b", "a")
  p = tmp_path / "t.tsv.gz"
  p.write_bytes(gzip.compress(b"a\tb\ttarget\n" + b"".join(
      f"{i}\t{i * 2}\t{i + 1}\n".encode() for i in range(12))))
  assert D.load_table(p).X.shape == (12, 2)


@pytest.mark.parametrize("header,rows,target,match", [
    (["a", "y"], [[i, i] for i in range(20)], "z", r"no target column 'z'; columns are: a, y"),
    (["a", "b", "y"], [[i, "abc" if i == 4 else i, i] for i in range(20)], "y",
     r"column 'b' is not numeric"),
    (["a", "y"], [[i, "nan" if i < 3 else i] for i in range(20)], "y",
     r"3 of 20 rows have NaN or inf.*drop"),
    (["a", "y"], [["inf" if i == 0 else i, i] for i in range(20)], "y", r"1 of 20 rows"),
    (["a", "y"], [[i, i] for i in range(5)], "y", r"5 rows; at least 10"),
    ([f"f{i}" for i in range(11)] + ["y"], [list(range(i, i + 12)) for i in range(20)], "y",
     r"11 features but LEE's vocabulary has 10 variables.*--features.*--select_k_best"),
    (["a", "a", "y"], [[i, i, i] for i in range(20)], "y", r"duplicate column names: a"),
    # pandas' to_csv writes its index as a first column without a name
    (["", "a", "y"], [[i, i, i] for i in range(20)], "y", r"column 1 has no name.*index=False"),
    (["a", "y"], [[i, 4] for i in range(20)], "y", r"target is constant"),
    # a table split by semicolons reads as one column named "a;y"
    (["a;y"], [[f"{i};{i}"] for i in range(20)], "y", r"columns are: a;y \(is the table split "
     r"by ';'\? save it with commas\)"),
    (["a", "y"], [[i, 1e300 * (i + 1)] for i in range(20)], "y",
     r"column\(s\) y hold values beyond 1e\+15 .*rescale"),
])
def test_load_table_errors(tmp_path, header, rows, target, match):
  with pytest.raises(D.DataError, match=match) as e:
    D.load_table(_csv(tmp_path, header, rows), target=target)
  assert "\n" not in str(e.value)


def test_features_naming_the_target_or_weights_say_so(tmp_path):
  path = _csv(tmp_path, ["a", "w", "y"], [[i, 1, i] for i in range(20)])
  for features, match in ((["a", "y"], "names the target column 'y'"),
                          (["a", "w"], "names the weights column 'w'")):
    with pytest.raises(D.DataError, match=match):
      D.load_table(path, "y", features=features, weights="w")


def test_load_table_file_errors(tmp_path):
  with pytest.raises(D.DataError, match="no such file"):
    D.load_table(tmp_path / "missing.csv")
  with pytest.raises(D.DataError, match="unknown table format"):
    D.load_table(tmp_path / "data.xlsx")
  wide = _csv(tmp_path, [f"f{i}" for i in range(11)] + ["y"],
              [[i * j % 7 for j in range(12)] for i in range(20)])
  assert D.load_table(wide, "y", features=["f1", "f2"]).X.shape == (20, 2)
  with pytest.raises(D.DataError, match="feature column\\(s\\) named twice: f1"):
    D.load_table(wide, "y", features=["f1", "f1"])
  # not UTF-8, or a truncated gzip: one line naming the file, not a decoder's traceback
  latin1 = tmp_path / "latin1.csv"
  latin1.write_bytes("caf\xe9,y\n".encode("latin-1") + b"1,2\n" * 20)
  with pytest.raises(D.DataError, match=r"latin1.csv: not UTF-8 text \(byte 3"):
    D.load_table(latin1, "y")
  cut = tmp_path / "cut.csv.gz"
  whole = gzip.compress(b"a,y\n" + b"".join(f"{i},{i * i}\n".encode() for i in range(50)))
  cut.write_bytes(whole[:-10])
  with pytest.raises(D.DataError, match="cut.csv.gz: not a readable gzip file"):
    D.load_table(cut, "y")


@pytest.mark.parametrize("noise", [float("nan"), float("inf"), -0.1])
def test_split_refuses_noise_that_is_not_a_finite_level(noise):
  X, y = _data(100)
  with pytest.raises(D.DataError, match="noise must be a finite level >= 0, got"):
    D.split(X, y, seed=0, noise=noise)
  with pytest.raises(D.DataError, match=r"val_fraction must be in \[0, 1\), got 1.5"):
    D.split(X, y, seed=0, val_fraction=1.5)  # (one message once named both)


def test_from_arrays_refuses_complex_values_and_repeated_names():
  X, y = np.arange(40.0).reshape(20, 2), np.arange(20.0) ** 2
  with pytest.raises(D.DataError, match="real numbers, not complex"):
    D.from_arrays(X + 1j, y)
  with pytest.raises(D.DataError, match="feature names repeat: a"):
    D.from_arrays(X, y, feature_names=["a", "a"])


# --- CLI -----------------------------------------------------------------------------------

def _cli(*args):
  return subprocess.run([sys.executable, "-m", "lee_jax.datasets", *args], cwd=REPO,
                        capture_output=True, text=True, timeout=120)


def test_cli_list_and_show():
  r = _cli("--list")
  assert r.returncode == 0, r.stderr
  lines = r.stdout.strip().splitlines()
  assert len(lines) == 205 and lines[0].split()[:4] == ["strogatz_bacres1", "strogatz", "400", "2"]
  r = _cli("--show", "strogatz_shearflow1")
  assert r.returncode == 0 and "cot(y) * cos(x)" in r.stdout and "400 rows" in r.stdout


def test_cli_show_keeps_the_k_best_columns_of_a_wide_table(tmp_path):
  # the error for a wide table suggests --select_k_best: --show has it too
  rows = [[(i * (j + 3)) % 17 for j in range(12)] + [i % 5] for i in range(40)]
  path = _csv(tmp_path, [f"f{j}" for j in range(12)] + ["y"], rows)
  r = _cli("--show", str(path), "--target", "y")
  assert r.returncode == 2 and "--select_k_best" in r.stderr
  r = _cli("--show", str(path), "--target", "y", "--select_k_best", "3")
  assert r.returncode == 0, r.stderr
  assert "select_k_best kept 3 of 12 columns" in r.stdout


@pytest.mark.parametrize("args,match", [(["--show", "strogatz_shearflow"], "strogatz_shearflow1"),
                                        (["--nosuchflag"], "nosuchflag"), ([], "--list")])
def test_cli_errors(args, match):
  r = _cli(*args)
  assert r.returncode == 2 and r.stdout == ""
  assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("error: ")
  assert match in r.stderr


def test_from_arrays_reads_ints_and_bools_and_validates():
  X = np.stack([np.arange(20), np.arange(20) % 2 == 0], axis=1).astype(object)
  ds = D.from_arrays(np.c_[np.arange(20), np.arange(20) % 2 == 0], np.arange(20) * 3)
  assert ds.X.dtype == np.float64 and ds.X[2, 1] == 1.0 and ds.feature_names == ("x0", "x1")
  assert D.from_arrays(X, np.arange(20.0), ["n", "even"]).feature_names == ("n", "even")
  mine = np.arange(40.0).reshape(20, 2)
  D.from_arrays(mine, np.arange(20.0))
  assert mine.flags.writeable  # the caller's array is copied, not frozen
  for args, match in [((np.zeros((20, 2)) + [[0, 1e20]], np.arange(20.0)), "x1 hold values beyond"),
                      ((np.zeros((20, 2)), np.arange(20.0), ["a"]), "1 feature names for 2"),
                      ((np.zeros((20, 0)), np.arange(20.0)), "no feature columns"),
                      ((mine, np.arange(20.0) * 1e-32), r"target's values are all below 1e-30 "
                       r"in magnitude \(max 1.9e-31\).*rescale")]:
    with pytest.raises(D.DataError, match=match):
      D.from_arrays(*args)
  assert D.from_arrays(mine, np.arange(20.0) * 1e-20).y.max() == 1.9e-19  # joules are fine
  # 1e8 + 2 sin(x): float32 rounds it to steps of 8, and every candidate, a constant among
  # them, had scored R2 1 (the answer 100000000.32 at a true R2 -0.0002)
  wave = 1e8 + 2 * np.sin(np.arange(20.0))
  with pytest.raises(D.DataError, match=r"varies by only 1.38 \(std\) around 100000000.*"
                     r"subtract an offset first \(e.g. target - 1e\+08\)"):
    D.from_arrays(mine, wave)
  assert D.from_arrays(mine, wave - 1e8).y.max() < 2  # as the message says
  assert D.from_arrays(mine, 1e3 + 2 * np.sin(np.arange(20.0))).y.max() > 1e3  # resolvable


def test_load_table_weights_column(tmp_path):
  rows = [[i, 0.5 * i, i * i, 1 + (i % 3)] for i in range(20)]
  p = _csv(tmp_path, ["a", "b", "y", "w"], rows)
  ds = D.load_table(p, target="y", weights="w")
  # (scaled to a largest weight of 1: only the ratios count)
  assert ds.feature_names == ("a", "b")
  np.testing.assert_allclose(ds.weights, [(1 + (i % 3)) / 3 for i in range(20)], rtol=1e-15)
  assert D.load_table(p, target="y").feature_names == ("a", "b", "w")  # no weights: a feature
  assert D.load_table(p, target="y").weights is None
  for bad_rows, match in [([[i, i, i, -1] for i in range(20)], "non-negative"),
                          ([[i, i, i, 0] for i in range(20)], "not all zero"),
                          ([[i, i, i, "nan"] for i in range(20)], "finite")]:
    with pytest.raises(D.DataError, match=match):
      D.load_table(_csv(tmp_path, ["a", "b", "y", "w"], bad_rows), target="y", weights="w")
  with pytest.raises(D.DataError, match="no weights column 'q'"):
    D.load_table(p, target="y", weights="q")
  with pytest.raises(D.DataError, match="names the weights column"):
    D.load_table(p, target="y", features=["a", "w"], weights="w")


def test_weighted_rows_drops_zero_weights_and_forgets_equal_ones():
  X, y = np.arange(40.0).reshape(20, 2), np.arange(20.0)
  w = np.where(np.arange(20) % 4 == 0, 0.0, 2.0)
  X2, y2, w2 = D.weighted_rows(X, y, w)
  assert len(y2) == 15 and 0.0 not in y2 % 4 and w2 is None  # the rest are equal: no weights
  _, _, w3 = D.weighted_rows(X, y, np.arange(20.0) + 1)
  assert w3 is not None and len(w3) == 20
  assert D.weighted_rows(X, y, None)[2] is None
  with pytest.raises(D.DataError, match="at least 10"):
    D.weighted_rows(X, y, np.r_[np.ones(9), np.zeros(11)])
  # a target constant where the weights are positive was searched (and answered "1")
  with pytest.raises(D.DataError, match=r"the target is constant \(1\) on the rows of positive "):
    D.weighted_rows(X, np.where(np.arange(20) < 10, 1.0, y), np.r_[np.ones(10), np.zeros(10)])


def test_weights_count_by_their_ratios_and_huge_ones_do_not_overflow():
  # 1e308 on half the rows overflowed the weighted sums (numpy warnings, then a traceback in
  # infer and a wrong answer from LEERegressor.fit)
  w = D.check_weights(np.r_[np.full(10, 1e308), np.ones(10)], 20, "w")
  np.testing.assert_allclose(w, np.r_[np.ones(10), np.full(10, 1e-308)], rtol=1e-12)
  from lee_jax import fit
  with np.errstate(over="raise"):
    assert np.isfinite(fit.row_weights(np.r_[np.full(10, 1e308), np.ones(10)], 20)).all()
  np.testing.assert_array_equal(D.check_weights([2.0, 4.0], 2, "w"), [0.5, 1.0])
  # a positive weight stays positive (1e-30 beside 1e300 divided to 0: its rows left out)
  assert (D.check_weights(np.r_[np.full(5, 1e300), np.full(15, 1e-30)], 20, "w") > 0).all()


def test_select_k_best_keeps_the_informative_columns_of_a_wide_table(tmp_path):
  rng = np.random.default_rng(0)
  X = rng.uniform(-3, 3, (300, 13))
  y = 2 * X[:, 2] + np.sin(2 * X[:, 9])
  p = _csv(tmp_path, [f"f{i}" for i in range(13)] + ["y"], np.c_[X, y].tolist())
  ds = D.load_table(p, "y", select_k_best=2)
  assert ds.feature_names == ("f2", "f9") and ds.selected == (2, 9)
  assert ds.input_names == tuple(f"f{i}" for i in range(13)) and not ds.X.flags.writeable
  np.testing.assert_array_equal(ds.X, X[:, [2, 9]])
  assert "select_k_best kept 2 of 13 columns; dropped: f0, f1, f3" in D.describe(ds)
  same = D.from_arrays(X, y, select_k_best=2)
  assert same.selected == (2, 9) and same.feature_names == ("x2", "x9")
  assert D.from_arrays(X[:, :5], y, select_k_best=5).selected is None  # nothing to drop
  for k in (0, 11, 2.0, True):
    with pytest.raises(D.DataError, match="select_k_best must be an integer from 1 to 10"):
      D.from_arrays(X, y, select_k_best=k)
  with pytest.raises(D.DataError, match="13 features.*select_k_best=K"):
    D.from_arrays(X, y)


def test_a_trials_columns_are_chosen_without_its_test_rows(tmp_path):
  # Two tables whose targets differ only on trial 0's test fold: y = c0 elsewhere. The test
  # fold's targets chose the columns before (5 c7 there gave c7).
  rng = np.random.default_rng(0)
  X = rng.uniform(-1, 1, (400, 12))
  train, test = D._train_test_indices(400, 0)
  y = X[:, 0].copy()
  leaky = y.copy()
  leaky[test] = 5 * X[test, 7]
  header = [f"c{j}" for j in range(12)] + ["target"]
  kept = []
  for i, target in enumerate((y, leaky)):
    path = _csv(tmp_path, header, np.c_[X, target].tolist(), name=f"t{i}.csv")
    every = D.load_input(data=path, select_k_best=1)
    assert every.X.shape == (400, 12)  # every column: each trial chooses
    kept.append(D.trial_columns(every, 1, seed=0).feature_names)
  assert kept == [("c0",), ("c0",)]
  assert D.load_table(path, select_k_best=1).feature_names == ("c7",)  # all rows: 100 say c7
  assert D.trial_columns(every, None, 0) is every
  chosen = D.trial_columns(every, 1, seed=0)
  assert D.columns_named(every, ["c0"]).selected == chosen.selected == (0,)
  with pytest.raises(D.DataError, match="no column"):
    D.columns_named(every, ["c99"])
  parts = D.split(X, y, seed=0)  # the rows that chose: the search's (training and validation)
  assert set(train) == set(parts.train_index) | set(parts.val_index)
  np.testing.assert_array_equal(test, parts.test_index)


def test_rows_of_weight_zero_do_not_choose_columns(tmp_path):
  # y = c0 on the rows that count, 5 c7 on 150 rows of weight 0.
  rng = np.random.default_rng(1)
  X = rng.uniform(-1, 1, (400, 12))
  w = np.r_[np.ones(250), np.zeros(150)]
  y = np.where(w > 0, X[:, 0], 5 * X[:, 7])
  assert D.from_arrays(X, y, select_k_best=1, weights=w).selected == (0,)
  assert D.from_arrays(X, y, select_k_best=1).selected == (7,)
  path = _csv(tmp_path, [f"c{j}" for j in range(12)] + ["target", "w"], np.c_[X, y, w].tolist())
  assert D.load_table(path, weights="w", select_k_best=1).feature_names == ("c0",)
  ds = D.load_input(data=path, weights="w", select_k_best=1)
  assert len(ds.y) == 250 and D.trial_columns(ds, 1, 0).feature_names == ("c0",)
  with pytest.raises(D.DataError, match="sample_weight must be finite"):
    D.from_arrays(X, y, weights=-w, weights_name="sample_weight", select_k_best=1)


def test_describe_names_the_tables_target_and_shows_only_a_known_formula(tmp_path):
  rows = [[i, i % 3, 2 * i + 1] for i in range(20)]
  ds = D.load_table(_csv(tmp_path, ["a", "b", "power W"], rows), target="power W")
  assert ds.target == "power W"
  text = D.describe(ds)
  lines = text.splitlines()
  assert lines[-1].split()[:2] == ["power", "W"]  # the target's row, by its own name
  assert "target" not in text and "formula" not in text  # no law to show: no line for it
  shipped = D.describe(D.load_dataset("strogatz_shearflow1"))
  assert "formula: cot(y) * cos(x)" in shipped and shipped.splitlines()[-1].startswith("target ")
  assert D.from_arrays(np.arange(40.0).reshape(20, 2), np.arange(20.0)).target == "target"


def test_from_arrays_names_the_non_numeric_column_row_and_value():
  y = np.arange(20.0)
  X = np.c_[np.arange(20.0), np.arange(20.0)].astype(object)
  X[3, 1] = "abc"
  for args, message in [
      ((X, y), "X column 1 is not numeric (row 3: 'abc')"),
      ((X, y, ["mass", "colour"]), "X column 'colour' is not numeric (row 3: 'abc')"),
      ((np.array([["1", "2"]] * 5 + [["1", "z"]] * 15), y), "X column 1 is not numeric "
       "(row 5: 'z')"),  # a string array: 'z', not np.str_('z')
      ((np.arange(20.0), ["1"] * 7 + ["oops"] * 13), "y is not numeric (row 7: 'oops')"),
  ]:
    with pytest.raises(D.DataError) as e:
      D.from_arrays(*args, name="fit input")
    assert str(e.value) == f"fit input: {message}"
  # a ragged list is a shape error, not a cell's: numpy's message stays
  with pytest.raises(D.DataError, match="must be numeric .*inhomogeneous"):
    D.from_arrays([[1, 2], [3]] * 10, y)


def test_from_arrays_names_a_dataframes_non_numeric_column():
  pd = pytest.importorskip("pandas")
  df = pd.DataFrame({"mass": np.arange(20.0), "colour": ["red"] * 20})
  with pytest.raises(D.DataError, match=r"^data: X column 'colour' is not numeric "
                     r"\(row 0: 'red'\)$"):
    D.from_arrays(df, np.arange(20.0), list(df.columns))
  # pandas' own missing value reads as NaN (the NaN error), not as the non-numeric cell
  na = pd.DataFrame({"n": pd.array([1, None] + [3] * 18, dtype="Int64"),
                     "b": [1.0] * 3 + ["x"] + [2.0] * 16})
  with pytest.raises(D.DataError, match=r"X column 'b' is not numeric \(row 3: 'x'\)"):
    D.from_arrays(na, np.arange(20.0), list(na.columns))
  with pytest.raises(D.DataError, match="NaN or inf"):
    D.from_arrays(na[["n"]], np.arange(20.0), ["n"])
  # beside a float column too (the frame as one array held pd.NA objects: "must be numeric")
  mixed = na.assign(b=np.arange(20.0))
  with pytest.raises(D.DataError, match=r"1 of 20 rows have NaN or inf values \(in n\)"):
    D.from_arrays(mixed, np.arange(20.0), list(mixed.columns))
  objects = mixed.assign(n=pd.Series([1.0, pd.NA] * 10, dtype=object))  # and in an object column
  with pytest.raises(D.DataError, match=r"10 of 20 rows have NaN or inf values \(in n\)"):
    D.from_arrays(objects, np.arange(20.0), list(objects.columns))
