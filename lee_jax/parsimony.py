"""The answer made simpler where its training rows cannot tell the difference (BIC).

Under noise the search answers with what the noise put there: I.27.6 at eps 0.1 came back as
0.948 d1 d2 / (0.949 d1 n + 0.936 d2 - 0.0012 d1 d2) for d1 d2 / (d1 n + d2). `fit.snap`
only takes changes that cost under 1e-9 of the NMSE: right at eps 0, never under noise. Here
each simpler variant of the formula -- one summand dropped (`fit.without_one_term`), one
fitted constant fixed at its nearest integer or small half, every constant near one such
value fixed at once (m (0.5036 u^2 + 0.496 v^2) is m (u^2 + v^2) / 2), two fitted
coefficients of one sum made one (`tied`: 0.05699 x^2 + 0.0568 y^2 is 0.0569 (x^2 + y^2)),
or a function the rows see only a straight stretch of replaced by that line (3519 v
sin(0.000142 q r) is 0.5 q r v) -- has its other constants refitted, and the variant with
the lowest Bayesian information criterion,

    n log(SSE / n) + k log n      (k: the free constants),

replaces the formula while the criterion falls and the variant is shorter (SymPy's
complexity, as answers report it; a constant the others make up for exactly is fixed
anyway). A fixed constant costs no parameter, so a variant pays for itself when its SSE
rises by less than a factor n^(1/n) per constant it frees (0.7% on 1,000 rows). A fix that
shortens nothing (0.4992 k x^2 -> k x^2 / 2) must meet a stricter test: the value within
one standard error of the fit, in a formula that explains the rows (not in a black-box fit,
whose constants make up for what it lacks); a line that keeps the count of constants must
be shorter and within one standard error too. An exact law at eps 0 has an SSE at rounding
level, and any change multiplies it many times over, so exact answers stay.

A constant counts as fixed when it is exactly an integer or a half: fitted values never land
on one, and `complexity.constant_pattern` reads exact integers as integers (a fixed factor of
1 leaves the formula).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from lee_jax import complexity
from lee_jax import evaluate
from lee_jax import expr as E
from lee_jax import fit
from lee_jax import pool as pool_lib
from lee_jax import score

MAX_ROWS = 2000  # rows the criterion is measured on (a seeded draw of the training fold)
MAX_ITER = 100  # L-BFGS-B iterations per refit
MAX_HALF = 4.0  # halves tried, and values a fix that shortens nothing may take: below this
FLOOR = 1e-20  # NMSE below this is rounding (an exact law); the criterion's log stops there
REDUNDANT = 1e-9  # a fix that raises the NMSE by less than this share changes no prediction
# n log(NMSE ratio) of a fix that shortens nothing: 1 is the likelihood ratio of a constant one
# standard error from its fitted value (BIC alone lets a fix go up to log n, ~2.8 errors)
INDISTINCT = 1.0
LAW_NMSE = 0.05  # ... and only in a formula that leaves at most this share of the variance
# a function whose values on the rows a straight line in its argument leaves at most this
# share of their variance unexplained is offered as that line (sin(0.00014 q r) as 0.00014 q r)
LINEAR = 1e-3
CURVES = ("sin", "cos", "tan", "tanh", "exp", "log", "sqrt")
ODD = ("sin", "tan", "tanh")  # u(a) ~ a near 0
# lines are offered in trees of at most this many nodes: each opens more steps, and on a
# 60-node black-box sum the refits took minutes (215_2dplanes: 3.5 s -> 223 s a trial)
LINE_NODES = 30
# two fitted coefficients of one sum whose magnitudes are within this share of each other
# are offered as one (`tied`): II.6.15a at eps 0.01 came back as z sqrt(0.05699 x^2 + 0.0568
# y^2) / r^5, the law's one constant in two places; the criterion decides, as for a fix
TIE = 0.2
TIES = 16  # the closest pairs offered per tree


def is_fixed(v: float) -> bool:
  """An integer or a half exactly: a value no fit lands on, so one set by hand. Not one of
  2^50 or more, where every float is one (1/h ~ 1.5e33 in joules stayed unrefitted)."""
  return abs(float(v)) < 2.0**50 and float(v) == np.round(2.0 * v) / 2.0


def targets(v: float) -> list[float]:
  """The values a fitted constant v may be fixed at: its nearest integer, then its nearest
  half when that differs and is a small one (1/2 ... 7/2: a fitted 12.54 is 4 pi, not 25/2)."""
  out = [float(np.round(v))]
  half = float(np.round(2.0 * v) / 2.0)
  return out + ([half] if half != out[0] and abs(half) < MAX_HALF else [])


def indistinct(fv: float, f: float, n: int) -> bool:
  """n log of the NMSE's ratio at most INDISTINCT: the rows cannot tell the two apart."""
  return n * float(np.log(max(fv, FLOOR) / max(f, FLOOR))) <= INDISTINCT


