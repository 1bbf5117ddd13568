import collections

import numpy as np
import pytest

from lee_jax import evaluate, grammar, vocab
from lee_jax import expr as E

CFG = grammar.GrammarConfig()


@pytest.fixture(scope="module")
def samples():
  rng = np.random.default_rng(123)
  return [grammar.sample(rng, CFG) for _ in range(3000)]


def test_operator_counts_within_bounds(samples):
  for tree, k in samples:
    names = [n.name for n in E.walk(tree)]
    n_bin = sum(n in vocab.BINARY for n in names)
    n_un = sum(n in vocab.UNARY for n in names)
    assert max(1, k - 1) <= n_bin
    # the paper's b_max where coverage leaves room; else up to spare_binary past k-1
    assert n_bin <= (CFG.max_binary if k <= CFG.max_binary else k - 1 + CFG.spare_binary)
    assert 0 <= n_un <= CFG.max_unary
    assert len(E.to_prefix(tree)) + 2 <= CFG.max_len


def test_many_variables_still_get_constants(samples):
  # b = k-1 for k >= 5 filled every leaf with a variable: no constant in 60% of the corpus.
  with_const = collections.defaultdict(list)
  for tree, k in samples:
    with_const[k].append(any(n.name == "const" for n in E.walk(tree)))
  for k in range(5, 11):
    assert 0.1 < np.mean(with_const[k]) < 0.5, k
  assert grammar.binary_range(4, CFG) == (3, CFG.max_binary + 1)  # the paper's bound holds


def test_every_declared_variable_appears(samples):
  for tree, k in samples:
    assert E.variables_used(tree) == set(range(k))


def test_variable_count_is_uniform(samples):
  counts = collections.Counter(k for _, k in samples)
  assert set(counts) == set(range(1, 11))
  assert min(counts.values()) > 0.6 * len(samples) / 10


def test_samples_are_finite_enough_and_not_constant(samples):
  for tree, k in samples[:500]:
    y = evaluate.evaluate_numpy(tree, grammar.query_grid(k))
    fin = np.isfinite(y)
    assert fin.mean() >= CFG.min_finite
    assert np.ptp(y[fin]) > 1e-9


def test_constant_mixture_proportions():
  rng = np.random.default_rng(7)
  kinds = collections.Counter(grammar.sample_constant(rng, CFG)[1] for _ in range(20000))
  for kind, p in zip(("integer", "log-uniform", "physics"), CFG.const_mixture):
    assert abs(kinds[kind] / 20000 - p) < 0.015, kinds


def test_constant_ranges():
  rng = np.random.default_rng(8)
  for _ in range(3000):
    v, kind = grammar.sample_constant(rng, CFG)
    assert vocab.round_constant(v) == v
    if kind == "integer":
      assert v == int(v) and 1 <= abs(v) <= 10
    elif kind == "log-uniform":
      assert 1e-2 * 0.995 <= abs(v) <= 1e2 * 1.005
    else:
      assert any(abs(v - vocab.round_constant(c)) == 0 for c in grammar.PHYSICS_CONSTANTS)


def test_unary_operators_all_used_and_not_self_nested(samples):
  seen = collections.Counter()
  for tree, _ in samples:
    for n in E.walk(tree):
      if n.name in vocab.UNARY:
        seen[n.name] += 1
        assert n.children[0].name != n.name
  assert set(seen) == set(vocab.UNARY)


def test_same_seed_same_expression():
  a = grammar.sample(np.random.default_rng(5), CFG)
  b = grammar.sample(np.random.default_rng(5), CFG)
  assert a == b


def test_draw_matches_generator_choice():
  # _draw replaces rng.choice(n, p=w) for speed; it must consume and return the same draws,
  # or the training stream (and every resumed run's data position) would change.
  for weights in (grammar.GrammarConfig().unary_weights, (0.6, 0.3, 0.1), (3.0, 2.0, 3.0, 2.0)):
    a, b = np.random.default_rng(11), np.random.default_rng(11)
    p = np.asarray(weights) / sum(weights)
    got = [grammar._draw(a, tuple(weights)) for _ in range(2000)]
    want = [int(b.choice(len(weights), p=p)) for _ in range(2000)]
    assert got == want
    assert a.random() == b.random()  # both streams are at the same position afterwards


def test_wrap_random_node_only_wraps_variable_bearing_nodes():
  rng = np.random.default_rng(0)
  # add(const, x0): only the add node and x0 carry a variable.
  tree = E.op("add", E.const(2.0), E.var(0))
  seen = set()
  for _ in range(200):
    wrapped = grammar._wrap_random_node(rng, tree, "sin")
    inner = [n for n in E.walk(wrapped) if n.name == "sin"]
    assert len(inner) == 1
    seen.add(str(inner[0].children[0]))
  assert seen == {str(tree), "x0"}
