"""Expression trees and their forms: prefix tokens <-> token ids <-> SymPy.

An expression is a `Node` tree. Its prefix form lists operator names, variables `x0..x9`,
`C` (free constant) and 9-token constants (vocab.encode_constant). Decoded token sequences
go through `parse_ids`, which reports malformed input as `InvalidExpression` (a ValueError)
so callers in the search can count failures instead of crashing.
"""

from __future__ import annotations

import dataclasses
import functools
import keyword
import math
import re
from typing import Callable, Sequence

import numpy as np
import sympy

from lee_jax import vocab


class InvalidExpression(ValueError):
  """A token sequence that is not one well-formed prefix expression."""


class UnsupportedExpression(ValueError):
  """A SymPy expression that uses something outside LEE's 15 operators."""


@dataclasses.dataclass(frozen=True)
class Node:
  """One node: an operator with children, a variable `x<i>`, `C`, or a constant `const`."""
  name: str
  children: tuple["Node", ...] = ()
  value: float | None = None  # only for name == "const"

  def __post_init__(self):
    if self.name in vocab.ARITY:
      if len(self.children) != vocab.ARITY[self.name]:
        raise InvalidExpression(f"{self.name} takes {vocab.ARITY[self.name]} arguments")
    elif self.children:
      raise InvalidExpression(f"leaf {self.name} cannot have children")
    if self.name == "const" and (self.value is None or not math.isfinite(self.value)):
      raise InvalidExpression("a constant needs a finite value")

  def __len__(self) -> int:
    return 1 + sum(len(c) for c in self.children)

  def __str__(self) -> str:
    return " ".join(to_prefix(self))


def var(i: int) -> Node:
  return Node(f"x{i}")


def const(value: float) -> Node:
  return Node("const", value=float(value))


def op(name: str, *children: Node) -> Node:
  return Node(name, tuple(children))


def walk(node: Node):
  """Nodes in prefix order."""
  stack = [node]
  while stack:
    n = stack.pop()
    yield n
    stack.extend(reversed(n.children))


def variables_used(node: Node) -> set[int]:
  return {vocab.variable_index(n.name) for n in walk(node) if vocab.is_variable(n.name)}


def constants(node: Node) -> list[float]:
  """Constant values in prefix order (`C` counts as 1.0)."""
  return [n.value if n.name == "const" else 1.0 for n in walk(node) if n.name in ("const", "C")]


def with_constants(node: Node, values: Sequence[float]) -> Node:
  """The same tree with its constants (and `C`s) replaced, in prefix order. Subtrees
  without constants are shared with `node` (nodes are immutable)."""
  it = iter(values)

  def rebuild(n: Node) -> Node:  # (loops, not generators: the fitter rebuilds every result)
    if n.name == "const" or n.name == "C":
      return const(next(it))
    if not n.children:
      return n
    children = tuple([rebuild(c) for c in n.children])
    for new, old in zip(children, n.children):
      if new is not old:
        return Node(n.name, children, n.value)
    return n

  out = rebuild(node)
  if next(it, None) is not None:
    raise ValueError("more values than constants")
  return out


# --- prefix tokens and ids ---------------------------------------------------------------

def to_prefix(node: Node) -> list[str]:
  out: list[str] = []
  for n in walk(node):
    out.extend(vocab.encode_constant(n.value) if n.name == "const" else [n.name])
  return out


def to_ids(node: Node, max_len: int | None = None) -> np.ndarray:
  """[BOS, prefix..., EOS] as int32, PAD-filled to max_len (ValueError if it does not fit)."""
  ids = [vocab.BOS] + [vocab.TOKEN_TO_ID[t] for t in to_prefix(node)] + [vocab.EOS]
  if max_len is None:
    return np.asarray(ids, np.int32)
  if len(ids) > max_len:
    raise ValueError(f"expression needs {len(ids)} tokens, more than max_len={max_len}")
  return np.asarray(ids + [vocab.PAD] * (max_len - len(ids)), np.int32)


def from_prefix(tokens: Sequence[str]) -> Node:
  """Prefix tokens -> tree. Raises InvalidExpression on anything but exactly one expression."""
  pos = 0

  def parse() -> Node:
    nonlocal pos
    if pos >= len(tokens):
      raise InvalidExpression("prefix sequence ends early")
    t = tokens[pos]
    if t in vocab.ARITY:
      pos += 1
      return Node(t, tuple(parse() for _ in range(vocab.ARITY[t])))
    if vocab.is_variable(t) or t == "C":
      pos += 1
      return Node(t)
    if t in vocab.SIGNS:
      chunk = tuple(tokens[pos:pos + vocab.CONST_LEN])
      try:
        value = vocab.decode_constant(chunk)
      except ValueError as e:
        raise InvalidExpression(str(e)) from None
      pos += vocab.CONST_LEN
      return const(value)
    raise InvalidExpression(f"unexpected token {t!r} at position {pos}")

  tree = parse()
  if pos != len(tokens):
    raise InvalidExpression(f"{len(tokens) - pos} tokens after a complete expression")
  return tree


