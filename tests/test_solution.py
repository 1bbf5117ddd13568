"""lee_jax/solution.py: SRBench's symbolic-solution check."""

import time

import pytest
import sympy

from lee_jax import expr as E
from lee_jax import isolated
from lee_jax import solution


def _law(text, names):
  return solution.law(text, names)


def _found(text, names):
  return sympy.sympify(text, locals={n: sympy.Symbol(n) for n in names})


COULOMB = ["q1", "q2", "epsilon", "r"]


def test_floats_round_to_three_decimals_and_tiny_ones_to_zero():
  x = sympy.Symbol("x")
  r = solution.round_floats(sympy.Float(0.0795775) * x + sympy.Float(5e-5))
  # (SymPy's round keeps about as many digits of precision as it rounds to: 0.080 is
  # 0.07996 in binary, as in SRBench, which rounds both sides alike)
  assert r.as_coeff_Add()[0] == 0 and float(r.coeff(x)) == pytest.approx(0.08, abs=1e-4)
  six = solution.round_floats(sympy.Float(2.0004) * x, digits=6).coeff(x)
  assert float(six) == pytest.approx(2.0004, abs=1e-6)
  assert float(solution.round_floats(sympy.Float(2.0004) * x).coeff(x)) == pytest.approx(2.0, abs=1e-4)
  assert solution.round_floats(sympy.Float(5e-5) * x, floor=None) == 0  # 0.0 at 3 decimals
  assert solution.round_floats(x + 1) == x + 1  # nothing to round


def test_a_law_reads_pi_as_srbench_writes_it():
  law = _law("q1*q2*r/(4*pi*epsilon*r**3)", COULOMB)
  assert not law.has(sympy.pi)  # 3.1415926535, a float the rounding reaches
  assert law.free_symbols == {sympy.Symbol(n) for n in COULOMB}  # plain symbols
  assert abs(float(law.subs({s: 1 for s in law.free_symbols})) - 1 / (4 * 3.1415926535)) < 1e-12


@pytest.mark.parametrize("found,reason", [
    ("0.0795774715459*q1*q2/(epsilon*r**2)", "difference 0"),  # the law, its constant fitted
    ("0.07959*q1*q2/(epsilon*r**2) + 3.2", "constant difference"),  # an offset
    ("0.0812*q1*q2/(epsilon*r**2)", "constant ratio"),  # a constant off by 2%
])
def test_the_law_up_to_one_constant_is_a_solution(found, reason):
  v = solution.check(_found(found, COULOMB), _law("q1*q2*r/(4*pi*epsilon*r**3)", COULOMB))
  assert v.solution and v.reason == reason


@pytest.mark.parametrize("found", [
    "0.0796*q1*q2/(epsilon*r**2) + 0.01*q1",  # a term the law does not have
    "0.0796*q1*q2/(epsilon*r)",  # another power
    "0.0796*q1*q2/(epsilon*r**2) + 0.5*q1*q2/(epsilon*r**2)**2",
])
def test_another_formula_is_not(found):
  v = solution.check(_found(found, COULOMB), _law("q1*q2*r/(4*pi*epsilon*r**3)", COULOMB))
  assert not v.solution and v.reason == "not constant"


def test_two_constants_off_are_not_a_solution_but_within_the_rounding_are():
  names = ["m", "u", "v"]
  law = _law("1/2*m*(v**2+u**2)", names)
  # each constant within 5e-4 of the law's rounds onto it
  assert solution.check(_found("0.5002*m*(0.9996*u**2 + v**2)", names), law).solution
  # two constants apart: neither the difference nor the ratio is constant
  assert not solution.check(_found("0.52*m*(0.97*u**2 + v**2)", names), law).solution


def test_only_answers_with_test_r2_above_a_half_are_checked():
  law = _law("x*y", ["x", "y"])
  assert solution.check(_found("x*y", ["x", "y"]), law, r2_test=0.6).solution
  v = solution.check(_found("x*y", ["x", "y"]), law, r2_test=0.5)
  assert not v.solution and v.reason == "test R2 <= 0.5"
  assert not solution.check(_found("x*y", ["x", "y"]), law, r2_test=float("nan")).solution


