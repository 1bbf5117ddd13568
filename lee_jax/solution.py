"""SRBench's symbolic solution: is a found formula the known law, up to one constant?

La Cava et al. (2021), SRBench, count a model phi* as a symbolic solution of the law phi when
phi - phi* is a constant or phi* / phi is a nonzero constant, so a law found with one constant
off (under noise, or a unit factor) still counts. Their check (cavalab/srbench,
`experiment/assess_symbolic_model.py` and `symbolic_utils.py`), followed here step by step:

1. the model's string is parsed over the columns as plain SymPy symbols, simplified
   (`ratio=1`) and its floats rounded to 3 decimals (those below 1e-4 in size to 0);
2. the law is parsed from its formula with pi written 3.1415926535;
3. difference = rounded(law - model), ratio = rounded(model / law); the difference is
   simplified again unless it is already constant;
4. a solution when the difference prints "0" or is constant, or the ratio is constant;
   only models with test R2 > 0.5 are checked, and a SymPy error counts as no solution.

What is ours: the SymPy work (building the answer too) runs under a CPU-time guard (SRBench's
harness had a wall-clock alarm), in a helper process the kernel stops where the guard cannot
(`isolated`), and running over counts as no solution and is reported as such; a model the
rounding makes 0 or not finite (every float of it under 1e-4: 3e-5*x) is no solution
(SymPy calls 0, nan and zoo constant, so SRBench's rule would call such a model a solution
of any law); a cell with no answer counts as no solution, as SRBench
counts a failed trial. SRBench's history holds two roundings (3 decimals with the 1e-4
floor in its later code, 6 without it in an earlier one), so `digits` is a parameter (3 by
default). SymPy's random points (is_constant) come from a fixed seed, and the helper's hash
seed is fixed, so a verdict and its time repeat (SRBench left both to chance). The answer is
the form SRBench's harness receives from us (`srbench_method.model`: simplified under real
symbols, printed at full precision), over plain symbols from there on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from typing import Sequence

import sympy

from lee_jax import complexity
from lee_jax import datasets
from lee_jax import expr as E
from lee_jax import isolated
from lee_jax import sympy_form

DIGITS = 3
FLOOR = 1e-4  # floats smaller than this in size round to 0 (SRBench's later round_floats)
PI_TEXT = "3.1415926535"  # SRBench writes pi in a law's formula so
MIN_R2 = 0.5  # SRBench checks only models at least this good on the test fold
SECONDS = 60.0  # CPU seconds for one check's SymPy work
HARD_GRACE = 5.0  # the kernel stops the check this much later, where the guard could not


@dataclasses.dataclass(frozen=True)
class Verdict:
  solution: bool
  reason: str  # "difference 0", "constant difference", "constant ratio", "not constant",
  #              "test R2 <= 0.5", "no answer", "timed out", "0 or not finite once rounded",
  #              or the error (a formula that does not parse, a SymPy failure)
  difference: str = ""
  ratio: str = ""

  def as_dict(self) -> dict:
    return dataclasses.asdict(self)


def round_floats(expr: sympy.Expr, digits: int = DIGITS, floor: float | None = FLOOR) -> sympy.Expr:
  """Every Float rounded to `digits` decimals; with `floor`, those smaller in size to 0.
  One at a time, in preorder, as SRBench does (each substitution evaluates: a float it makes
  stays as it is)."""
  out = expr
  for a in sympy.preorder_traversal(expr):
    if isinstance(a, sympy.Float):
      out = out.subs(a, sympy.Integer(0) if floor is not None and abs(a) < floor else round(a, digits))
  return out


def plain(expr: sympy.Expr) -> sympy.Expr:
  """Each symbol as a plain one of the same name, as SRBench parses a model's string (ours
  are real; what SymPy did under that while building and simplifying stays done, as it
  does in the string our harness method prints)."""
  return expr.xreplace({s: sympy.Symbol(s.name) for s in expr.free_symbols})


def _symbols(names: Sequence[str]) -> dict[str, sympy.Symbol]:
  """What a formula over the columns may call them: their own names, or the formula names a
  report prints them with (`beta_` for beta, `a_b` for "a b"), each a plain symbol."""
  local = {n: sympy.Symbol(n) for n in names}
  local.update({p: sympy.Symbol(n) for p, n in zip(E.formula_names(names), names)})
  return local


def _parse(text: str, names: Sequence[str], what: str) -> sympy.Expr:
  local = _symbols(names)
  local.update({k: v for k, v in (("pi", sympy.pi), ("E", sympy.E)) if k not in local})
  try:
    out = sympy.sympify(text, locals=local)
  except (sympy.SympifyError, SyntaxError, TypeError) as err:
    raise E.UnsupportedExpression(f"cannot parse {what} {text!r}: {err}") from None
  if not isinstance(out, sympy.Expr):
    raise E.UnsupportedExpression(f"{what} {text!r} is not a formula")
  unknown = sorted(str(s) for s in out.free_symbols - set(local.values()))
  if unknown:  # (a typo would be a symbol of its own, and never a solution)
    raise E.UnsupportedExpression(f"{what} {text!r} names {', '.join(unknown)}, which is no "
                                  f"column ({', '.join(names)})")
  return out


def law(formula: str, names: Sequence[str]) -> sympy.Expr:
  """A law's formula over its columns as SRBench reads it: pi as 3.1415926535, plain symbols."""
  return _parse(re.sub(r"\bpi\b", PI_TEXT, formula), names, "the law")


