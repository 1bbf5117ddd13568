"""experiments/parsimony_replay.py: the parsimony step applied to a finished sweep."""

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "experiments"))
import parsimony_replay  # noqa: E402

from lee_jax import expr as E  # noqa: E402


def _cell(prefix, expression, complexity, **search):
  # Feynman II.27.18 (epsilon Ef^2) at eps 0.1, as a sweep without the step recorded it
  return {"dataset": "feynman_II_27_18", "noise": 0.1, "trial": 0, "seed": 0, "found": True,
          "search": {"alpha": 0.002, "probe_points": 1024, **search}, "prefix": prefix,
          "expression": expression, "complexity": complexity, "r2_train": 0.97, "r2_val": 0.975,
          "r2_test": 0.9999, "origin": "power"}


def test_a_noisy_factor_is_fixed_and_the_law_stays():
  noisy = _cell("mul + 1 . 0 2 e + 0 0 mul x0 sq x1", "1.02*Ef**2*epsilon", 6)
  out = parsimony_replay.replay(noisy)
  assert out["expression"] == "Ef**2*epsilon" and out["complexity"] == 5
  assert out["as_found"]["expression"] == "1.02*Ef**2*epsilon" and out["as_found"]["complexity"] == 6
  assert out["r2_test"] > 0.9999 and out["r2_val"] < 1
  # a law already in its simplest form, and a cell the step already ran on, stay as recorded
  law = _cell("mul x0 sq x1", "Ef**2*epsilon", 5)
  assert parsimony_replay.replay(law) is law
  ran = dict(noisy, search=dict(noisy["search"], parsimony=True))
  assert parsimony_replay.replay(ran) is ran
  # --again: the step on it all the same; the search's answer stays the one it recorded
  ran["as_found"] = {"expression": "found", "complexity": 9}
  again = parsimony_replay.replay(ran, again=True)
  assert again["complexity"] == 5 and again["as_found"] == {"expression": "found", "complexity": 9}
  # a long sums replay's answer without a prefix (an old record's rounds' answer) stays
  bare = {k: v for k, v in noisy.items() if k != "prefix"}
  assert parsimony_replay.replay(bare, again=True) is bare


def test_the_final_refit_fits_the_answer_on_both_folds_from_its_own_constants():
  # II.27.18 at eps 0.1 as a sweep without the refit recorded it: c Ef^2 epsilon
  cell = _cell("mul + 1 . 0 2 e + 0 0 mul x0 sq x1", "1.02*Ef**2*epsilon", 6)
  ds, p, data = parsimony_replay._folds(cell)
  X = np.concatenate([data.X_train, data.X_val])
  y = np.concatenate([data.y_train, data.y_val])
  u = X[:, 0] * X[:, 1] ** 2
  both = float(u @ y / (u @ u))  # least squares on both folds
  train = float(u[:len(data.y_train)] @ data.y_train / (u[:len(data.y_train)] @ u[:len(data.y_train)]))
  out = parsimony_replay.refit(dict(cell, constants=[1.0204]))
  assert out["constants"] == pytest.approx([both], rel=1e-6) and both != pytest.approx(train, rel=1e-6)
  assert out["before_refit"]["prefix"] == cell["prefix"] and out["r2_val"] == cell["r2_val"]
  assert out["complexity"] == 6 and out["r2_test"] != cell["r2_test"]
  # constants that are not the prefix's (a replay's stale ones): fitted from the prefix
  assert parsimony_replay.refit(dict(cell, constants=[3.0]))["constants"] == pytest.approx([both], rel=1e-6)
  # a prefix's whole constant is held there as the step holds one: nothing left to refit
  whole = dict(cell, prefix="mul + 2 . 0 0 e + 0 0 mul x0 sq x1", constants=None)
  assert parsimony_replay.refit(whole) is whole
  # a cell refitted already stays; a parsimony replay that changes its answer (here to
  # Ef^2 epsilon) drops the stale start, so a refit replay after it starts from the new one
  assert parsimony_replay.refit(out) is out
  again = parsimony_replay.replay(dict(out, search=dict(out["search"], parsimony=True)), again=True)
  assert again["expression"] == "Ef**2*epsilon" and "before_refit" not in again


