import dataclasses

import helpers
import numpy as np
import pytest

from lee_jax import complexity
from lee_jax import evaluate
from lee_jax import expr as E
from lee_jax import final_refit
from lee_jax import fit
from lee_jax import parsimony
from lee_jax import pool as pool_lib
from lee_jax import score
from lee_jax import search


def _line_data(rows=40, seed=0, weights=False):
  """y = 2 x0 + 1 with noise, split 30 / 10: the training fold alone gives other constants."""
  rng = np.random.default_rng(seed)
  X = rng.uniform(-3, 3, (rows, 1))
  y = 2.0 * X[:, 0] + 1.0 + rng.normal(0, 1.0, rows)
  w = rng.uniform(0.5, 2.0, rows) if weights else None
  n = 3 * rows // 4
  return search.SearchData(X[:n], y[:n], X[n:], y[n:],
                           None if w is None else w[:n], None if w is None else w[n:])


def _answer(data, text="1.3*x0 + 0.7"):
  node = E.from_sympy(E.parse_formula(text, ["x0"]))
  node = fit.fit_constants(node, data.X_train, data.y_train, 200).node  # the training fold's fit
  return pool_lib.Candidate(node, *score.ids_and_consts(node, None), 0.8, 0.75,
                            complexity.complexity(node), 0.0, "poly")


def _lstsq(X, y, w=None):
  A = np.c_[X[:, 0], np.ones(len(y))]
  s = np.ones(len(y)) if w is None else np.sqrt(w)
  return np.linalg.lstsq(A * s[:, None], y * s, rcond=None)[0]


def test_the_constants_are_the_fit_on_every_training_and_validation_row():
  data = _line_data()
  c = _answer(data)
  out, n = final_refit.refit(c, data, 0.002, seed=0)
  X, y, _ = final_refit.every_row(data)
  slope, icpt = _lstsq(X, y)
  got = sorted(E.constants(out.node))
  assert n == 40 and got == pytest.approx(sorted([slope, icpt]), rel=1e-6)
  # not the training fold's fit it started from
  assert sorted(E.constants(c.node)) != pytest.approx(got, rel=1e-3)
  # the form, its size, origin and the held-out validation R2 that chose it stay
  assert out.complexity == c.complexity and out.origin == "poly" and out.r2_val == 0.75
  rt = score.r2(data.y_train, evaluate.evaluate_numpy(out.node, data.X_train))
  assert out.r2_train == pytest.approx(rt) and out.score == pytest.approx(rt - 0.002 * out.complexity)


def test_weights_count_on_both_folds():
  data = _line_data(weights=True)
  out, _ = final_refit.refit(_answer(data), data, 0.002, seed=0)
  X, y, w = final_refit.every_row(data)
  assert len(w) == 40 and w[-1] == data.w_val[-1]
  assert sorted(E.constants(out.node)) == pytest.approx(sorted(_lstsq(X, y, w)), rel=1e-6)
  # a fold without weights counts each of its rows once
  half = dataclasses.replace(data, w_val=None)
  assert np.array_equal(final_refit.every_row(half)[2][30:], np.ones(10))


def test_fixed_constants_stay_and_a_formula_without_free_ones_is_kept():
  data = _line_data()
  node = E.from_sympy(E.parse_formula("2*x0 + 0.9", ["x0"]))  # the 2 fixed (parsimony's)
  c = pool_lib.Candidate(node, *score.ids_and_consts(node, None), 0.8, 0.75,
                         complexity.complexity(node), 0.0, "poly")
  out, _ = final_refit.refit(c, data, 0.002, seed=0)
  assert 2.0 in E.constants(out.node) and 0.9 not in E.constants(out.node)
  bare = _answer(data, "x0")
  assert final_refit.refit(bare, data, 0.002, seed=0)[0] is bare


def test_a_refit_that_fails_the_pole_probe_or_the_fit_is_not_taken():
  data = _line_data()
  c = _answer(data)
  assert final_refit.refit(c, data, 0.002, seed=0, bounded=lambda t: False)[0] is c
  assert final_refit.refit(c, data, 0.002, seed=0, bounded=lambda t: True)[0] is not c
  # a form that is not finite on a validation row (log of a negative x0 there)
  pos = dataclasses.replace(data, X_train=np.abs(data.X_train) + 0.1, X_val=-np.abs(data.X_val))
  logc = _answer(pos, "1.5*log(x0) + 0.2")
  assert final_refit.refit(logc, pos, 0.002, seed=0)[0] is logc


