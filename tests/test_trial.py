"""Tests for lee_jax.trial's printing: the LaTeX of an answer over the columns' names."""

import numpy as np
import pytest
import sympy

from lee_jax import expr as E
from lee_jax import pool as pool_lib
from lee_jax import score
from lee_jax import search
from lee_jax import trial


def _sym(name):
  return sympy.Symbol(name, real=True)


def test_latex_sets_a_word_upright_and_leaves_what_sympy_renders_specially():
  mass, velocity = _sym("mass"), _sym("velocity")
  assert trial.latex_of(sympy.Float(0.5, 4) * mass * velocity**2) == (
      r"0.5 \mathrm{mass} \mathrm{velocity}^{2}")
  # Greek, single letters and their subscripts: as SymPy writes them
  for name, shown in [("lambda", r"\lambda"), ("theta", r"\theta"), ("omega_0", r"\omega_{0}"),
                      ("x", "x"), ("x_1", "x_{1}"), ("x0", "x_{0}"), ("v_max", "v_{max}"),
                      ("xdot", r"\dot{x}"),
                      # a word keeps its subscript
                      ("mass2", r"\mathrm{mass}_{2}"), ("power_W", r"\mathrm{power}_{W}"),
                      # formula_names' trailing "_" (beta_ was \beta_{}): the column's name
                      ("beta_", r"\beta"), ("lambda_", r"\lambda"), ("E_", "E"),
                      ("id_", r"\mathrm{id}")]:
    assert trial.latex_of(2 * _sym(name)) == f"2 {shown}", name
  assert trial.latex_of(sympy.Integer(3)) == "3"


def test_the_report_latex_reads_multi_letter_columns_as_words():
  node = E.from_sympy(sympy.Rational(1, 2) * _sym("x0") * _sym("x1") ** 2, ["x0", "x1"])
  rng = np.random.default_rng(0)
  X = rng.uniform(1, 2, (40, 2))
  y = 0.5 * X[:, 0] * X[:, 1] ** 2
  data = search.SearchData(X[:30], y[:30], X[30:], y[30:])
  best = pool_lib.Candidate(node, np.zeros(1, np.int32), np.zeros(1), 1.0, 1.0, 7, 1.0, "init")
  res = trial.TrialResult(best, 0, [], 0.0)
  rep = trial.report(res, X, y, data, ["mass", "velocity"])
  # (was 0.5 mass velocity^{2}: the words in italics; the half is written as one)
  assert rep["latex"] == r"\frac{\mathrm{mass} \mathrm{velocity}^{2}}{2}"
  assert rep["expression"] == "mass*velocity**2/2"


def test_pysr_columns_are_the_validation_mse_and_its_log_drop_per_node():
  rng = np.random.default_rng(1)
  y = rng.normal(2.0, 3.0, 50)
  preds = [np.full(50, y.mean()), y + rng.normal(0, 1, 50), y + rng.normal(0, 0.1, 50), y]
  r2s = [score.r2(y, p) for p in preds]
  rows = trial.pysr_columns(r2s, [1, 3, 7, 8], y)
  for (loss, _), p in zip(rows, preds):
    assert loss == pytest.approx(np.mean((p - y) ** 2), rel=1e-9, abs=1e-12)
  assert rows[0][1] == 0.0
  assert rows[2][1] == pytest.approx(-(np.log(rows[2][0]) - np.log(rows[1][0])) / 4)
  assert rows[3][0] == 0.0 and np.isfinite(rows[3][1]) and rows[3][1] > 0  # an exact fit
  w = rng.uniform(0.5, 2, 50)  # weighted as the R2 is
  loss = trial.pysr_columns([score.r2(y, preds[1], w)], [3], y, w)[0][0]
  assert loss == pytest.approx(np.sum(w * (preds[1] - y) ** 2) / np.sum(w))