def free_mask(node: E.Node) -> np.ndarray:
  return np.array([not is_fixed(v) for v in E.constants(node)], bool)


def criterion(nmse: float, free: int, n: int) -> float:
  """BIC up to a constant that is the same for every variant on these rows."""
  return n * float(np.log(max(nmse, FLOOR))) + free * float(np.log(n))


def variants(node: E.Node, X: np.ndarray | None = None):
  """(tree, unit, small) for every tree one step simpler: one summand dropped, one free
  constant fixed, or every free constant whose magnitude rounds to one target fixed at
  once (m (0.5036 u^2 + 0.496 v^2 + 0.502 w^2) is m (u^2 + v^2 + w^2) / 2, and no half
  alone is any shorter), or two coefficients of one sum made one (`tied`); with the rows
  X, also each function that is a straight line on them replaced by it (`linearised`; in
  trees up to LINE_NODES nodes); unit: a constant was fixed at 1 or -1; small: every
  fixed value is an integer or half below MAX_HALF."""
  for t in fit.without_one_term(node):
    yield t, False, False
  if X is not None and len(node) <= LINE_NODES:
    for t in linearised(node, X):
      yield t, False, False
  values = [float(v) for v in E.constants(node)]
  groups: dict[float, list[tuple[int, float]]] = {}
  for i, v in enumerate(values):
    if not is_fixed(v):
      for t in targets(v):
        yield (E.with_constants(node, values[:i] + [t] + values[i + 1:]), abs(t) == 1.0,
               abs(t) < MAX_HALF)
        groups.setdefault(abs(t), []).append((i, t))
  for size, fixes in groups.items():
    if len(fixes) > 1:
      joint = list(values)
      for i, t in fixes:
        joint[i] = t
      yield E.with_constants(node, joint), size == 1.0, size < MAX_HALF
  for t in tied(node):
    yield t, False, False


def _summands(node: E.Node) -> list[tuple[float, E.Node]]:
  """(sign, term) of each summand of a chain of add, sub and neg."""
  if node.name == "add":
    return _summands(node.children[0]) + _summands(node.children[1])
  if node.name == "sub":
    return _summands(node.children[0]) + [(-s, t) for s, t in _summands(node.children[1])]
  if node.name == "neg":
    return [(-s, t) for s, t in _summands(node.children[0])]
  return [(1.0, node)]


def _factors(node: E.Node) -> list[E.Node]:
  return (_factors(node.children[0]) + _factors(node.children[1]) if node.name == "mul"
          else [node])


def _coefficient(sign: float, term: E.Node) -> tuple[float, list[E.Node]] | None:
  """(the term's one fitted coefficient with the summand's sign, its other factors), or
  None where it has no fitted constant among its factors, or more than one."""
  factors = _factors(term)
  slots = [i for i, f in enumerate(factors) if f.name == "const" and not is_fixed(f.value)]
  if len(slots) != 1:
    return None
  i = slots[0]
  return sign * factors[i].value, factors[:i] + factors[i + 1:]


def _product(factors: list[E.Node]) -> E.Node:
  out = factors[0] if factors else E.const(1.0)
  for f in factors[1:]:
    out = E.op("mul", out, f)
  return out


def _sums(node: E.Node, inside: bool = False):
  """(sum, put) for each whole chain of add / sub / neg in node (not one inside another's
  chain), put(new) being the tree with new in its place."""
  chain = node.name in ("add", "sub", "neg")
  if chain and not inside:
    yield node, lambda new: new
  for i, child in enumerate(node.children):
    for site, put in _sums(child, chain):
      yield site, (lambda new, i=i, put=put:
                   E.Node(node.name, node.children[:i] + (put(new),) + node.children[i + 1:],
                          node.value))


