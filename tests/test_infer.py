import re
import subprocess
import sys

import pytest


# These tests are about input handling and output, not search quality: a one-round search.
SHORT = ("--rounds", "1", "--iters", "5", "--quiet")


def _infer(*args):
  return subprocess.run([sys.executable, "-m", "lee_jax.infer", *args],
                        capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_quick_start_command_finds_a_formula_with_the_shipped_model():
  # The README's command with a shorter search (the default `fast` preset takes ~20 s more).
  r = _infer("--dataset", "strogatz_shearflow1", *SHORT)
  assert r.returncode == 0, r.stderr
  assert "cot(y) * cos(x)" in r.stdout
  assert "train 240, val 60, test 100 rows" in r.stdout
  m = re.search(r"R2 train (\S+)  val (\S+)  test (\S+)  complexity (\d+)", r.stdout)
  assert m, r.stdout
  assert all(float(v) <= 1.0 for v in m.groups()[:3]) and int(m[4]) >= 1
  assert "equations (best validation R2 at each complexity):" in r.stdout
  # a shipped set with a law: SRBench's verdict on the answer against it
  assert re.search(r"SRBench symbolic solution of the known law: (yes|no) \(", r.stdout)


@pytest.mark.slow
def test_user_table_with_noise(tmp_path):
  path = tmp_path / "t.csv"
  path.write_text("a b,a_b,out\n" + "".join(f"{i},{i % 3},{2 * i}\n" for i in range(40)))
  r = _infer("--data", str(path), "--target", "out", "--noise", "0.1", "--seed", "3", *SHORT)
  assert r.returncode == 0, r.stderr
  assert "train 24, val 6, test 10 rows" in r.stdout
  # a column whose name cannot stand in a formula: which symbol it is there
  assert "in formulas: 'a b' as a_b_0\n" in r.stdout
  assert "noise sigma 0;" not in r.stdout and "noise sigma 0\n" not in r.stdout
  assert "symbolic solution" not in r.stdout  # a user's table has no law to check against


@pytest.mark.slow
def test_user_table_with_a_weights_column(tmp_path):
  rows = "".join(f"{i},{i % 3},{2 * i},{1 + i % 2}\n" for i in range(40))
  path = tmp_path / "t.csv"
  path.write_text("a,b,out,w\n" + rows)
  out = tmp_path / "r.json"
  r = _infer("--data", str(path), "--target", "out", "--weights", "w", "--out", str(out), *SHORT)
  assert r.returncode == 0, r.stderr
  assert "2 features" in r.stdout  # the weights column is not a feature
  import json
  rep = json.loads(out.read_text())["trials"][0]
  assert rep["weights"] == "w" and rep["r2_test"] <= 1.0
  bad = _infer("--dataset", "strogatz_lv1", "--weights", "w", *SHORT)
  assert bad.returncode == 2 and "--weights names a column" in bad.stderr
  path.write_text("a,b,out,w\n" + "".join(f"{i},{i % 3},{2 * i},-1\n" for i in range(40)))
  bad = _infer("--data", str(path), "--target", "out", "--weights", "w", *SHORT)
  assert bad.returncode == 2 and "non-negative" in bad.stderr and bad.stderr.count("\n") == 1


@pytest.mark.slow
def test_select_k_best_searches_a_wide_table(tmp_path):
  import numpy as np
  X = np.random.default_rng(0).uniform(-3, 3, (60, 12))
  rows = np.c_[X, 3 * X[:, 7] - 2]
  path = _table(tmp_path, [f"f{i}" for i in range(12)] + ["y"], rows.tolist())
  out = tmp_path / "r.json"
  r = _infer("--data", path, "--target", "y", "--select_k_best", "2", "--out", str(out), *SHORT)
  assert r.returncode == 0, r.stderr
  assert "select_k_best kept 2 of 12 columns" in r.stdout and "2 features" in r.stdout
  # the columns the trial read, chosen on its training rows (plot_result reads them)
  import json
  assert "f7" in json.loads(out.read_text())["trials"][0]["features"]
  assert "f7" in r.stdout.split("best expression:")[1].splitlines()[0]
  bad = _infer("--data", path, "--target", "y", *SHORT)
  assert bad.returncode == 2 and "--select_k_best" in bad.stderr
  bad = _infer("--dataset", "strogatz_lv1", "--select_k_best", "11", *SHORT)
  assert bad.returncode == 2 and "from 1 to 10" in bad.stderr and bad.stderr.count("\n") == 1


@pytest.mark.parametrize("args,needle", [
    (["--dataset", "strogatz_shearflw1"], "strogatz_shearflow1"),
    (["--dataset", "strogatz_lv1", "--data", "x.csv"], "exactly one"),
    ([], "exactly one"),
    (["--data", "nope.csv"], "no such file"),
    (["--seed", "abc", "--dataset", "strogatz_lv1"], "seed"),
    (["--dataset", "strogatz_lv1", "--checkpoint", "/nonexistent/run"], "/nonexistent/run"),
    # column flags belong to --data: with --dataset they would be silently ignored
    (["--dataset", "strogatz_lv1", "--features", "zz"], "--features names a column"),
    (["--dataset", "strogatz_lv1", "--target", "q"], "--target names a column"),
])
def test_bad_input_is_one_line_and_exit_2(args, needle):
  r = _infer(*args)
  assert r.returncode == 2
  assert r.stderr.count("\n") == 1 and needle in r.stderr and "Traceback" not in r.stderr


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
  import helpers
  return str(helpers.export_tiny(tmp_path_factory.mktemp("tiny") / "export"))


@pytest.mark.slow
def test_search_with_a_checkpoint_prints_the_answer_and_writes_json(ckpt, tmp_path):
  import json
  out = tmp_path / "r.json"
  r = _infer("--dataset", "strogatz_shearflow1", "--checkpoint", ckpt, "--rounds", "1",
             "--iters", "5", "--trials", "2", "--out", str(out), "--plot", str(tmp_path / "f.png"),
             "--nopower_seeds", "--nofactor_seeds", "--nocomposite_seeds", "--notransform_seeds",
             "--nowave_seeds", "--long_terms=0", "--noparsimony", "--nofinal_refit")
  assert r.returncode == 0, r.stderr
  for t in (1, 2):  # one figure per trial
    assert (tmp_path / f"f_trial{t}.png").read_bytes()[:4] == b"\x89PNG"
    assert f"plot written to {tmp_path / f'f_trial{t}.png'}" in r.stdout
  assert "best expression:" in r.stdout and "latex:" in r.stdout and "R2 train" in r.stdout
  assert "mean test R2 over 2 trial(s)" in r.stdout
  assert "round 1/1" in r.stderr  # progress
  res = json.loads(out.read_text())
  assert res["dataset"] == "strogatz_shearflow1" and [t["seed"] for t in res["trials"]] == [0, 1000]
  assert "rows_sha256" not in res  # a shipped dataset is fixed by its name
  t = res["trials"][0]
  assert t["found"] and -1e9 < t["r2_test"] <= 1 and t["complexity"] >= 1
  assert set(t["symbolic_solution"]) == {"solution", "reason", "difference", "ratio"}
  # which model answered (another checkpoint's output looked the same as the shipped one's)
  from lee_jax import checkpoints
  assert t["model"] == checkpoints.model_label(ckpt) and "(tiny" in t["model"]
  assert f"model: {t['model']}\n" in r.stdout
  assert checkpoints.model_label(None).startswith("shipped small ")
  assert {"fit", "decode", "score"} <= set(t["timings_s"]) and "failures" in t
  assert "separable" in t["timings_s"] and "power" not in t["timings_s"]  # --nopower_seeds
  assert "power_sum" not in t["timings_s"]
  assert "factor" not in t["timings_s"]  # --nofactor_seeds
  assert "composite" not in t["timings_s"]  # --nocomposite_seeds
  assert "transform" not in t["timings_s"]  # --notransform_seeds
  assert "wave" not in t["timings_s"]  # --nowave_seeds
  assert "long" not in t["timings_s"]  # --long_terms=0
  assert "parsimony" not in t["timings_s"] and "as_found" not in t  # --noparsimony
  assert "final_refit" not in t["timings_s"] and "before_refit" not in t  # --nofinal_refit
  # The result draws again from its --out file alone: the rows reloaded and split as the run
  # did, the answer at full precision (the prefix holds 3 digits)
  from lee_jax import expr as E
  from lee_jax import plot_result
  from lee_jax import sympy_form
  assert res["input"] == {"dataset": "strogatz_shearflow1", "data_dir": None,
                          "select_k_best": None}
  node = E.with_constants(E.from_prefix(t["prefix"].split()), t["constants"])
  assert str(sympy_form.sympy_of(node, ["x", "y"])) == t["expression"]
  drawn = plot_result.redraw(out, tmp_path / "again.png")
  assert [p.name for p in drawn] == ["again_trial1.png", "again_trial2.png"]
  assert all(p.read_bytes()[:4] == b"\x89PNG" for p in drawn)
  with pytest.raises(plot_result.PlotError, match="again_trial1.png exists; pass --overwrite"):
    plot_result.redraw(out, tmp_path / "again.png")
  # An existing result is never overwritten by accident.
  again = _infer("--dataset", "strogatz_shearflow1", "--checkpoint", ckpt, "--out", str(out))
  assert again.returncode == 2 and "--overwrite" in again.stderr
  assert json.loads(out.read_text()) == res


@pytest.mark.parametrize("args,needle", [
    (["--checkpoint", "/nonexistent/dir"], "no checkpoint directory"),
    (["--preset", "huge"], "preset"),
    (["--mode", "beam"], "mode"),
    (["--rounds", "0"], "rounds must be >= 1"),
    (["--latent_noise", "-1"], "latent_noise must be >= 0"),
    (["--sep_terms", "-1"], "sep_terms must be >= 0"),
    (["--max_time", "0"], "max_time must be > 0"),
    (["--overlap", "--simplify_helpers", "0"], "overlap needs simplify_helpers"),
    (["--plot", "fit.jpg"], "plot format"),
    (["--plot", "/nonexistent/fit.png"], "does not exist"),
    (["--noise", "nan"], "--noise must be a finite level >= 0"),
    (["--noise", "inf"], "--noise must be a finite level >= 0"),
    (["--noise=-1"], "--noise must be a finite level >= 0"),
    (["--out", "same.svg", "--plot", "same.svg"], "--out and --plot name the same file"),
    (["--out", "/"], "is a directory, not a file"),
    (["--seed", "4294967000", "--trials", "2"], "--seed + 1000 * (--trials - 1)"),
])
def test_bad_search_flags_are_one_line_and_exit_2(args, needle):
  r = _infer("--dataset", "strogatz_lv1", *args)
  assert r.returncode == 2, r.stderr
  assert r.stderr.count("\n") == 1 and needle in r.stderr and "Traceback" not in r.stderr


def test_outputs_never_take_the_place_of_the_input_or_an_unwritten_name(tmp_path):
  table = _table(tmp_path, ["a", "target"], [[i, 2 * i] for i in range(20)])
  r = _infer("--data", table, "--out", table, "--overwrite")
  assert r.returncode == 2 and "--data and --out name the same file" in r.stderr
  # several trials write fit_trial1.png, ...: an existing fit.png is no reason to refuse
  (tmp_path / "fit.png").write_bytes(b"keep")
  r = _infer("--data", table, "--trials", "2", "--plot", str(tmp_path / "fit.png"),
             "--checkpoint", "/nonexistent/dir")  # past the output checks, then stops
  assert r.returncode == 2 and "no checkpoint directory" in r.stderr, r.stderr
  assert (tmp_path / "fit.png").read_bytes() == b"keep"


def test_a_fit_backend_this_machine_lacks_is_one_line_and_exit_2(monkeypatch):
  monkeypatch.setenv("LEE_JAX_FIT_BACKEND", "gpu")  # this CPU-only JAX has no GPU
  r = _infer("--dataset", "strogatz_lv1", "--fitter", "jax")
  assert r.returncode == 2, r.stderr
  assert r.stderr.count("\n") == 1 and "backend 'gpu' is not available" in r.stderr


def _table(tmp_path, header, rows):
  p = tmp_path / "t.csv"
  p.write_text(",".join(header) + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows))
  return str(p)