def test_sympy_running_over_is_no_solution(monkeypatch):
  def spin(*args):
    end = time.thread_time() + 30
    while time.thread_time() < end:
      pass

  monkeypatch.setattr(solution, "_check", spin)
  monkeypatch.setattr(isolated, "ENABLED", False)  # the patch is in this process only
  t0 = time.monotonic()
  v = solution.check(_found("x", ["x"]), _law("x", ["x"]), seconds=0.2)
  assert v == solution.Verdict(False, "timed out") and time.monotonic() - t0 < 5


def test_a_sympy_error_is_no_solution(monkeypatch):
  def fail(*args):
    raise ZeroDivisionError("in simplify")

  monkeypatch.setattr(solution, "_check", fail)
  monkeypatch.setattr(isolated, "ENABLED", False)  # the patch is in this process only
  v = solution.check(_found("x", ["x"]), _law("x", ["x"]))
  assert not v.solution and v.reason == "ZeroDivisionError: in simplify"


def test_sympys_random_points_are_seeded_and_the_callers_state_kept(monkeypatch):
  """is_constant tries random points: unseeded, the same check of the same answer took 185
  CPU s once and timed out the next time. Each check now draws the same points, and a
  caller's SymPy random state comes back as it was."""
  from sympy.core import random as sympy_random

  draws = []

  def draw(*args):
    draws.append((sympy_random.random(), sympy_random._assumptions_rng.random()))
    return solution.Verdict(True, "difference 0")

  monkeypatch.setattr(solution, "_check", draw)
  monkeypatch.setattr(isolated, "ENABLED", False)  # the patch is in this process only
  sympy_random.seed(123)
  mine = sympy_random.rng.getstate(), sympy_random._assumptions_rng.getstate()
  for _ in range(2):
    assert solution.check(_found("x", ["x"]), _law("x", ["x"])).solution
  assert draws[0] == draws[1]
  assert (sympy_random.rng.getstate(), sympy_random._assumptions_rng.getstate()) == mine


def _rep(node, names, **kw):
  return {"found": True, "prefix": " ".join(E.to_prefix(node)),
          "constants": [float(c) for c in E.constants(node)], "r2_test": 1.0, **kw}


def test_a_reports_answer_at_full_precision_and_an_older_record_from_its_print():
  names = ["beta", "alpha", "theta"]  # beta reads as a SymPy function unless declared
  law = "beta*(1+alpha*cos(theta))"
  # x0 * (1.0003 + x1 * cos(x2)): the prefix holds 1.00, the constants 1.0003
  node = E.op("mul", E.var(0), E.op("add", E.const(1.0003), E.op("mul", E.var(1), E.op("cos", E.var(2)))))
  rep = _rep(node, names)
  assert solution.answer(rep, names).free_symbols == {sympy.Symbol(n) for n in names}
  assert solution.of_report(rep, names, law)["reason"] == "constant difference"
  # a record older than the constants' field: its printed expression, in either spelling
  for printed in ("beta*(alpha*cos(theta) + 1.0003)", "beta_*(alpha*cos(theta) + 1.0003)"):
    old = {"found": True, "prefix": rep["prefix"], "expression": printed, "r2_test": 1.0}
    assert solution.answer(old, names) == solution.answer(rep, names)
    del old["prefix"]  # a replayed answer recorded without one
    assert solution.of_report(old, names, law)["reason"] == "constant difference"
  # no law (a user's table, a black-box set), no answer: nothing to check
  assert solution.of_report(rep, names, None) is None
  # ... and a cell that found nothing is no solution (SRBench counts a failed trial so)
  assert solution.of_report({"found": False}, names, law) == {
      "solution": False, "reason": "no answer", "difference": "", "ratio": ""}
  assert solution.of_report(dict(rep, r2_test=None), names, law)["reason"] == "test R2 <= 0.5"
  # a law that does not parse: no solution, said why (as SRBench counts it)
  v = solution.of_report(rep, names, "beta*(1+")
  assert not v["solution"] and "cannot parse the law" in v["reason"]


