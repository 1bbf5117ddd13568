"""The answer written in fewer nodes: equal forms that SymPy's simplify does not reach.

Complexity is the node count of SymPy's simplified form (SRBench's rule), but simplify
chooses among its forms by operation count, and it leaves alone identities that hold only
for some values of the columns (sqrt(a) sqrt(b) = sqrt(a b) where a, b >= 0). So exact laws
came back longer than they are: Feynman I.8.14 as sqrt(x1^2 - 2 x1 x2 + x2^2 + ...) (23
nodes for 17), I.47.23 as sqrt(gamma) sqrt(pr) / sqrt(rho) (10 for 8), I.44.4 with
log(V2) - log(V1), III.8.54 as 0.5 - 0.5 cos(2u) for sin(u)^2. Each rewrite below is a pure
function of a SymPy expression; `shortest` keeps the one SymPy counts fewest nodes in whose
values equal the answer's on every training and validation row (an identity the rows cannot
tell from one: |x| is x where x > 0 on every row), passes the pole probe, and so changes no
prediction the search was judged by.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools

import numpy as np
import sympy

from lee_jax import complexity
from lee_jax import evaluate
from lee_jax import expr as E
from lee_jax import final_refit
from lee_jax import parsimony
from lee_jax import pool as pool_lib
from lee_jax import score

PASSES = 3  # rewrites of a rewrite (roots merged, then an |x| dropped): at most this deep
RTOL = 1e-9  # constants this close (as a share) are one: a square's or a log group's


def _each(kind, fn):
  """expr -> expr with fn applied to every subexpression of the kind (bottom up)."""
  return lambda expr: expr.replace(lambda s: isinstance(s, kind), fn)


def _merge_roots(m: sympy.Mul) -> sympy.Expr:
  # b1^(p1/2) b2^(p2/2) ... (p odd) -> sqrt(b1^p1 b2^p2 ...): one root for several
  halves, rest = [], []
  for a in m.args:
    b, e = a.as_base_exp()
    (halves if e.is_Rational and e.q == 2 and not b.is_Number else rest).append((b, e))
  if len(halves) < 2:
    return m
  inside = sympy.Mul(*[b ** e.p for b, e in halves])
  return sympy.Mul(*[b ** e for b, e in rest]) * sympy.Pow(inside, sympy.Rational(1, 2),
                                                          evaluate=False)


def _same(a, b) -> bool:
  return abs(float(a) - float(b)) <= RTOL * max(abs(float(a)), abs(float(b)))


def _combine_logs(s: sympy.Add) -> sympy.Expr:
  # c log(a) - c log(b) + c log(d) -> c log(a d / b): only equal magnitudes (sympy's
  # logcombine also moves a coefficient into the argument, log(a^c), which LEE's operators
  # cannot hold)
  groups: dict[float, list] = collections.defaultdict(list)
  rest = []
  for t in s.args:
    c, m = t.as_coeff_Mul()
    if isinstance(m, sympy.log):
      key = next((k for k in groups if _same(k, abs(c))), abs(c))
      groups[key].append((c, m.args[0]))
    else:
      rest.append(t)
  if all(len(g) < 2 for g in groups.values()):
    return s
  for c, g in groups.items():
    rest.append(c * sympy.log(sympy.Mul(*[u if k > 0 else 1 / u for k, u in g])))
  return sympy.Add(*rest)


def _complete_squares(s: sympy.Add) -> sympy.Expr:
  # c a^2 + c b^2 -+ 2 c a b -> c (a -+ b)^2, for symbols a, b (distances: Feynman I.8.14)
  terms: dict[sympy.Expr, sympy.Expr] = collections.defaultdict(lambda: sympy.S.Zero)
  for t in s.args:
    c, m = t.as_coeff_Mul()
    terms[m] += c
  terms = dict(terms)
  symbols = sorted(s.free_symbols, key=str)
  changed = True
  while changed:
    changed = False
    for a, b in itertools.combinations(symbols, 2):
      ca, cb, cab = (terms.get(k, sympy.S.Zero) for k in (a ** 2, b ** 2, a * b))
      if ca == 0 or cb == 0 or cab == 0 or not (_same(ca, cb) and _same(abs(cab), 2 * abs(ca))):
        continue
      sign = 1 if (cab > 0) == (ca > 0) else -1
      for k in (a ** 2, b ** 2, a * b):
        del terms[k]
      square = sympy.Pow(a + sign * b, 2, evaluate=False)
      terms[square] = terms.get(square, sympy.S.Zero) + ca
      changed = True
      break
  return sympy.Add(*[c * m for m, c in terms.items()])


def _half_angle(sign: int):
  # cos(u) = 1 - 2 sin(u/2)^2 (sign +1) or 2 cos(u/2)^2 - 1 (sign -1): 0.5 - 0.5 cos(2u)
  # is sin(u)^2, 2 U (1 - cos(d k)) is 4 U sin(d k / 2)^2
  if sign > 0:
    return lambda c: 1 - 2 * sympy.sin(c.args[0] / 2) ** 2
  return lambda c: 2 * sympy.cos(c.args[0] / 2) ** 2 - 1


REWRITES = {
    "roots": _each(sympy.Mul, _merge_roots),
    "logs": _each(sympy.Add, _combine_logs),
    "log_flip": _each(sympy.log, lambda g: -sympy.log(1 / g.args[0])),  # -x log(a/b): x log(b/a)
    "squares": _each(sympy.Add, _complete_squares),
    "sin_half": _each(sympy.cos, _half_angle(1)),
    "cos_half": _each(sympy.cos, _half_angle(-1)),
    # SymPy's own, which simplify weighs by operations: a constant out of a sum
    # (x0 (0.598 x1 + 0.611 x2) -> 0.611 x0 (0.979 x1 + x2)), equal powers as one
    "factor": sympy.factor,
    "cancel": sympy.cancel,
    "together": sympy.together,
    "factor_terms": sympy.factor_terms,
    "powsimp": lambda e: sympy.powsimp(e, force=True),
}


# SymPy's polynomial rewrites expand: on a cube of a 5-term sum factor ran past 3 minutes
# unguarded, cancel's 4,421-node expansion of a 21-token answer overflows the recursion of
# LEE's trees. They run on the main thread only (where the time guard works) and on
# expressions of at most SYMPY_NODES nodes (the Feynman answers have up to ~31; a black-box
# long sum 60 and more, where a constant out of a sum is one node of many).
EXPANDING = ("factor", "cancel", "together")
SYMPY_NODES = 40


def without_abs(expr: sympy.Expr, X: np.ndarray) -> sympy.Expr:
  """expr with each |u| whose u keeps one sign on the rows X written as u (u >= 0 on every
  row where it is finite) or -u (u <= 0); the others stay. Judged on u itself: on the
  answer's values a dropped |x0| beside exp(x1) ~ 1e13 would be within rounding."""
  swap = {}
  for a in expr.atoms(sympy.Abs):
    try:
      with np.errstate(all="ignore"):
        u = evaluate.evaluate_numpy(E.from_sympy(a.args[0]), X)
    except (ValueError, TypeError, RecursionError):
      continue
    u = u[np.isfinite(u)]
    if u.size and np.all(u >= 0):
      swap[a] = a.args[0]
    elif u.size and np.all(u <= 0):
      swap[a] = -a.args[0]
  return expr.xreplace(swap)