@pytest.mark.parametrize("header,rows,extra,needle", [
    (["a", "y"], [[i, "nan" if i == 2 else i] for i in range(20)], [], "NaN or inf"),
    (["a", "y"], [[i, "inf" if i == 2 else i] for i in range(20)], [], "NaN or inf"),
    (["a", "y"], [[i, 3] for i in range(20)], [], "target is constant"),
    (["a", "y"], [[i, i] for i in range(6)], [], "at least 10"),
    ([f"f{i}" for i in range(12)] + ["y"], [list(range(i, i + 13)) for i in range(20)], [], "--features"),
    (["a", "b", "y"], [[i, "x" if i == 5 else i, i] for i in range(20)], [], "not numeric"),
    (["a", "b", "y"], [[i, "" if i == 5 else i, i] for i in range(20)], [], "NaN or inf"),
    (["a", "a", "y"], [[i, i, i] for i in range(20)], [], "duplicate column"),
    (["a", "y"], [[i, f"{i + 1}e300"] for i in range(20)], [], "rescale"),
    (["a", "y"], [[i, i] for i in range(20)], ["--target", "out"], "no target column 'out'"),
    (["a", "y"], [[i, i] for i in range(20)], ["--features", "a,zz"], "unknown feature column"),
])
def test_messy_tables_are_one_line_errors(tmp_path, header, rows, extra, needle):
  target = [] if "--target" in extra else ["--target", "y"]
  r = _infer("--data", _table(tmp_path, header, rows), *target, *extra)
  assert r.returncode == 2, r.stdout + r.stderr
  assert r.stderr.count("\n") == 1 and needle in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow
def test_integer_and_bool_columns_are_read_as_numbers(tmp_path):
  rows = [[i, "true" if i % 2 else "false", 3 * i] for i in range(20)]
  r = _infer("--data", _table(tmp_path, ["n", "flag", "y"], rows), "--target", "y", *SHORT)
  assert r.returncode == 0, r.stderr
  assert "flag" in r.stdout and "train 12, val 3, test 5 rows" in r.stdout


def test_the_printout_names_a_long_sum_answer_and_what_the_parsimony_step_started_from():
  # A long sum answers with no round (winner_round None): the printout once added 1 to it.
  # (In a child process: lee_jax.infer defines absl flags that other tests' modules share.)
  import json
  rep = {"found": True, "timed_out": False, "expression": "x0 + x1", "latex": "x_0 + x_1",
         "r2_train": 0.99, "r2_val": 0.98, "r2_test": 0.97, "complexity": 3,
         "wall_time_s": 1.0, "winner_round": None, "candidates": 10, "equations": [],
         "as_found": {"expression": "1.01*x0 + x1", "r2_val": 0.981, "complexity": 5},
         "before_refit": {"expression": "0.998*x0 + x1", "r2_val": 0.98, "complexity": 3}}
  plain = {k: v for k, v in rep.items() if k not in ("as_found", "before_refit")} | {"winner_round": 1}
  weighted = plain | {"weights": "w"}  # (--weights w: every R2 is weighted)
  code = ("import json, sys\nfrom lee_jax import infer\n"
          "for rep in json.loads(sys.argv[1]):\n  infer.print_trial(rep, ['x0', 'x1'])\n  print('--')")
  r = subprocess.run([sys.executable, "-c", code, json.dumps([rep, plain, weighted])],
                     capture_output=True, text=True, timeout=120)
  assert r.returncode == 0, r.stderr
  first, second, third = r.stdout.split("--")[:3]
  assert "(the long sum, 10 candidates)" in first
  assert "as found: 1.01*x0 + x1  (val 0.981000, complexity 5)" in first
  assert ("constants refitted on the training and validation rows; on the training rows "
          "alone: 0.998*x0 + x1") in first
  assert "(round 2, 10 candidates)" in second and "as found" not in second
  assert "refitted" not in second
  assert "\nR2 train 0.990000" in second and "weighted" not in second
  assert "\nweighted by w: R2 train 0.990000  val 0.980000  test 0.970000" in third