def tied(node: E.Node):
  """Trees with two fitted coefficients of one sum made one, c1 A + c2 B -> c (A + B) or c
  (A - B) at c = their mean magnitude, where the magnitudes are within TIE of each other
  (their ratio), the TIES closest pairs of the tree: under noise a law's one constant in two
  places comes back as two (0.05699 x^2 + 0.0568 y^2 under II.6.15a's root). A summand that
  is a bare fitted constant ties as c * 1 (c1 + c2 x -> c (1 + x))."""
  offers = []
  for site, put in _sums(node):
    terms = _summands(site)
    if len(terms) < 2:
      continue
    coefs = [_coefficient(s, t) for s, t in terms]
    for i in range(len(terms)):
      for j in range(i + 1, len(terms)):
        if coefs[i] is None or coefs[j] is None:
          continue
        (a, ra), (b, rb) = coefs[i], coefs[j]
        lo, hi = sorted((abs(a), abs(b)))
        # (a ratio, not a difference: coefficients of 1e-170 and of 1e300 are fitted too)
        if lo > 0 and hi / lo - 1.0 <= TIE:
          offers.append((hi / lo, put, terms, i, j, a, b, ra, rb))
  offers.sort(key=lambda o: o[0])
  seen = set()
  for _, put, terms, i, j, a, b, ra, rb in offers[:TIES]:
    # the signs compared, not their product (which underflows to 0 below 1e-154)
    joined = E.op("add" if (a > 0) == (b > 0) else "sub", _product(ra), _product(rb))
    c = abs(a) / 2.0 + abs(b) / 2.0  # (their sum may overflow)
    if is_fixed(c):  # a mean on an integer or half would be held there, not refitted
      c = float(np.nextafter(c, np.inf))
    new = E.op("mul", E.const(float(np.copysign(c, a))), joined)
    for k, (s, t) in enumerate(terms):
      if k not in (i, j):
        new = E.op("add" if s > 0 else "sub", new, t)
    tree = put(new)
    key = tuple(E.to_prefix(tree))
    if key not in seen:
      seen.add(key)
      yield tree


def linearised(node: E.Node, X: np.ndarray):
  """Trees with one function u(a) of `node` replaced by a straight line where the rows see
  only a straight stretch of it (a line in a leaves at most LINEAR of u's variance on them):
  by a itself for sin, tan and tanh (II.34.2 at eps 0.01 came back as 3519 v sin(0.000142
  q r), that is 0.5 q r v), and by c0 + c1 a (vdp2 at eps 0.1: -1815 sin(0.000787 x - 1.5)
  - 1810, a line in x). Each in SymPy's form where it has one (`sympy_form`), so that the
  constants the line brings merge with those around it: in the tree a fixed -1.5 inside
  the line would hold an offset no later step can drop."""

  def sites(n: E.Node):  # (u(a), the tree with something in its place)
    if n.name in CURVES:
      yield n, lambda new: new
    for i, child in enumerate(n.children):
      for site, put in sites(child):
        yield site, (lambda new, n=n, i=i, put=put:
                     E.Node(n.name, n.children[:i] + (put(new),) + n.children[i + 1:], n.value))

  for site, put in sites(node):
    a = site.children[0]
    with np.errstate(all="ignore"):
      av, uv = evaluate.evaluate_numpy(a, X), evaluate.evaluate_numpy(site, X)
    if (not (np.isfinite(av).all() and np.isfinite(uv).all()) or np.ptp(av) == 0
        or np.ptp(uv) == 0):
      continue
    A = np.stack([np.ones_like(av), av], axis=1)
    c0, c1 = fit.lstsq(A, uv)
    if score.r2(uv, A @ np.array([c0, c1])) < 1.0 - LINEAR:
      continue
    lines = [a] if site.name in ODD else []
    lines.append(E.op("add", E.const(float(c0)), E.op("mul", E.const(float(c1)), a)))
    for line in lines:
      t = put(line)
      yield sympy_form(t, simplified=False) or t


def refit(node: E.Node, X: np.ndarray, y: np.ndarray, w: np.ndarray | None):
  """(node with its free constants refitted, its NMSE); NMSE inf when the fit fails."""
  r = fit.fit_constants(node, X, y, MAX_ITER, weights=w, free=free_mask(node))
  return (r.node, r.nmse) if r.ok else (node, np.inf)


