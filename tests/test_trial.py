"""Tests for lee_jax.trial's printing: the LaTeX of an answer over the columns' names."""

import numpy as np
import sympy

from lee_jax import expr as E
from lee_jax import pool as pool_lib
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
                      ("mass2", r"\mathrm{mass}_{2}"), ("power_W", r"\mathrm{power}_{W}")]:
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
  assert rep["latex"] == r"0.5 \mathrm{mass} \mathrm{velocity}^{2}"  # was 0.5 mass velocity^{2}
  assert rep["expression"] == "0.5*mass*velocity**2"  # the plain form is as before
