"""The stochastic expression grammar of paper App. F (after Lample & Charton and E2E).

A sample is built in four steps, all drawn from one `np.random.Generator`:
  1. a binary scaffold with b binary operators (b+1 leaves), grown by expanding a random leaf;
  2. leaves: every declared variable x0..x{k-1} on its own random leaf (coverage), the rest
     a variable (uniform over the declared set) or, with probability `p_const_leaf`, a
     constant from the mixture 60% integer / 30% log-uniform / 10% physics constant;
  3. u unary operators, each wrapped around a random node that contains a variable;
  4. rejection: resampled when under `min_finite` of a fixed query grid is finite (in
     float32), when it is constant on the grid, or when it needs more than `max_len` tokens.

Deviation (BUILD_NOTES.md): with k declared variables coverage needs b >= k-1 binary
operators, which b_max = 4 forbids for k > 5. b is drawn from [max(1, k-1), b_max] where
coverage leaves a leaf free (k <= 4), and from [k-1, k-1 + `spare_binary`] where it fills
every leaf b_max allows (k >= 5): with b = k-1 there, every leaf was a variable, and no
expression of 5 or more variables held a constant.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from lee_jax import evaluate
from lee_jax import expr as E
from lee_jax import vocab

# Catalogue of "physics" constants (the 10% branch of the constant mixture).
PHYSICS_CONSTANTS = (math.pi, math.e, 2 * math.pi, math.sqrt(2), math.sqrt(math.pi), 9.81)


@dataclasses.dataclass(frozen=True)
class GrammarConfig:
  """Knobs of the grammar; defaults follow App. F where it says, our choice where it is silent."""
  max_binary: int = 4  # b_max (raised to k-1 when k variables need more leaves)
  # Where coverage fills every leaf b_max allows (k > b_max), up to this many more binary
  # operators, whose leaves may be constants (ours: the paper's b_max cannot cover k > 5).
  spare_binary: int = 2
  max_unary: int = 4  # u_max
  max_variables: int = 10  # k is uniform over 1..max_variables
  p_const_leaf: float = 0.3  # non-coverage leaf -> constant (ours: the paper is silent)
  const_mixture: tuple[float, float, float] = (0.6, 0.3, 0.1)  # integer, log-uniform, physics
  int_range: int = 10  # integers in [-10, 10] without 0 (a 0 leaf degenerates the tree)
  log_range: tuple[float, float] = (1e-2, 1e2)
  binary_weights: tuple[float, ...] = (3.0, 2.0, 3.0, 2.0)  # add sub mul div
  unary_weights: tuple[float, ...] = (2, 2, 0.5, 0.5, 1, 1, 1, 2, 1, 0.5, 0.5)  # vocab.UNARY
  grid_points: int = 64  # fixed query grid per k, U(-10, 10)^k
  min_finite: float = 0.4  # log/sqrt of a variable are finite on ~half of U(-10,10)
  max_len: int = 64  # BOS + prefix + EOS must fit

  def __post_init__(self):
    assert len(self.binary_weights) == len(vocab.BINARY)
    assert len(self.unary_weights) == len(vocab.UNARY)
    assert 1 <= self.max_variables <= vocab.MAX_VARIABLES


@functools.lru_cache(maxsize=None)
def query_grid(k: int, points: int = 64) -> np.ndarray:
  """The fixed rejection grid for k variables (same for every sample and process)."""
  return np.random.default_rng(20260 + k).uniform(-10, 10, (points, k))


@functools.lru_cache(maxsize=None)
def _cdf(weights: tuple[float, ...]) -> np.ndarray:
  cdf = np.cumsum(np.asarray(weights, float) / sum(weights))
  return cdf / cdf[-1]


def _draw(rng: np.random.Generator, weights: tuple[float, ...]) -> int:
  """rng.choice(len(weights), p=normalised weights), the same draw from the same stream.

  Generator.choice(p=...) is one rng.random() searched in the cdf; doing that here skips
  choice's per-call validation of p, which was a tenth of the data pipeline's time.
  """
  return int(_cdf(weights).searchsorted(rng.random(), side="right"))


def sample_constant(rng: np.random.Generator, cfg: GrammarConfig) -> tuple[float, str]:
  """One constant from the mixture, rounded to its 3-significant-figure token form."""
  kind = _draw(rng, tuple(cfg.const_mixture))
  if kind == 0:
    v = float(rng.integers(1, cfg.int_range + 1) * rng.choice((-1, 1)))
    name = "integer"
  elif kind == 1:
    lo, hi = np.log(cfg.log_range)
    v = float(np.exp(rng.uniform(lo, hi)) * rng.choice((-1, 1)))
    name = "log-uniform"
  else:
    v = float(PHYSICS_CONSTANTS[rng.integers(len(PHYSICS_CONSTANTS))])
    name = "physics"
  return vocab.round_constant(v), name


def _scaffold(rng: np.random.Generator, n_binary: int) -> list:
  """Nested lists: a leaf is [], a binary node is [left, right]."""
  root: list = []
  leaves = [root]
  for _ in range(n_binary):
    leaf = leaves.pop(rng.integers(len(leaves)))
    leaf.extend([[], []])
    leaves.extend(leaf)
  return root


def binary_range(n_vars: int, cfg: GrammarConfig) -> tuple[int, int]:
  """[lo, hi) of the number of binary operators b for n_vars declared variables."""
  lo = max(1, n_vars - 1)
  hi = cfg.max_binary if lo < cfg.max_binary else lo + cfg.spare_binary
  return lo, hi + 1


def sample_tree(rng: np.random.Generator, n_vars: int, cfg: GrammarConfig) -> E.Node:
  """One unfiltered draw over variables x0..x{n_vars-1} (see module docstring)."""
  n_binary = int(rng.integers(*binary_range(n_vars, cfg)))
  n_leaves = n_binary + 1
  # Leaves: coverage first, then variables or constants.
  leaves: list[E.Node] = [E.var(i) for i in range(n_vars)]
  for _ in range(n_leaves - n_vars):
    if rng.random() < cfg.p_const_leaf:
      leaves.append(E.const(sample_constant(rng, cfg)[0]))
    else:
      leaves.append(E.var(int(rng.integers(n_vars))))
  order = rng.permutation(n_leaves)
  leaves = [leaves[i] for i in order]
  def build(shape: list) -> E.Node:
    if not shape:
      return leaves.pop()
    left, right = build(shape[0]), build(shape[1])
    if left.name == "const" and right.name == "const":  # two constants fold into one
      right = E.var(int(rng.integers(n_vars)))
    return E.op(vocab.BINARY[_draw(rng, cfg.binary_weights)], left, right)

  tree = build(_scaffold(rng, n_binary))
  for _ in range(int(rng.integers(0, cfg.max_unary + 1))):
    tree = _wrap_random_node(rng, tree, vocab.UNARY[_draw(rng, cfg.unary_weights)])
  return tree


def _wrap_random_node(rng: np.random.Generator, tree: E.Node, unary: str) -> E.Node:
  """Wrap `unary` around a random variable-bearing node, never directly inside or around itself."""
  nodes: list[E.Node | None] = []  # candidates in prefix order (None: not one)

  def visit(n: E.Node, parent: str | None) -> bool:
    """One pass: has n a variable below it? Appends n (pre-order slot) when it qualifies."""
    slot = len(nodes)
    nodes.append(n)
    found = vocab.is_variable(n.name)
    for c in n.children:
      found = visit(c, n.name) or found
    if not (found and n.name != unary and parent != unary):
      nodes[slot] = None
    return found

  visit(tree, None)
  nodes = [n for n in nodes if n is not None]
  target = nodes[rng.integers(len(nodes))] if nodes else None
  done = False

  def rebuild(n: E.Node) -> E.Node:
    nonlocal done
    if n is target and not done:
      done = True
      return E.op(unary, n)
    if not n.children:
      return n
    return E.Node(n.name, tuple(rebuild(c) for c in n.children), n.value)

  return rebuild(tree) if target is not None else tree


def acceptable(tree: E.Node, n_vars: int, cfg: GrammarConfig) -> bool:
  """The rejection rule of step 4."""
  if len(E.to_prefix(tree)) + 2 > cfg.max_len:
    return False
  y = evaluate.evaluate_numpy(tree, query_grid(n_vars, cfg.grid_points))
  finite = np.isfinite(y) & (np.abs(y) < np.finfo(np.float32).max)
  if finite.mean() < cfg.min_finite:
    return False
  return bool(np.ptp(y[finite]) > 1e-9)


def sample(rng: np.random.Generator, cfg: GrammarConfig = GrammarConfig(),
           n_vars: int | None = None) -> tuple[E.Node, int]:
  """An accepted expression and its number of declared variables k."""
  if n_vars is None:
    n_vars = int(rng.integers(1, cfg.max_variables + 1))
  while True:
    tree = sample_tree(rng, n_vars, cfg)
    if acceptable(tree, n_vars, cfg):
      return tree, n_vars