def simplest(node: E.Node, X: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None,
             alpha: float = 0.002, bounded=None, count=complexity.complexity) -> E.Node:
  """`node` (with fitted constants) stepped to simpler variants while the information
  criterion on (X, y) falls, the best step first; `node` itself when none pays.

  A step must also lower the complexity (count: SymPy's, as answers report it), and not
  lower the search's score on the rows, R2 - alpha C: on a few dozen rows the criterion lets
  a node go for 2% of R2 (a black-box set's test R2 fell by as much). A constant fixed at 1
  or -1 counts as one node shorter (1 + 0.9998 x, -0.9999 a + b: the unit is the simplest
  constant, though SymPy counts it as one). A step that changes no prediction (one of two
  constants the other makes up for: c1 x / (c2 y)) is taken though the count stays: the
  next may shorten the formula. A fix at a small integer or half that shortens nothing is
  taken when the rows cannot tell it from the fitted value (n log of the NMSE's ratio at
  most INDISTINCT) and the formula leaves at most LAW_NMSE of their variance: 0.4992 k x^2
  is k x^2 / 2, while in a black-box fit 0.4848 x, or 78.79 at 79, claims what the data do
  not say (without that gate 28 of the 72 black-box answers took such values: 1.5 sin(oz1),
  - 2 cos(oz2) on Friedman's sets). A variant whose criterion does not fall (a line in
  place of a function, bringing as many constants as it takes) is taken only when it is
  shorter and the rows cannot tell it from the formula.
  bounded: an optional predicate on a tree (a pole probe); a step must pass it too."""
  X, y = np.asarray(X, np.float64), np.asarray(y, np.float64)
  n = len(y)
  if n < 2:
    return node
  current, f = refit(node, X, y, weights)
  if not np.isfinite(f):
    return node
  best = criterion(f, int(free_mask(current).sum()), n)
  size = count(current)
  changed = False
  while True:
    better = []
    for v, unit, small in variants(current, X):
      v, fv = refit(v, X, y, weights)
      if not np.isfinite(fv):
        continue
      c = criterion(fv, int(free_mask(v).sum()), n)
      # the criterion falls; or the rows cannot tell the variant from the formula, as a
      # line in place of a function that keeps the count of constants must be told apart
      if c < best or indistinct(fv, f, n):
        better.append((c, fv, v, unit, small, c < best))
    better.sort(key=lambda t: t[0])

    def pays(fv, v, unit, small, falls):
      shorter = size - count(v)
      if not falls:  # (then only a shorter formula: each such step makes one)
        return shorter > 0 and fv - f <= alpha * shorter
      if fv <= f * (1 + REDUNDANT) + FLOOR:
        return True
      if shorter == 0 and unit:
        shorter = 1
      if shorter > 0:
        return fv - f <= alpha * shorter  # (the NMSE is 1 - R2 on these rows)
      # as long, but a small integer or half the rows cannot tell from the fitted value, in
      # a formula that explains the rows (in a fit that leaves much unexplained the constants
      # make up for what is missing, and a round value would claim what is not there)
      return shorter == 0 and small and f <= LAW_NMSE and indistinct(fv, f, n)

    step = next((t for t in better if pays(*t[1:]) and (bounded is None or bounded(t[2]))),
                None)
    if step is None:
      break
    best, f, current = step[:3]
    size, changed = count(current), True
  return current if changed else node


def rows(X: np.ndarray, y: np.ndarray, w: np.ndarray | None, seed: int, limit: int = MAX_ROWS):
  """At most `limit` rows of (X, y, w), a seeded draw when there are more (never the first
  ones: a caller's rows may be sorted, by time say, and the first would see one end of x)."""
  if len(y) <= limit:
    return X, y, w
  idx = np.random.default_rng([seed, 11]).choice(len(y), limit, replace=False)
  return X[idx], y[idx], None if w is None else w[idx]


def sympy_form(node: E.Node, simplified: bool = True) -> E.Node | None:
  """The tree as SymPy writes it (simplified), whose constants are the printed ones: the
  search's sin(7.7956) x y is 0.99997 x y there, and a law's 1 that the tree holds as a
  ratio of two constants is one constant. None where LEE's operators cannot hold it
  (x**0.86). simplified=False: as SymPy builds it, which already multiplies numbers
  together and into sums (-1812 (c0 + c1 x) - 1807 is one line), at a fraction of the time."""
  try:
    built = complexity.build(node)
    return E.from_sympy(complexity.simplify(built) if simplified else built)
  except (ValueError, TypeError, RecursionError):  # E.UnsupportedExpression is a ValueError
    return None


