"""The answer as SymPy: simplified as complexities count it, printed at some digits.

Apart from `trial` (which imports JAX) so that the symbolic-solution check's helper process
(`solution.py`, `isolated.py`) prints an answer as the report does without JAX's import.
"""

from __future__ import annotations

import sympy

from lee_jax import complexity
from lee_jax import expr as E


def sympy_of(node: E.Node, names, digits: int | None = 4) -> sympy.Expr:
  """The simplified SymPy form over column names, constants at `digits` significant figures
  (None: full precision, for a formula that is evaluated rather than read)."""
  return rounded(simplified(node, names), digits)


def simplified(node: E.Node, names) -> sympy.Expr:
  """The tree as SymPy over column names, simplified as complexities count it."""
  return complexity.simplify(complexity.build(node, names))


def rounded(expr: sympy.Expr, digits: int | None = 4) -> sympy.Expr:
  """A simplified form (`sympy_of`'s) as printed at `digits` significant figures, or at full
  precision (None): one simplification serves both."""
  # SymPy's trigonometric passes can leave a whole constant as a float: -1.0*cos(x - y);
  # in print (`digits`) one whole to 1e-9 is whole too (2.0 after a SymPy round trip). A
  # half (`fit.snap` holds them as it holds integers) is written as one, sin(d*k/2): SymPy
  # takes sin(0.5*d*k) and sin(d*k/2) for different functions, and so did SRBench's
  # symbolic check (`solution.py`); the node count is the same.
  rel = 0.0 if digits is None else 1e-9
  exact = {}
  for f in expr.atoms(sympy.Float):
    if _whole(float(f), rel):
      exact[f] = sympy.Integer(round(float(f)))
    elif _whole(2 * float(f), rel):
      exact[f] = sympy.Rational(round(2 * float(f)), 2)
  expr = expr.xreplace(exact)
  if digits is None:
    return expr
  # Every term stays, however small its coefficient: whether it matters depends on the
  # columns' sizes (2e-10 x0 is the main part where x0 ~ 1e12; 1e-7 beside 1e3 x0 where
  # x0 ~ 1e-10), and `fit.snap` has already dropped the ones that change nothing on the rows.
  return expr.xreplace({f: sympy.Float(f, digits) for f in expr.atoms(sympy.Float)})


def _whole(v: float, rel: float) -> bool:
  # (a small constant such as 3e-10 is within 1e-9 of 0 but no rounding error of it: a target
  # in other units is made of them)
  return abs(v) < 1e15 and abs(v - round(v)) <= rel * max(1.0, abs(v)) and (v == 0 or round(v) != 0)