def test_a_report_over_a_shipped_law():
  from lee_jax import datasets
  ds = datasets.load_dataset("feynman_I_12_2")
  node = E.op("div", E.op("mul", E.const(0.0795774715459), E.op("mul", E.var(0), E.var(1))),
              E.op("mul", E.var(2), E.op("sq", E.var(3))))
  v = solution.of_report(_rep(node, ds.feature_names), ds.feature_names, ds.formula)
  # (the ratio is of the rounded answer, 0.080, to the law's 1/(4 pi): 1.005, constant too)
  assert v == {"solution": True, "reason": "difference 0", "difference": "0", "ratio": "1.005"}


def test_a_law_may_name_columns_as_formulas_print_them_and_no_others():
  names = ["a b", "x", "pipe"]  # "pi" inside a name stays the name
  law = solution.law("a_b*x + pi*pipe", names)  # ("a b" prints as a_b)
  assert law.free_symbols == {sympy.Symbol("a b"), sympy.Symbol("x"), sympy.Symbol("pipe")}
  with pytest.raises(ValueError, match="names y, which is no column"):
    solution.law("x + y", names)
  with pytest.raises(ValueError, match="cannot parse the law"):
    solution.law("x +", names)


def test_every_shipped_law_parses_over_its_own_columns():
  from lee_jax import datasets
  laws = [d for d in datasets.list_datasets() if d.formula]
  assert len(laws) == 119 + 14
  for d in laws:
    ds = datasets.load_dataset(d.name)
    law = solution.law(ds.formula, ds.feature_names)
    assert law.free_symbols <= {sympy.Symbol(n) for n in ds.feature_names}, d.name


@pytest.mark.parametrize("found,reason", [
    # every float under 1e-4: rounded all at once these were 0/0 and x/0, which SymPy calls
    # constant; one at a time, as SRBench rounds, each substitution evaluates first
    ("(0.00002*x + 0.00001)/(0.00002*y + 0.00003)", "not constant"),
    ("x/(0.00002*y + 0.00003)", "not constant"),
    ("0.00003*x", "0 or not finite once rounded"),  # a ratio of 0 is constant to SymPy
])
def test_a_model_the_rounding_empties_solves_nothing(found, reason):
  v = solution.check(_found(found, ["x", "y"]), _law("x*y + sin(x)", ["x", "y"]))
  assert not v.solution and v.reason == reason


# SymPy's construction-time evaluation of this tree runs for minutes (tests/test_complexity.py)
SLOW = ("mul div mul x1 sq x1 neg mul x0 sub x1 C tanh tanh cube tanh tanh tanh tanh cube tanh "
        "cube tanh tanh log tanh cube tanh cube x0")


def test_building_the_answer_is_under_the_guard_and_after_the_r2_gate():
  node = E.with_constants(E.from_prefix(SLOW.split()), [1.2])
  rep = _rep(node, ["q1", "q2"], r2_test=0.1)
  t0 = time.monotonic()
  assert solution.of_report(rep, ["q1", "q2"], "q1*q2")["reason"] == "test R2 <= 0.5"
  assert time.monotonic() - t0 < 1  # gated before anything is built
  v = solution.of_report(dict(rep, r2_test=0.9), ["q1", "q2"], "q1*q2", seconds=0.5)
  assert v["reason"] == "timed out" and time.monotonic() - t0 < 10


def test_a_law_over_columns_the_answer_does_not_read():
  # select_k_best kept x0 of (x0, x1): the law still reads over every column
  node = E.op("mul", E.var(0), E.const(2.0))
  v = solution.of_report(_rep(node, ["a"]), ["a"], "2*a*b", law_names=["a", "b"])
  assert v["reason"] == "not constant"


def test_a_tree_is_built_under_the_checks_guard():
  node = E.with_constants(E.from_prefix(SLOW.split()), [1.2])
  t0 = time.monotonic()
  v = solution.of_tree(node, ["q1", "q2"], _law("q1*q2", ["q1", "q2"]), seconds=0.5)
  assert v.reason == "timed out" and time.monotonic() - t0 < 10
  ok = solution.of_tree(E.op("mul", E.var(0), E.var(1)), ["q1", "q2"], _law("q1*q2", ["q1", "q2"]))
  assert ok.solution and ok.reason == "difference 0"
