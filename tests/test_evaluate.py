import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lee_jax import evaluate, grammar, vocab
from lee_jax import expr as E

B, L, N = 256, 64, 50


@pytest.fixture(scope="module")
def batch():
  rng = np.random.default_rng(0)
  trees = [grammar.sample(rng)[0] for _ in range(B)]
  ids = np.stack([E.to_ids(t, L) for t in trees])
  X = rng.uniform(-10, 10, (N, 10))
  return trees, ids, X


def _numpy_batch(trees, X):
  return np.stack([evaluate.evaluate_numpy(t, X) for t in trees])


def _well_conditioned(trees, X, rel, tol):
  """Points where a relative input perturbation `rel` moves the value by less than `tol`.

  cos(exp(x**2)) at x=9 is cos(1e35): any two correct float implementations disagree there.
  """
  y0 = _numpy_batch(trees, X)
  y1 = _numpy_batch(trees, X * (1 + rel))
  return np.isfinite(y0) & np.isclose(y0, y1, rtol=tol, atol=tol)


def test_jax_float64_matches_numpy_exactly_where_finite(batch):
  trees, ids, X = batch
  want = _numpy_batch(trees, X)
  with jax.enable_x64(True):
    idj = jnp.asarray(ids)
    y, ok = evaluate.evaluate_jax(idj, evaluate.constant_values(idj).astype(jnp.float64),
                                  jnp.broadcast_to(jnp.asarray(X), (B, N, 10)))
  y = np.asarray(y)
  assert np.all(np.asarray(ok))
  np.testing.assert_array_equal(np.isnan(y), np.isnan(want))
  good = _well_conditioned(trees, X, 1e-13, 1e-10)
  assert good.mean() > 0.5
  np.testing.assert_allclose(y[good], want[good], rtol=1e-9, atol=1e-12)


def test_jax_float32_agrees_with_numpy(batch):
  trees, ids, X = batch
  want = _numpy_batch(trees, X)
  y, ok = evaluate.evaluate_ids(ids, X)
  assert np.all(ok)
  good = _well_conditioned(trees, X, 1e-6, 1e-4) & (np.abs(want) < 1e30)
  assert good.mean() > 0.5
  # float32 intermediates overflow earlier than float64 ones (exp(100) / exp(99)).
  both = good & np.isfinite(y)
  assert both.sum() > 0.98 * good.sum()
  close = np.isclose(y[both], want[both], rtol=2e-3, atol=1e-3)
  # A handful of points sit where float32 rounding of X itself changes the value.
  assert close.mean() > 0.999, np.argwhere(~close)[:5]


def test_sympy_agrees_with_numpy(batch):
  trees, _, X = batch
  names = [f"x{i}" for i in range(10)]
  for tree in trees[:64]:
    f = E.numpy_function(E.to_sympy(tree), names)
    a, b = f(X), evaluate.evaluate_numpy(tree, X)
    both = np.isfinite(a) & np.isfinite(b)
    np.testing.assert_allclose(a[both], b[both], rtol=1e-7, atol=1e-9, err_msg=str(tree))


def test_constant_values_decodes_every_constant(batch):
  trees, ids, _ = batch
  vals = np.asarray(evaluate.constant_values(jnp.asarray(ids)))
  for tree, v in zip(trees, vals):
    starts, pos = [], 1  # position 0 is BOS
    for node in E.walk(tree):
      if node.name == "const":
        starts.append(pos)
      pos += vocab.CONST_LEN if node.name == "const" else 1
    np.testing.assert_allclose(v[starts], E.constants(tree), rtol=1e-6)
    assert np.all(np.delete(v, starts) == 1.0)


def test_constant_values_beyond_float32_are_infinite_not_one():
  ids = jnp.asarray([E.to_ids(E.op("mul", E.const(-2e50), E.var(0)), 16),
                     E.to_ids(E.op("mul", E.const(3e-50), E.var(0)), 16)])
  vals = np.asarray(evaluate.constant_values(ids))  # float32: 2e50 read as 1.0 before
  assert vals[0, 2] == -np.inf and vals[1, 2] == 0.0
  assert np.all(np.delete(vals, 2, axis=1) == 1.0)


def test_invalid_sequences_give_nan_and_invalid():
  t = vocab.TOKEN_TO_ID
  rows = [
      [vocab.BOS, t["add"], t["x0"], vocab.EOS],
      [vocab.BOS, t["x0"], t["x1"], vocab.EOS],
      [vocab.BOS, t["+"], t["3"], t["."], vocab.EOS],
      [vocab.BOS, t["7"], vocab.EOS],
      [vocab.BOS, vocab.MASK_ID, vocab.EOS],
      [vocab.BOS, t["x0"]],  # no EOS
      [t["x0"], vocab.EOS],  # no BOS
      [vocab.BOS, vocab.EOS],
      [vocab.BOS, t["x5"], vocab.EOS],  # variable beyond X's 3 columns
  ]
  ids = np.array([r + [vocab.PAD] * (16 - len(r)) for r in rows], np.int32)
  y, ok = evaluate.evaluate_ids(ids, np.ones((4, 3)))
  assert not ok.any()
  assert np.isnan(y).all()