def forms(expr: sympy.Expr, X: np.ndarray | None = None):
  """(name, form) of each rewrite that changes expr (with X, the rows: also |u| dropped
  where they allow, `without_abs`), each under the simplification's time limit: those
  that run over are left out, as are the expanding ones where it cannot hold
  (EXPANDING)."""
  guarded = complexity.guards_here()
  small = complexity.node_count(expr) <= SYMPY_NODES
  rewrites = dict(REWRITES)
  if X is not None:
    rewrites["abs"] = lambda e: without_abs(e, X)
  for name, fn in rewrites.items():
    if name in EXPANDING and not (guarded and small):
      continue
    try:
      form = complexity.within(lambda: fn(expr))
    except (TypeError, ValueError, ZeroDivisionError, RecursionError, MemoryError,
            AttributeError, sympy.PolynomialError):
      continue
    if form is not None and form != expr:
      yield name, form


def shortest_tree(node: E.Node, X: np.ndarray, bounded=None) -> tuple[E.Node, list[str]]:
  """(the tree of fewest SymPy nodes among node and its rewrites, rewrites of those up to
  PASSES deep, with node's values on the rows X; the names of the rewrites taken)."""
  with np.errstate(all="ignore"):
    values = evaluate.evaluate_numpy(node, X)
  best, size, taken = node, complexity.complexity(node), []
  for _ in range(PASSES):
    found = None
    expr = complexity.simplify(complexity.build(best))
    for name, form in forms(expr, X):
      # (a form twice the size is no shorter one: an expansion, whose deep tree would
      # overflow the recursion of the steps below)
      if complexity.node_count(form) > 2 * complexity.node_count(expr):
        continue
      try:
        tree = E.from_sympy(form)  # ValueError: beyond LEE's operators (x**0.86)
        with np.errstate(all="ignore"):  # (the values first: they cost no SymPy)
          if not parsimony.same_values(values, evaluate.evaluate_numpy(tree, X)):
            continue
        cx = complexity.complexity(tree)
        if cx >= (size if found is None else found[1]):
          continue
        if bounded is not None and not bounded(tree):
          continue
      except (ValueError, TypeError, RecursionError):
        continue
      found = (tree, cx, name)
    if found is None:
      break
    best, size = found[0], found[1]
    taken.append(found[2])
  return best, taken


def shortest(c: pool_lib.Candidate, data, alpha: float, bounded=None) -> pool_lib.Candidate:
  """The answer c (on data, a search.SearchData) in its shortest form (`shortest_tree`, with
  the same values on every training and validation row), its score at the new count; c
  itself when no form is shorter. Its R2s stay c's (the same predictions: the validation
  R2 stays the held-out one that chose it). bounded: an optional predicate on a tree (the
  pole probe)."""
  X, _, _ = final_refit.every_row(data)
  node, taken = shortest_tree(c.node, X, bounded)
  if not taken:
    return c
  ids, consts = score.ids_and_consts(node, None)
  cx = complexity.complexity(node)
  return dataclasses.replace(c, node=node, ids=ids, consts=consts, complexity=cx,
                             score=score.search_score(c.r2_train, cx, alpha))