def from_record(tokens: Sequence[str], values: Sequence[float] | None) -> Node | None:
  """A report's tree at full precision: its prefix (constants to 3 significant figures)
  with `values` where they are that prefix's constants (they round to its tokens); None
  where they are not (a record older than its constants' field, or a replay's answer)."""
  node = from_prefix(tokens)
  values = list(values or [])
  if len(values) != len(constants(node)):
    return None
  full = with_constants(node, values)
  return full if to_prefix(full) == list(tokens) else None


def ids_to_tokens(ids: Sequence[int] | np.ndarray) -> list[str]:
  """Token ids (with or without BOS/EOS/PAD) -> the prefix tokens between BOS and EOS."""
  out = []
  for i in np.asarray(ids).reshape(-1).tolist():
    if i == vocab.BOS and not out:
      continue
    if i in (vocab.EOS, vocab.PAD):
      break
    if not 0 <= i < vocab.VOCAB_SIZE:
      raise InvalidExpression(f"token id {i} outside the vocabulary")
    out.append(vocab.TOKENS[i])
  return out


def parse_ids(ids: Sequence[int] | np.ndarray) -> Node:
  """Decoder output -> tree; InvalidExpression (never anything else) when malformed."""
  return from_prefix(ids_to_tokens(ids))


# --- SymPy ---------------------------------------------------------------------------------

@functools.cache
def _reads_as_symbol(name: str) -> bool:
  """Whether sympy.sympify reads the identifier `name` as a symbol of that name (E, I, pi,
  gamma, beta, S, N, Q, LC, sin, id, ... are SymPy's or Python's, and read otherwise)."""
  try:
    return sympy.sympify(name) == sympy.Symbol(name)
  except (sympy.SympifyError, SyntaxError, TypeError, ValueError, AttributeError):
    return False


def formula_names(names: Sequence[str], sympify_safe: bool = True) -> list[str]:
  """Column names as they appear in a printed formula: a name that is not an identifier
  ("Alcohol-related", "a+b", "2", "") would read as another formula, so its other characters
  become "_" (a leading digit gets "x_"; an empty name is x<i>), and a clash gets "_<i>".
  A name that sympy.sympify would read as something else gets a "_": `E*(I + 0.1)` read back
  was a number, so it prints `E_*(I_ + 0.1)`; a Python keyword likewise (`lambda_`).
  sympify_safe=False keeps those names (for a reader that declares the columns as symbols,
  as SRBench's harness does)."""
  names = [str(n) for n in names]
  readable = _reads_as_symbol if sympify_safe else (lambda n: True)
  plain = lambda n: n.isidentifier() and not keyword.iskeyword(n) and readable(n)
  taken = {n for n in names if plain(n)}  # names that stay as they are
  out: list[str] = []
  for i, name in enumerate(names):
    if plain(name):
      out.append(name)
      continue
    s = f"{name}_" if name.isidentifier() else re.sub(r"\W", "_", name.strip()) or f"x{i}"
    s = f"x_{s}" if s[0].isdigit() else s
    base, k = s, i
    while s in taken or not readable(s):  # ("a b" beside "a_b" and "a_b_0": each
      # its own symbol; " E " stripped is E)
      s, k = f"{base}_{k}", k + 1
    taken.add(s)
    out.append(s)
  return out


def symbols(n: int, names: Sequence[str] | None = None) -> list[sympy.Symbol]:
  names = list(names) if names is not None else [f"x{i}" for i in range(n)]
  return [sympy.Symbol(s, real=True) for s in names[:n]]


_TO_SYMPY: dict[str, Callable] = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "sin": sympy.sin, "cos": sympy.cos, "tan": sympy.tan,
    "tanh": sympy.tanh, "exp": sympy.exp, "log": sympy.log, "sqrt": sympy.sqrt,
    "sq": lambda a: a**2, "cube": lambda a: a**3, "abs": sympy.Abs, "neg": lambda a: -a,
}


def to_sympy(node: Node, names: Sequence[str] | None = None) -> sympy.Expr:
  """Tree -> SymPy; variables are x0..x9 unless `names` maps index -> name.

  Integer-valued constants become SymPy Integers so that simplification can cancel them.
  """
  syms = symbols(vocab.MAX_VARIABLES, names and list(names) + [f"x{i}" for i in range(len(names), 10)])

  def conv(n: Node):
    if n.name == "const":
      v = n.value
      return sympy.Integer(int(v)) if float(v).is_integer() and abs(v) < 1e15 else sympy.Float(v)
    if n.name == "C":
      return sympy.Symbol("C")
    if vocab.is_variable(n.name):
      return syms[vocab.variable_index(n.name)]
    return _TO_SYMPY[n.name](*(conv(c) for c in n.children))

  return conv(node)