def test_the_rows_are_a_capped_draw_and_every_row_must_stay_finite(monkeypatch):
  monkeypatch.setattr(final_refit, "MAX_ROWS", 30)
  data = _line_data()
  out, n = final_refit.refit(_answer(data), data, 0.002, seed=0)
  X, y, _ = final_refit.every_row(data)
  Xr, yr, _ = parsimony.rows(X, y, None, 0, 30)
  assert n == 30 and sorted(E.constants(out.node)) == pytest.approx(sorted(_lstsq(Xr, yr)), rel=1e-6)
  # a row outside the draw where the refitted formula is not finite: not taken
  left_out = sorted(set(range(40)) - set(np.random.default_rng([0, 11]).choice(40, 30, replace=False)))[0]
  pos = dataclasses.replace(data, X_train=np.abs(data.X_train) + 0.1, X_val=np.abs(data.X_val) + 0.1)
  logc = _answer(pos, "1.5*log(x0) + 0.2")
  Xp = np.concatenate([pos.X_train, pos.X_val])
  Xp[left_out] = -1.0
  bad = dataclasses.replace(pos, X_train=Xp[:30], X_val=Xp[30:])
  assert final_refit.refit(logc, bad, 0.002, seed=0)[0] is logc
  assert final_refit.refit(logc, pos, 0.002, seed=0)[0] is not logc


def test_a_refit_that_parts_two_equal_constants_is_not_taken():
  # 2.5 x0 - 2.5 x1 is 2.5 (x0 - x1) in SymPy's count; a refit to 2.6 and 2.4 is longer
  rng = np.random.default_rng(3)
  X = rng.uniform(1, 3, (40, 2))
  y = 2.6 * X[:, 0] - 2.4 * X[:, 1]
  data = search.SearchData(X[:30], y[:30], X[30:], y[30:])
  node = E.op("sub", E.op("mul", E.const(2.5), E.var(0)), E.op("mul", E.const(2.5), E.var(1)))
  c = pool_lib.Candidate(node, *score.ids_and_consts(node, None), 0.9, 0.9,
                         complexity.complexity(node), 0.0, "init")
  assert final_refit.refit(c, data, 0.002, seed=0)[0] is c


def test_the_trial_refits_the_parsimony_steps_answer_with_its_pole_probe(monkeypatch):
  # the steps' order and arguments (the steps themselves have their own tests): the refit
  # starts from what the parsimony step gave, and is given the trial's pole probe
  from lee_jax import engine as engine_lib
  from lee_jax import trial
  data = _line_data(rows=200)
  simpler = _answer(data)
  seen = {}
  monkeypatch.setattr(parsimony, "answer", lambda c, *a: simpler)
  real = final_refit.refit
  monkeypatch.setattr(final_refit, "refit",
                      lambda c, d, alpha, seed, bounded: seen.update(c=c, bounded=bounded)
                      or real(c, d, alpha, seed, bounded))
  cfg = dataclasses.replace(helpers.SMALL_SEARCH, iterations=5, long_terms=0)
  res = trial.run_trial(engine_lib.Engine(helpers.tiny_model()), data, cfg, "iterative", seed=0)
  assert seen["c"] is simpler and res.before_refit is simpler and res.as_found is not None
  assert callable(seen["bounded"]) and seen["bounded"](simpler.node)
  assert E.constants(res.winner.node) != E.constants(simpler.node)


def test_the_trial_reports_the_refitted_answer_and_the_held_out_validation_r2():
  from lee_jax import engine as engine_lib
  from lee_jax import trial
  rng = np.random.default_rng(2)
  X = rng.uniform(1, 5, (200, 2))
  y = 3.0 * X[:, 0] + X[:, 1] + rng.normal(0, 0.5, 200)
  data = search.SearchData(X[:120], y[:120], X[120:150], y[120:150])
  cfg = dataclasses.replace(helpers.SMALL_SEARCH, iterations=5, parsimony=False)
  eng = engine_lib.Engine(helpers.tiny_model())
  res = trial.run_trial(eng, data, cfg, "iterative", seed=0)
  b = res.before_refit
  assert b is not None and E.to_prefix(b.node) != E.to_prefix(res.winner.node)
  assert E.constants(res.winner.node) != E.constants(b.node)
  rep = trial.report(res, X[150:], y[150:], data, ["a", "b"])
  assert "final_refit" in rep["timings_s"] and rep["before_refit"]["complexity"] == rep["complexity"]
  held_out = score.r2(data.y_val, evaluate.evaluate_numpy(b.node, data.X_val))
  assert rep["r2_val"] == pytest.approx(held_out)
  assert rep["constants"] == pytest.approx([float(v) for v in E.constants(res.winner.node)])
  off = trial.run_trial(eng, data, dataclasses.replace(cfg, final_refit=False), "iterative", seed=0)
  assert off.before_refit is None and "before_refit" not in trial.report(off, X, y, data, ["a", "b"])
  assert E.to_prefix(off.winner.node) == E.to_prefix(b.node)
