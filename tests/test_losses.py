"""Tests for lee_jax.losses: each term against NumPy, stop-gradients, and a short overfit."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from lee_jax import configs
from lee_jax import losses
from lee_jax import model as M
from lee_jax import pipeline
from lee_jax import vocab


@pytest.fixture(scope="module")
def batch():
  data = pipeline.DataConfig(n_points=64, min_points=32, n_query=32)  # small: fast on CPU
  exs = [pipeline.make_example(i, np.random.default_rng(100 + i), data) for i in range(8)]
  return {k: np.stack([e[k] for e in exs]) for k in exs[0]}


def _rand(seed, *shape):
  return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def test_expr_loss_matches_numpy():
  logits = _rand(0, 2, 5, 7)
  targets = np.array([[3, 1, 4, vocab.PAD, vocab.PAD], [2, 2, 6, 5, vocab.PAD]], np.int32)
  logits[0, 0, 3] = 10.0  # one confident correct prediction
  loss, acc = losses.expr_loss(jnp.asarray(logits), jnp.asarray(targets))
  logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  keep = targets != vocab.PAD
  nll = -np.take_along_axis(logp, targets[..., None], -1)[..., 0]
  np.testing.assert_allclose(loss, nll[keep].mean(), rtol=1e-5)
  np.testing.assert_allclose(acc, (logits.argmax(-1) == targets)[keep].mean(), rtol=1e-6)
  np.testing.assert_allclose(losses.refine_loss(logits, targets)[0], loss)


def test_eval_loss_ignores_nonfinite_targets_with_finite_grads():
  y_hat = jnp.asarray([[1.0, 2.0, 3.0, 0.5], [10.0, -4.0, 0.0, 7.0]])
  y = np.array([[0.5, np.nan, 30.0, np.inf], [8.0, -np.inf, 0.2, -300.0]], np.float32)
  keep = np.isfinite(y)
  yk = y[keep].astype(np.float64)
  expect = (np.abs(np.asarray(y_hat)[keep] - yk) / np.maximum(np.abs(yk), 1.0)).mean()
  np.testing.assert_allclose(losses.eval_loss(y_hat, jnp.asarray(y)), expect, rtol=1e-5)
  g = jax.grad(losses.eval_loss)(y_hat, jnp.asarray(y))
  assert np.all(np.isfinite(g))
  np.testing.assert_array_equal(np.asarray(g)[~keep], 0.0)
  assert np.all(np.asarray(g)[keep] != 0.0)
  # Opposite-sign values near float32 max: |y_hat - y| would overflow, the loss must not.
  big = losses.eval_loss(jnp.asarray([[3e38]]), jnp.asarray([[-3e38]]))
  np.testing.assert_allclose(big, 2.0, rtol=1e-6)


def test_kl_and_znorm_match_numpy():
  mu, logvar = _rand(1, 3, 4), _rand(2, 3, 4)
  expect = (0.5 * (mu**2 + np.exp(logvar) - 1 - logvar)).sum(-1).mean()
  np.testing.assert_allclose(losses.kl_loss(mu, logvar), expect, rtol=1e-5)
  np.testing.assert_allclose(losses.kl_loss(np.zeros((2, 3)), np.zeros((2, 3))), 0.0)
  np.testing.assert_allclose(losses.znorm_loss(mu), (mu**2).sum(-1).mean(), rtol=1e-5)


def test_align_loss_matches_numpy_and_stops_gradient_into_p():
  mq, lq, mp, lp = (_rand(s, 3, 4) for s in range(10, 14))
  expect = 0.5 * (lp - lq + (np.exp(lq) + (mq - mp) ** 2) / np.exp(lp) - 1)
  np.testing.assert_allclose(losses.align_loss(mq, lq, mp, lp), expect.sum(-1).mean(),
                             rtol=1e-5)
  np.testing.assert_allclose(losses.align_loss(mq, lq, mq, lq), 0.0, atol=1e-6)
  grads = jax.grad(losses.align_loss, argnums=(0, 1, 2, 3))(mq, lq, mp, lp)
  assert np.any(grads[0] != 0) and np.any(grads[1] != 0)
  np.testing.assert_array_equal(grads[2], 0.0)
  np.testing.assert_array_equal(grads[3], 0.0)


def test_align_loss_p_to_q_is_the_reverse_kl_with_gradient_only_into_p():
  mq, lq, mp, lp = (_rand(s, 3, 4) for s in range(10, 14))
  np.testing.assert_allclose(losses.align_loss(mq, lq, mp, lp, "p_to_q"),
                             losses.gaussian_kl(mq, lq, mp, lp), rtol=1e-6)
  grads = jax.grad(lambda *a: losses.align_loss(*a, direction="p_to_q"),
                   argnums=(0, 1, 2, 3))(mq, lq, mp, lp)
  np.testing.assert_array_equal(grads[0], 0.0)
  np.testing.assert_array_equal(grads[1], 0.0)
  assert np.any(grads[2] != 0) and np.any(grads[3] != 0)
  with pytest.raises(ValueError, match="align direction"):
    losses.align_loss(mq, lq, mp, lp, "both")


@pytest.fixture(scope="module")
def tiny_cfg():
  return configs.get_model_config("tiny", dtype="float32")


@pytest.mark.slow
def test_scatter_only_branch_gets_no_gradient(tiny_cfg, batch):
  lee = M.LEE(tiny_cfg, rngs=nnx.Rngs(0))
  graphdef, params = nnx.split(lee, nnx.Param)
  x, y, pm = batch["x"], batch["y"], batch["point_mask"]
  mq, lq = _rand(20, 8, tiny_cfg.d_z), _rand(21, 8, tiny_cfg.d_z)

  def through_p_branch(params):
    _, mu_p, logvar_p = nnx.merge(graphdef, params).encode_scatter(x, y, pm)
    return losses.align_loss(mq, lq, mu_p, logvar_p)

  grads = jax.jit(jax.grad(through_p_branch))(params)
  assert all(np.all(np.asarray(g) == 0) for g in jax.tree.leaves(grads))

  # total_loss with only the align term: gradient equals the q-branch-only gradient.
  weights = configs.LossWeights(expr=0.0, eval=0.0, kl=0.0, align=1.0, refine=0.0)
  total = lambda p: losses.total_loss(nnx.merge(graphdef, p), batch, None, weights,
                                      tiny_cfg)[0]
  # (jitted: eagerly each op compiles on its own, ~190 programs, 20 s on 2 cores)
  _, mu_p, lv_p = jax.jit(lambda p: nnx.merge(graphdef, p).encode_scatter(x, y, pm))(params)

  def q_only(p):
    _, mu, lv = nnx.merge(graphdef, p).encode(batch["tokens"], x, y, pm)
    return losses.gaussian_kl(mu, lv, mu_p, lv_p)

  g_total, g_q = jax.jit(lambda p: (jax.grad(total)(p), jax.grad(q_only)(p)))(params)
  # float32 through two graphs: on one CPU model an element differed by 1.8e-4 of itself,
  # so the tolerance is 1e-4 of each leaf's largest entry (measured: the worst leaf is off by
  # 1.5e-6 of it; without the stop-gradient, by 1.8x).
  for a, b in zip(jax.tree.leaves(g_total), jax.tree.leaves(g_q)):
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-4 * float(np.max(np.abs(b))) + 1e-9)

  # The p_to_q deviation: the same term's gradient is the p-branch-only one instead.
  rev = dataclasses.replace(weights, align_direction="p_to_q")
  total_rev = lambda p: losses.total_loss(nnx.merge(graphdef, p), batch, None, rev, tiny_cfg)[0]
  _, mu_q, lv_q = jax.jit(lambda p: nnx.merge(graphdef, p).encode(batch["tokens"], x, y, pm))(params)

  def p_only(p):
    _, mu, lv = nnx.merge(graphdef, p).encode_scatter(x, y, pm)
    return losses.gaussian_kl(mu_q, lv_q, mu, lv)

  g_rev, g_p = jax.jit(lambda p: (jax.grad(total_rev)(p), jax.grad(p_only)(p)))(params)
  assert any(np.any(np.asarray(g) != 0) for g in jax.tree.leaves(g_p))
  for a, b in zip(jax.tree.leaves(g_rev), jax.tree.leaves(g_p)):  # float32 sums of large KLs
    np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)


def test_total_loss_skips_zero_weight_terms(tiny_cfg, batch):
  lee = M.LEE(tiny_cfg, rngs=nnx.Rngs(0))
  total = lambda w, cfg=tiny_cfg: jax.eval_shape(
      lambda: losses.total_loss(lee, batch, jax.random.key(0), w, cfg))[1].keys()
  assert set(total(configs.PHASES[1].weights)) == {"loss", "expr", "expr_acc", "eval", "kl"}
  assert set(total(configs.PHASES[4].weights)) == {"loss", "kl", "align"}
  assert set(total(configs.PHASES[3].weights)) == {
      "loss", "expr", "expr_acc", "eval", "kl", "align", "refine", "refine_acc"}
  no_vae = configs.get_model_config("tiny", dtype="float32", use_vae=False)
  graphdef, state = nnx.split(M.LEE(no_vae, rngs=nnx.Rngs(0)))
  loss, metrics = jax.jit(lambda s: losses.total_loss(
      nnx.merge(graphdef, s), batch, jax.random.key(0), configs.PHASES[5].weights, no_vae))(state)
  assert np.isfinite(loss) and "znorm" in metrics and "align" not in metrics


@pytest.mark.slow
def test_fused_refine_passes_are_the_same_terms(tiny_cfg, batch):
  # One encoder call over [tokens; corrupted] and one decoder call over both latents: without
  # rng (no dropout, z = mu) every term and the gradient equal the separate calls'.
  graphdef, params = nnx.split(M.LEE(tiny_cfg, rngs=nnx.Rngs(0)))
  weights = configs.PHASES[3].weights  # every term; phases without L_refine never fuse
  run = lambda fused: jax.jit(jax.value_and_grad(
      lambda p: losses.total_loss(nnx.merge(graphdef, p), batch, None, weights, tiny_cfg,
                                  fused=fused), has_aux=True))(params)
  (_, metrics), grads = run(False)
  (_, metrics_f), grads_f = run(True)
  assert metrics_f.keys() == metrics.keys()
  for k in metrics:
    np.testing.assert_allclose(metrics_f[k], metrics[k], rtol=1e-5, err_msg=k)
  for a, b in zip(jax.tree.leaves(grads_f), jax.tree.leaves(grads)):
    np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3)
  assert metrics["refine"] != metrics["expr"]  # the corrupted latent decodes apart


@pytest.mark.slow
def test_overfit_one_batch(batch):
  cfg = configs.get_model_config("tiny", dtype="float32", dropout=0.0)
  weights = configs.PHASES[1].weights
  lee = M.LEE(cfg, rngs=nnx.Rngs(0))
  graphdef, params, rest = nnx.split(lee, nnx.Param, ...)
  tx = optax.adamw(1e-3)
  batch = jax.tree.map(jnp.asarray, batch)

  @functools.partial(jax.jit, donate_argnums=(0, 1))
  def step(params, opt_state, key):
    def loss_fn(p):
      return losses.total_loss(nnx.merge(graphdef, p, rest), batch, key, weights, cfg)
    (loss, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, metrics

  opt_state = tx.init(params)
  history = []
  for i in range(200):
    params, opt_state, metrics = step(params, opt_state, jax.random.key(i))
    history.append(float(metrics["loss"]))
    if i >= 10 and np.mean(history[-5:]) < 0.5 * np.mean(history[:5]):
      break  # criterion met; the remaining steps would only cost test time
  assert np.all(np.isfinite(history))
  first, last = np.mean(history[:5]), np.mean(history[-5:])
  assert last < 0.5 * first, (first, last, len(history))


@pytest.mark.slow
def test_align_target_supplies_p_and_gets_no_gradient(tiny_cfg, batch):
  # The trainer's EMA target: a second module (here another init) computes p(z|D).
  lee, other = M.LEE(tiny_cfg, rngs=nnx.Rngs(0)), M.LEE(tiny_cfg, rngs=nnx.Rngs(1))
  graphdef, params = nnx.split(lee, nnx.Param)
  _, tparams = nnx.split(other, nnx.Param)
  x, y, pm = batch["x"], batch["y"], batch["point_mask"]
  weights = configs.LossWeights(expr=0.0, eval=0.0, kl=0.0, align=1.0, refine=0.0)

  def total(p, tp):
    return losses.total_loss(nnx.merge(graphdef, p), batch, None, weights, tiny_cfg,
                             align_target=nnx.merge(graphdef, tp))

  (value, metrics), (g_p, g_t) = jax.jit(jax.value_and_grad(total, argnums=(0, 1), has_aux=True))(
      params, tparams)
  _, mu_q, lv_q = lee.encode(batch["tokens"], x, y, pm)
  _, mu_p, lv_p = other.encode_scatter(x, y, pm)
  _, mu_self, lv_self = lee.encode_scatter(x, y, pm)
  np.testing.assert_allclose(metrics["align"], losses.gaussian_kl(mu_q, lv_q, mu_p, lv_p), rtol=1e-5)
  assert abs(float(metrics["align"]) - float(losses.gaussian_kl(mu_q, lv_q, mu_self, lv_self))) > 1e-3
  assert all(np.all(np.asarray(g) == 0) for g in jax.tree.leaves(g_t))
  assert any(np.any(np.asarray(g) != 0) for g in jax.tree.leaves(g_p))
  with pytest.raises(ValueError, match="q_to_p"):
    losses.total_loss(lee, batch, None, dataclasses.replace(weights, align_direction="p_to_q"),
                      tiny_cfg, align_target=other)


def test_held_out_metrics_probe_both_encodings(tiny_cfg, batch):
  lee = M.LEE(tiny_cfg, rngs=nnx.Rngs(0))
  got = losses.held_out_metrics(lee, batch, tiny_cfg)
  x, y, pm, t = batch["x"], batch["y"], batch["point_mask"], batch["tokens"]
  _, mu, lv = lee.encode(t, x, y, pm)
  _, mu_p, lv_p = lee.encode_scatter(x, y, pm)
  np.testing.assert_allclose(got["val_expr_acc"], losses.expr_loss(lee.decode_logits(mu, t), t[:, 1:])[1])
  np.testing.assert_allclose(got["val_scatter_acc"],
                             losses.expr_loss(lee.decode_logits(mu_p, t), t[:, 1:])[1])
  np.testing.assert_allclose(got["val_align"], losses.gaussian_kl(mu, lv, mu_p, lv_p), rtol=1e-5)
  novae = dataclasses.replace(tiny_cfg, use_vae=False)
  assert "val_align" not in losses.held_out_metrics(M.LEE(novae, rngs=nnx.Rngs(0)), batch, novae)