def test_an_r2_the_report_cannot_hold_prints_as_na_and_the_result_is_written_first(tmp_path):
  # 98 of 100 targets are 0: the 25 test rows are all 0, R2 there is -inf (None in the
  # report), and printing it raised a TypeError before the --out file was written. A file the
  # user kept under the name the write once used for its temporary copy stays.
  import json
  import numpy as np
  X = np.random.default_rng(0).uniform(1, 3, (100, 2))
  y = np.zeros(100)
  y[:2] = [1.0, 2.0]
  path = _table(tmp_path, ["a", "b", "target"], [[a, b, t] for (a, b), t in zip(X, y)])
  out = tmp_path / "r.json"
  (tmp_path / "r.json.tmp").write_text("keep")
  r = _infer("--data", path, "--rounds", "1", "--iters", "2", "--quiet", "--out", str(out))
  assert r.returncode == 0, r.stderr
  assert re.search(r"R2 train \S+  val \S+  test n/a  complexity", r.stdout), r.stdout
  run = json.loads(out.read_text())
  assert run["trials"][0]["r2_test"] is None
  from lee_jax import datasets
  assert run["rows_sha256"] == datasets.fingerprint(datasets.load_input(**run["input"]))
  assert (tmp_path / "r.json.tmp").read_text() == "keep"
  assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "r.json.tmp", "t.csv"]


def test_a_user_table_prints_its_target_by_name_words_upright_and_the_time_limit(tmp_path):
  # (the shipped model, 2 rounds cut after round 1's initial pool: a few seconds)
  import numpy as np
  rng = np.random.default_rng(0)
  m, v = rng.uniform(1, 5, 40), rng.uniform(1, 5, 40)
  path = _table(tmp_path, ["mass", "velocity", "power W"],
                [[a, b, 0.5 * a * b * b] for a, b in zip(m, v)])
  r = _infer("--data", path, "--target", "power W", "--rounds", "2", "--iters", "5",
             "--max_time", "0.001")
  assert r.returncode == 0, r.stderr
  rows = r.stdout.splitlines()
  assert any(line.split()[:2] == ["power", "W"] for line in rows)  # the target's row, named
  assert not any(line.startswith(("target ", "formula:")) for line in rows)  # no "formula: -"
  latex = next(line for line in rows if line.startswith("latex: "))
  best = next(line for line in rows if line.startswith("best expression: "))
  assert "mass" in best and r"\mathrm{mass}" in latex, latex  # a word, not m a s s in italics
  assert re.search(r"(?<!\\mathrm\{)(mass|velocity)", latex) is None, latex
  # the progress display says that the limit stopped the search (stderr, once)
  assert r.stderr.count("time limit (0.001 s) reached: answering from what the search has "
                        "found\n") == 1, r.stderr