def model(node: E.Node, names: Sequence[str]) -> sympy.Expr:
  """A found tree over the columns (by index) as SRBench's harness receives it
  (`srbench_method.model`: the simplified form at full precision), as plain symbols."""
  return plain(sympy_form.sympy_of(node, list(names), digits=None))


def answer(rep: dict, names: Sequence[str]) -> sympy.Expr:
  """A report's answer (`trial.report`: its prefix with the full-precision constants) over
  the columns `names`, as plain symbols. A record older than its constants' field: the
  printed expression (4 significant figures; the prefix holds 3), as for a replayed answer
  recorded without a prefix."""
  tokens = (rep.get("prefix") or "").split()
  node = E.from_record(tokens, rep.get("constants")) if tokens else None
  if node is not None:
    return model(node, names)
  # printed with the columns' formula names (`beta_`), or, before those, their own (`beta`)
  return _parse(rep["expression"], names, "the answer")


def _is_constant(expr: sympy.Expr) -> bool:
  return expr.is_constant() is True  # (None: SymPy could not tell)


def _bad(expr: sympy.Expr) -> bool:
  return expr == 0 or expr.has(sympy.nan, sympy.zoo, sympy.oo, -sympy.oo)


def _check(found: sympy.Expr, truth: sympy.Expr, digits: int, floor: float | None) -> Verdict:
  cleaned = round_floats(sympy.simplify(found, ratio=1), digits, floor)
  diff = round_floats(truth - cleaned, digits, floor)
  ratio = round_floats(cleaned / truth, digits, floor)
  if _bad(cleaned) or diff.has(sympy.nan, sympy.zoo) or _bad(ratio):
    return Verdict(False, "0 or not finite once rounded", _short(diff), _short(ratio))
  ratio_constant = _is_constant(ratio)
  if not _is_constant(diff) or ratio_constant:  # (SRBench's condition, as it is)
    diff = sympy.simplify(diff, ratio=1)
  if str(diff) == "0":
    reason = "difference 0"
  elif _is_constant(diff):
    reason = "constant difference"
  elif ratio_constant:
    reason = "constant ratio"
  else:
    reason = "not constant"
  return Verdict(reason != "not constant", reason, _short(diff), _short(ratio))


def _short(expr: sympy.Expr, limit: int = 300) -> str:
  text = str(expr)
  return text if len(text) <= limit else text[:limit] + "..."


@contextlib.contextmanager
def _seeded(seed: int = 0):
  """SymPy's random draws (is_constant tries random points) from a fixed seed, so a verdict
  and its time repeat; the caller's SymPy random state is put back after."""
  from sympy.core import random as sympy_random
  rngs = [sympy_random.rng, getattr(sympy_random, "_assumptions_rng", sympy_random.rng)]
  states = [r.getstate() for r in rngs]
  for r in rngs:
    r.seed(seed)
  try:
    yield
  finally:
    for r, state in zip(rngs, states):
      r.setstate(state)