def test_tokens_after_eos_are_ignored():
  t = vocab.TOKEN_TO_ID
  ids = np.array([[vocab.BOS, t["sq"], t["x0"], vocab.EOS, t["x1"], t["add"], 0, 0]], np.int32)
  y, ok = evaluate.evaluate_ids(ids, np.array([[3.0, 1.0]]))
  assert ok[0] and y[0, 0] == 9.0


def test_gradient_in_constants_matches_finite_differences():
  tree = E.from_prefix("add mul C sin x0 div C sqrt x1".split())
  ids = jnp.asarray(E.to_ids(tree, 16))[None]
  X = jnp.asarray(np.random.default_rng(2).uniform(0.5, 3, (1, 20, 2)), jnp.float32)
  y_true = 2.0 * jnp.sin(X[0, :, 0]) + 3.0 / jnp.sqrt(X[0, :, 1])

  def loss(c):
    consts = jnp.zeros((1, 16)).at[0, 3].set(c[0]).at[0, 7].set(c[1])  # the two C positions
    y, _ = evaluate.evaluate_jax(ids, consts, X)
    return jnp.mean((y[0] - y_true) ** 2)

  c = jnp.array([1.0, 1.0])
  g = jax.grad(loss)(c)
  eps = 1e-2
  fd = [(loss(c + eps * e) - loss(c - eps * e)) / (2 * eps) for e in jnp.eye(2)]
  assert np.all(np.abs(np.asarray(g)) > 0.1)
  np.testing.assert_allclose(g, fd, rtol=1e-2)
  assert loss(jnp.array([2.0, 3.0])) < 1e-10


def test_gradient_is_finite_when_other_branches_are_singular():
  # log / sqrt / div are evaluated on every step; at x = 0 their unselected branches must
  # not poison the gradient of an expression that does not use them.
  tree = E.from_prefix("mul C x0".split())
  ids = jnp.asarray(E.to_ids(tree, 8))[None]
  X = jnp.zeros((1, 4, 1))
  g = jax.grad(lambda c: jnp.sum(evaluate.evaluate_jax(ids, jnp.full((1, 8), c), X)[0]))(1.0)
  assert np.isfinite(g)


def test_numpy_evaluator_is_protected():
  X = np.array([[0.0], [-1.0], [1000.0]])
  for prefix in ["log x0", "div + 1 . 0 0 e + 0 0 x0", "exp x0", "sqrt x0"]:
    y = evaluate.evaluate_numpy(E.from_prefix(prefix.split()), X)
    assert np.all(np.isfinite(y) | np.isnan(y))
  assert np.isnan(evaluate.evaluate_numpy(E.from_prefix("exp x0".split()), X)[2])
  with pytest.raises(ValueError, match="x3"):
    evaluate.evaluate_numpy(E.from_prefix("x3".split()), X)


def test_jax_function_matches_numpy_and_differentiates_in_its_constants(batch):
  trees, _, X = batch
  good = _well_conditioned(trees, X, 1e-13, 1e-10)
  assert good[:64].mean() > 0.5
  with jax.enable_x64(True):
    for tree, ok in zip(trees[:64], good):
      f, params = evaluate.jax_function(tree)
      assert params.shape == (len(E.constants(tree)),) and params.dtype == jnp.float64
      want, got = evaluate.evaluate_numpy(tree, X), np.asarray(jax.jit(f)(X, params))
      np.testing.assert_array_equal(np.isfinite(got[ok]), True)
      np.testing.assert_allclose(got[ok], want[ok], rtol=1e-9, atol=1e-12, err_msg=str(tree))
  # Constants are inputs: refitting 2 sin(x0) + 3 / sqrt(x1) from C = 1 by gradient descent.
  f, p = evaluate.jax_function(E.from_prefix("add mul C sin x0 div C sqrt x1".split()))
  Xs = np.random.default_rng(2).uniform(0.5, 3, (40, 2)).astype(np.float32)
  y = 2.0 * np.sin(Xs[:, 0]) + 3.0 / np.sqrt(Xs[:, 1])
  loss = jax.jit(lambda c: jnp.mean((f(Xs, c) - y) ** 2))
  np.testing.assert_array_equal(p, [1.0, 1.0])
  for _ in range(300):
    p = p - 0.2 * jax.grad(loss)(p)
  np.testing.assert_allclose(p, [2.0, 3.0], rtol=1e-3)
  with pytest.raises(ValueError, match="k >= 2"):
    f(Xs[:, :1], p)