def test_the_rewrite_writes_the_answer_shorter_from_what_was_printed():
  # Feynman I.47.23, sqrt(gamma pr / rho), as the search wrote it (10 nodes for 8)
  cell = dict(_cell("div mul sqrt x0 sqrt x1 sqrt x2", "sqrt(gamma_)*sqrt(pr)/sqrt(rho)", 10),
              dataset="feynman_I_47_23", noise=0.0, r2_test=1.0)
  out = parsimony_replay.rewritten(cell)
  assert out["expression"] == "sqrt(gamma_*pr/rho)" and out["complexity"] == 8
  assert out["rewritten_from"]["complexity"] == 10 and out["r2_test"] == pytest.approx(1.0)
  assert out["r2_val"] == cell["r2_val"] and parsimony_replay.rewritten(out) is out
  # a record without its constants starts from the printed ones where SymPy counts them as
  # recorded: a noisy 1.002 stays fitted, where the prefix's 1.00 reads as a law's 1
  noisy = _cell("mul + 1 . 0 0 e + 0 0 mul x0 sq x1", "1.002*Ef**2*epsilon", 6)
  ds, _, data = parsimony_replay._folds(noisy)
  held = parsimony_replay._answer(noisy, data)[0].node
  printed = parsimony_replay._answer(noisy, data, E.formula_names(ds.feature_names))[0].node
  assert E.constants(held) == [1.0] and E.constants(printed) != [1.0]
  assert E.constants(printed) == pytest.approx([1.0], abs=0.05)


def test_cli_prints_both_and_writes_the_replayed_cells(tmp_path):
  src = tmp_path / "results.jsonl"
  src.write_text(json.dumps(_cell("mul + 1 . 0 2 e + 0 0 mul x0 sq x1", "1.02*Ef**2*epsilon", 6)) + "\n")
  out = tmp_path / "replayed.jsonl"
  run = lambda: subprocess.run([sys.executable, str(REPO / "experiments" / "parsimony_replay.py"),
                                str(src), f"--out={out}"],
                               capture_output=True, text=True, cwd=REPO, timeout=300)
  r = run()
  assert r.returncode == 0, r.stderr
  assert "1 cells, 1 answers changed" in r.stdout and "complexity 6.00" in r.stdout
  assert "complexity 5.00" in r.stdout
  assert json.loads(out.read_text())["complexity"] == 5
  again = run()  # an existing --out is never replaced
  assert again.returncode != 0 and "exists" in again.stderr and again.stderr.count("\n") == 1


def test_cli_refuses_a_record_it_cannot_replay_and_an_out_it_cannot_write(tmp_path):
  src = tmp_path / "results.jsonl"
  src.write_text(json.dumps({"dataset": "strogatz_lv1", "noise": 0.0, "trial": 0}) + "\n")
  run = lambda *a: subprocess.run([sys.executable, str(REPO / "experiments" / "parsimony_replay.py"),
                                   str(src), *a], capture_output=True, text=True, cwd=REPO,
                                  timeout=300)
  r = run()  # once a KeyError traceback
  assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
  assert "cell 'strogatz_lv1' (noise 0.0, trial 0) is not a record srbench.py writes" in r.stderr
  r = run("--rewrite", "--final_refit")
  assert r.returncode == 2 and "pass one" in r.stderr and r.stderr.count("\n") == 1
  r = run(f"--out={tmp_path / 'no' / 'x.jsonl'}")  # checked before the replay, not after it
  assert r.returncode == 2 and "directory" in r.stderr and "does not exist" in r.stderr
  src.write_text("")
  r = run()
  assert r.returncode == 2 and "holds no cells" in r.stderr