def _given(found: sympy.Expr, truth: sympy.Expr) -> tuple:
  return found, truth


def _of_tree(node: E.Node, names: Sequence[str], truth: sympy.Expr) -> tuple:
  return model(node, names), truth


def _of_report(rep: dict, names: Sequence[str], formula: str,
               law_names: Sequence[str] | None) -> tuple:
  return answer(rep, names), law(formula, law_names or names)


def _verdict_here(build, args: tuple, digits: int, floor: float | None,
                  seconds: float) -> Verdict:
  """The verdict on build(*args) -> (answer, law), built and checked under one time guard."""
  try:
    with _seeded():
      out = complexity.within(lambda: _check(*build(*args), digits, floor), seconds)
  except E.UnsupportedExpression as err:  # a formula that does not parse, named
    return Verdict(False, str(err).splitlines()[0])
  except Exception as err:  # noqa: BLE001 -- SRBench counts any SymPy failure as no solution
    return Verdict(False, f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}")
  return Verdict(False, "timed out") if out is None else out


def _verdict(build, args: tuple, r2_test: float | None, digits: int, floor: float | None,
             seconds: float) -> Verdict:
  """`_verdict_here` after the R2 gate, in a helper process the kernel stops at the limit
  (`isolated`: the guard cannot stop one long C call, as in SymPy's integer gcd)."""
  if r2_test is not None and not r2_test > MIN_R2:  # (NaN too) before any SymPy work
    return Verdict(False, f"test R2 <= {MIN_R2}")
  try:
    return isolated.call(_verdict_here, (build, args, digits, floor, seconds),
                         seconds + HARD_GRACE)
  except isolated.TimedOut:
    return Verdict(False, "timed out")
  except isolated.Failed as err:  # the check's process ended under it (a crash, a kill)
    return Verdict(False, f"Failed: {err}")


def check(found: sympy.Expr, truth: sympy.Expr, r2_test: float | None = None,
          digits: int = DIGITS, floor: float | None = FLOOR, seconds: float = SECONDS) -> Verdict:
  """SRBench's verdict on a found expression against the law (both over plain symbols, as
  `model` and `law` build them). r2_test: the model's test R2 (None: not gated)."""
  return _verdict(_given, (found, truth), r2_test, digits, floor, seconds)


def of_tree(node: E.Node, names: Sequence[str], truth: sympy.Expr, digits: int = DIGITS,
            floor: float | None = FLOOR, seconds: float = SECONDS) -> Verdict:
  """`check` of a tree over the columns `names` (by index) against a parsed law, the tree
  built under the check's guard (SymPy's evaluation of a tree can run for minutes)."""
  return _verdict(_of_tree, (node, list(names), truth), None, digits, floor, seconds)


def of_report(rep: dict, names: Sequence[str], formula: str | None, digits: int = DIGITS,
              floor: float | None = FLOOR, seconds: float = SECONDS,
              law_names: Sequence[str] | None = None) -> dict | None:
  """`check` of a report's answer (over `names`) against the dataset's law (over
  `law_names`, default `names`: select_k_best's columns are fewer than the law's), as a
  JSON-ready dict; None where there is no law (a black-box or user table). A report
  without an answer is no solution, as SRBench counts a failed trial."""
  if not formula:
    return None
  if not rep.get("found") or not (rep.get("prefix") or rep.get("expression")):
    return Verdict(False, "no answer").as_dict()
  r2 = rep.get("r2_test")
  return _verdict(_of_report, (rep, list(names), formula, law_names and list(law_names)),
                  float("nan") if r2 is None else r2, digits, floor, seconds).as_dict()


def of_record(row: dict, digits: int = DIGITS, floor: float | None = FLOOR,
              seconds: float = SECONDS) -> dict | None:
  """`of_report` of a sweep's record, against the law of the shipped dataset it names
  (None for a set without one; an unknown name is a DataError)."""
  ds = datasets.load_dataset(row["dataset"])
  return of_report(row, ds.feature_names, ds.formula, digits, floor, seconds)