def _same_but_shorter(form: E.Node, node: E.Node, X: np.ndarray) -> bool:
  """Whether SymPy's form is a shorter tree with the same values as node's on the rows X
  where node's are finite: the search's 1.0 x2^3 / (x2^2 1.0) is x2 in print and SymPy's
  count, but NaN at x2 = 0, where predict() would disagree with the printed answer."""
  if len(form) >= len(node):
    return False
  with np.errstate(all="ignore"):
    return same_values(evaluate.evaluate_numpy(node, X), evaluate.evaluate_numpy(form, X))


def same_values(a: np.ndarray, b: np.ndarray) -> bool:
  """b equals a on every row where a is finite (a rounding difference apart: rtol 1e-9,
  atol 1e-12 of a's largest there), and finite there. (Where a is not, b may be: sqrt(a b)
  is defined where sqrt(a) sqrt(b) is not; an answer is finite on every row it was chosen
  on.)"""
  ok = np.isfinite(a)
  if not ok.any() or not np.all(np.isfinite(b[ok])):
    return False
  return bool(np.allclose(b[ok], a[ok], rtol=1e-9, atol=1e-12 * np.abs(a[ok]).max()))


def pole_guard(data, probe_points: int, seed: int):
  """The answer's pole probe as a predicate on a tree (score.bounded: probe_points times
  DENSE_PROBES points between the training rows, their range measured on at most MAX_ROWS of
  them), or None with probe_points = 0."""
  if not probe_points:
    return None
  X, y, _ = rows(np.asarray(data.X_train, np.float64), np.asarray(data.y_train, np.float64),
                 data.w_train, seed)
  probe = score.probe(data.X_train, score.DENSE_PROBES * probe_points,
                      np.random.default_rng([seed, 13]))
  return lambda t: score.bounded(t, probe, X, y)


def answer(c: pool_lib.Candidate, data, alpha: float, probe_points: int,
           seed: int, bounded=None) -> pool_lib.Candidate:
  """A trial's answer c (on data, a search.SearchData) made `simplest` on at most MAX_ROWS
  of its training rows, as the search wrote it and as SymPy does (`sympy_form`: a constant
  that is 1 in print may be no constant of the tree), the shorter result kept, and rescored
  (R2 on the training and validation folds, SymPy complexity); c itself when nothing pays,
  or the simpler one is not finite on the folds.
  probe_points > 0: the simpler tree must also stay bounded between the rows (score.bounded,
  as the rounds' answers; `bounded`: that predicate, `pole_guard`'s, when the caller has it)."""
  X, y, w = rows(np.asarray(data.X_train, np.float64), np.asarray(data.y_train, np.float64),
                 data.w_train, seed)
  if bounded is None:
    bounded = pole_guard(data, probe_points, seed)
  size = complexity.complexity(c.node)
  steps = []
  out = simplest(c.node, X, y, w, alpha, bounded)
  if out is not c.node:
    steps.append(out)
  form = sympy_form(c.node)
  if form is not None:  # (already shorter in SymPy's count: sin(7.7956) x y is 0.99997 x y)
    out = simplest(form, X, y, w, alpha, bounded)
    if out is not form or complexity.complexity(form) < size or _same_but_shorter(form, c.node, X):
      steps.append(out)
  # (a step that changes no prediction may leave SymPy a longer form: never an answer)
  steps = [t for t in steps if complexity.complexity(t) <= size]
  if not steps:
    return c
  # the shorter, then the one with fewer fitted constants (the tree's own form on a tie)
  node = min(steps, key=lambda t: (complexity.complexity(t), int(free_mask(t).sum())))
  shorter = sympy_form(node) if node is not form else None  # a step's fixed 1.0 x0 reads x0
  if shorter is not None and _same_but_shorter(shorter, node, X):
    node = shorter
  with np.errstate(all="ignore"):
    rt = score.r2(data.y_train, evaluate.evaluate_numpy(node, data.X_train), data.w_train)
    rv = score.r2(data.y_val, evaluate.evaluate_numpy(node, data.X_val), data.w_val)
  if not (np.isfinite(rt) and np.isfinite(rv)):
    return c
  ids, consts = score.ids_and_consts(node, None)
  cx = complexity.complexity(node)
  return dataclasses.replace(c, node=node, ids=ids, consts=consts, r2_train=float(rt),
                             r2_val=float(rv), complexity=cx,
                             score=score.search_score(rt, cx, alpha))