_FUNCS = {sympy.sin: "sin", sympy.cos: "cos", sympy.tan: "tan", sympy.tanh: "tanh",
          sympy.exp: "exp", sympy.log: "log", sympy.Abs: "abs"}


def from_sympy(expr: sympy.Expr, names: Sequence[str] | None = None) -> Node:
  """SymPy (from a user or a peer) -> tree over LEE's operators.

  `names` lists the variable names in column order (default x0..x9). Integer powers become
  sq / cube / repeated mul, half-integer powers use sqrt, negative powers div. Anything else
  (asin, cosh, x**0.3, an unknown symbol, ...) raises UnsupportedExpression naming it.
  """
  names = list(names) if names is not None else [f"x{i}" for i in range(vocab.MAX_VARIABLES)]
  if len(names) > vocab.MAX_VARIABLES:
    raise UnsupportedExpression(f"LEE takes at most {vocab.MAX_VARIABLES} variables, got {len(names)}")
  index = {n: i for i, n in enumerate(names)}

  def chain(name: str, items: list[Node]) -> Node:
    out = items[0]
    for it in items[1:]:
      out = op(name, out, it)
    return out

  def power(base: Node, p: sympy.Rational) -> Node:
    if p < 0:
      return op("div", const(1.0), power(base, -p))
    if p.q == 2:
      return power(op("sqrt", base), sympy.Integer(p.p)) if p.p != 1 else op("sqrt", base)
    if p.q != 1:
      raise UnsupportedExpression(f"power {p} (only integer and half-integer powers)")
    n = int(p)
    if n == 0:
      return const(1.0)
    if n == 1:
      return base
    if n == 2:
      return op("sq", base)
    if n == 3:
      return op("cube", base)
    return op("mul", power(base, sympy.Integer(n - n // 2)), power(base, sympy.Integer(n // 2)))

  def conv(e) -> Node:
    if e.is_Symbol:
      if e.name == "C":
        return Node("C")
      if e.name not in index:
        raise UnsupportedExpression(f"unknown variable {e.name!r} (expected one of {names})")
      return var(index[e.name])
    if e.is_Number or e in (sympy.pi, sympy.E) or e.is_NumberSymbol:
      v = complex(e)
      if v.imag != 0 or not math.isfinite(v.real):
        raise UnsupportedExpression(f"constant {e} is not a finite real number")
      return const(v.real)
    if e.is_Add:
      return chain("add", [conv(a) for a in e.args])
    if e.is_Mul:
      args = list(e.args)
      if args[0] == -1 and len(args) > 1:
        return op("neg", conv(sympy.Mul(*args[1:], evaluate=False)))
      return chain("mul", [conv(a) for a in args])
    if e.is_Pow:
      base, p = e.args
      if p.is_Rational:
        return power(conv(base), sympy.Rational(p))
      if base == sympy.E:
        return op("exp", conv(p))
      raise UnsupportedExpression(f"power with non-rational exponent: {e}")
    if e.func in _FUNCS and len(e.args) == 1:
      return op(_FUNCS[e.func], conv(e.args[0]))
    raise UnsupportedExpression(f"operator {e.func.__name__} is not among LEE's 15 operators")

  return conv(sympy.sympify(expr))


def parse_formula(text: str, names: Sequence[str]) -> sympy.Expr:
  """A formula string over the given variable names -> SymPy, with those names as real symbols.

  Names that collide with SymPy functions (e.g. `gamma`, `beta`, `E`) are still symbols
  here; a Python keyword (`lambda`) cannot be one (`formula_names` writes it `lambda_`).
  """
  local = {n: sympy.Symbol(n, real=True) for n in names}
  local.update({"pi": sympy.pi, "e": sympy.E} if "e" not in names else {"pi": sympy.pi})
  try:
    return sympy.sympify(text, locals=local)
  except (sympy.SympifyError, SyntaxError, TypeError) as err:
    raise UnsupportedExpression(f"cannot parse formula {text!r}: {err}") from None


def numpy_function(expr: sympy.Expr, names: Sequence[str]) -> Callable[[np.ndarray], np.ndarray]:
  """SymPy -> f(X [N, k]) -> y [N] in float64; quiet, with non-finite results as NaN."""
  syms = [sympy.Symbol(n, real=True) for n in names]
  expr = expr.subs({sympy.Symbol(n): s for n, s in zip(names, syms)})
  fn = sympy.lambdify(syms, expr, modules="numpy")

  def f(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X, np.float64)
    with np.errstate(all="ignore"):
      y = np.asarray(fn(*(X[:, i] for i in range(len(syms)))), dtype=np.complex128)
    y = np.broadcast_to(y, X.shape[:1])
    out = np.where(np.abs(y.imag) > 1e-12 * np.maximum(1.0, np.abs(y.real)), np.nan, y.real)
    return np.where(np.isfinite(out), out, np.nan)

  return f
