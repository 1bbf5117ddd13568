"""Tests for lee_jax.model and lee_jax.configs (CPU, `tiny` preset)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from lee_jax import configs
from lee_jax import model as M
from lee_jax import pipeline
from lee_jax import vocab

B = 4


@pytest.fixture(scope="module")
def cfg():
  return configs.get_model_config("tiny", dtype="float32")


@pytest.fixture(scope="module")
def batch():
  exs = [pipeline.make_example(i, np.random.default_rng(i), pipeline.DataConfig())
         for i in range(B)]
  return {k: np.stack([e[k] for e in exs]) for k in exs[0]}


@pytest.fixture(scope="module")
def lee(cfg):
  return M.LEE(cfg, rngs=nnx.Rngs(0))


def jitted(module, method):
  """jax.jit of module.<method> over its split state (the train-step pattern)."""
  graphdef, state = nnx.split(module)

  @functools.partial(jax.jit, static_argnames="has_rng")
  def f(state, *args, rng=None, has_rng=False):
    return getattr(nnx.merge(graphdef, state), method)(*args, rng=rng if has_rng else None)
  return lambda *args, rng=None: f(state, *args, rng=rng, has_rng=rng is not None)


@pytest.fixture(scope="module")
def fns(lee):
  return {m: jitted(lee, m) for m in ("encode", "encode_scatter", "decode_logits", "evaluate")}


@pytest.fixture(scope="module")
def encode(fns):
  return lambda *args: fns["encode"](*args)[1]


def test_get_model_config():
  assert configs.get_model_config("tiny", d_z=8).d_z == 8
  with pytest.raises(ValueError, match="valid names: paper, small, tiny"):
    configs.get_model_config("huge")


def test_resolve_attention():
  assert configs.resolve_attention("auto", "bfloat16", "gpu") == "cudnn"
  assert configs.resolve_attention("auto", "float32", "gpu") is None  # cuDNN needs 16-bit
  assert configs.resolve_attention("auto", "bfloat16", "cpu") is None
  assert configs.resolve_attention("xla", "bfloat16", "gpu") is None
  assert configs.resolve_attention("cudnn", "bfloat16", "cpu") == "cudnn"


def test_resolve_fused_refine():
  assert configs.resolve_fused_refine("auto", "gpu") and configs.resolve_fused_refine("on", "cpu")
  assert not configs.resolve_fused_refine("auto", "cpu")  # slower there (BUILD_NOTES)
  assert not configs.resolve_fused_refine("off", "gpu")
  with pytest.raises(ValueError, match="fused_refine must be one of"):
    configs.resolve_fused_refine("yes", "gpu")


def test_resolve_rng_impl():
  # auto: XLA's RngBitGenerator on a GPU (faster there, BUILD_NOTES), threefry on a CPU
  assert configs.resolve_rng_impl("auto", "gpu") == "rbg"
  assert configs.resolve_rng_impl("auto", "cpu") == "threefry"
  assert configs.resolve_rng_impl("unsafe_rbg", "cpu") == "unsafe_rbg"
  assert configs.resolve_rng_impl("threefry", "gpu") == "threefry"
  with pytest.raises(ValueError, match="rng_impl must be one of"):
    configs.resolve_rng_impl("philox", "gpu")


@pytest.mark.parametrize("t,s,causal,lengths", [
    (63, 63, True, None),  # the expression decoder's self-attention (the H100 error)
    (63, 4, False, None),  # its cross-attention to K=4 memory tokens
    (201, 201, False, (201, 150, 7)),  # encoder-like, padding expressed as lengths
])
def test_pad_attention_lengths_leaves_attention_unchanged(t, s, causal, lengths):
  q, k, v = (jax.random.normal(jax.random.key(i), (3, n, 2, 8))
             for i, n in ((0, t), (1, s), (2, s)))
  kv = None if lengths is None else jnp.array(lengths, jnp.int32)
  want = jax.nn.dot_product_attention(q, k, v, is_causal=causal, key_value_seq_lengths=kv)
  qp, kp, vp, kvp = M.pad_attention_lengths(q, k, v, kv)
  assert qp.shape[1] % 8 == 0 and kp.shape[1] % 8 == 0 and vp.shape == kp.shape
  got = jax.nn.dot_product_attention(qp, kp, vp, is_causal=causal, key_value_seq_lengths=kvp)
  np.testing.assert_allclose(got[:, :t], want, rtol=1e-5, atol=1e-6)


def test_param_counts():
  count = lambda name: M.count_params(
      nnx.eval_shape(lambda: M.LEE(configs.MODELS[name], rngs=nnx.Rngs(0))))
  assert count("tiny") < 1_000_000
  assert count("small") * 4 <= 48 * 2**20  # fp32 bytes


def test_shapes_and_dtypes(fns, cfg, batch):
  z, mu, logvar = fns["encode"](batch["tokens"], batch["x"], batch["y"], batch["point_mask"],
                             rng=jax.random.key(1))
  for a in (z, mu, logvar):
    assert a.shape == (B, cfg.d_z) and a.dtype == jnp.float32
  assert not np.allclose(z, mu)  # sampled
  logits = fns["decode_logits"](z, batch["tokens"])
  assert logits.shape == (B, cfg.max_len - 1, cfg.vocab_size) and logits.dtype == jnp.float32
  y_hat = fns["evaluate"](z, batch["query_x"])
  assert y_hat.shape == batch["query_y"].shape and np.all(np.isfinite(y_hat))


def test_deterministic_without_rng(fns, batch):
  args = (batch["tokens"], batch["x"], batch["y"], batch["point_mask"])
  z, mu, _ = fns["encode"](*args)
  np.testing.assert_array_equal(z, mu)
  z1 = fns["encode"](*args, rng=jax.random.key(3))[0]
  z2 = fns["encode"](*args, rng=jax.random.key(3))[0]
  np.testing.assert_array_equal(z1, z2)


def test_masked_inputs_are_invisible(encode, batch):
  tokens, x, y, pm = batch["tokens"], batch["x"], batch["y"], batch["point_mask"]
  mu = encode(tokens, x, y, pm)
  x2 = np.where(pm[..., None], x, 123.0).astype(np.float32)
  y2 = np.where(pm, y, np.nan).astype(np.float32)
  np.testing.assert_allclose(encode(tokens, x2, y2, pm), mu, rtol=1e-5, atol=1e-5)
  # Trailing PADs removed: same mu.
  n = int((tokens != vocab.PAD).sum(1).max())
  np.testing.assert_allclose(encode(tokens[:, :n], x, y, pm), mu, rtol=1e-5, atol=1e-5)


def test_scatter_only_matches_all_pad(fns, batch):
  x, y, pm = batch["x"], batch["y"], batch["point_mask"]
  pads = np.full_like(batch["tokens"], vocab.PAD)
  _, mu_pad, lv_pad = fns["encode"](pads, x, y, pm)
  _, mu_s, lv_s = fns["encode_scatter"](x, y, pm)
  np.testing.assert_allclose(mu_s, mu_pad, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(lv_s, lv_pad, rtol=1e-5, atol=1e-5)
  full = fns["encode"](batch["tokens"], x, y, pm)[1]
  assert not np.allclose(full, mu_s)


@pytest.mark.parametrize("dense", [True, False])
def test_lookup_is_an_exact_gather_either_way(dense):
  rng = np.random.default_rng(0)
  table = jnp.asarray(rng.normal(size=(7, 5)), jnp.float32)
  ids = jnp.asarray([[0, 6, -1], [3, 3, 2]], jnp.int32)
  out = M.lookup(table, ids, dense)
  np.testing.assert_array_equal(out[0, :2], table[jnp.asarray([0, 6])])
  np.testing.assert_array_equal(out[0, 2], 0.0)  # a negative id reads nothing
  np.testing.assert_array_equal(out[1], table[ids[1]])
  w = jnp.asarray(rng.normal(size=(2, 3, 5)), jnp.float32)
  grad = jax.grad(lambda t: jnp.sum(M.lookup(t, ids, dense) * w))(table)
  want = np.zeros((7, 5), np.float32)
  np.add.at(want, np.asarray([0, 6, 3, 3, 2]), np.asarray(w).reshape(6, 5)[[0, 1, 3, 4, 5]])
  np.testing.assert_allclose(grad, want, rtol=1e-6, atol=1e-6)
  dense_jaxpr = str(jax.make_jaxpr(jax.grad(lambda t: M.lookup(t, ids, dense).sum()))(table))
  assert ("scatter" in dense_jaxpr) != dense  # the dense form's gradient has no scatter


def test_embed_gathers_the_inputs_as_the_embeddings_would_be(lee, batch, monkeypatch):
  # The encoder reorders its inputs, not its embeddings (no scatter in the backward pass):
  # slot j must hold exactly the embedding of position order[j] of [tokens, points].
  enc, tokens, x, y = lee.encoder, batch["tokens"], batch["x"], batch["y"]
  n_tok, n = tokens.shape[1], tokens.shape[1] + x.shape[1]
  ident = np.broadcast_to(np.arange(n, dtype=np.int32), (B, n))
  h = np.asarray(enc.embed(tokens, x, y, ident))
  stream = np.asarray(enc.stream_embed[...])
  sym = (np.asarray(enc.token_embed[...])[tokens] + np.asarray(enc.pos_embed[...])[:n_tok]
         + stream[0])
  np.testing.assert_array_equal(h[:, :n_tok], sym)
  feats, code = M.point_features(x, y, enc.cfg.x_scale)
  finite = np.asarray(code) < 0
  num = np.asarray(enc.point_mlp(feats)) + stream[1]
  np.testing.assert_allclose(h[:, n_tok:][finite], num[finite], rtol=1e-6, atol=1e-6)
  order = np.stack([np.random.default_rng(b).permutation(n) for b in range(B)]).astype(np.int32)
  np.testing.assert_array_equal(enc.embed(tokens, x, y, order),
                                np.take_along_axis(h, order[..., None], axis=1))
  np.testing.assert_array_equal(enc.embed(tokens, x, y), h)  # no order: this one
  # the one-hot path (DENSE_TABLES, off by default) gives the same latents and logits
  z = lee.encode(tokens, x, y, batch["point_mask"])[1]
  logits = lee.decode_logits(z, tokens)
  monkeypatch.setattr(M, "DENSE_TABLES", True)
  np.testing.assert_array_equal(lee.encode(tokens, x, y, batch["point_mask"])[1], z)
  np.testing.assert_array_equal(lee.decode_logits(z, tokens), logits)


def test_nonfinite_points_give_finite_outputs_and_grads(lee, batch):
  tokens, x, pm = batch["tokens"], batch["x"], batch["point_mask"]
  y = np.array(batch["y"])
  idx = np.argmax(pm, axis=1)  # one masked-IN point per example
  y[0, idx[0]], y[1, idx[1]], y[2, idx[2]] = np.nan, np.inf, -np.inf
  x = np.array(x)
  x[3, idx[3], 0] = np.nan
  graphdef, params = nnx.split(lee, nnx.Param)

  def f(params):
    model = nnx.merge(graphdef, params)
    z, mu, logvar = model.encode(tokens, x, y, pm, rng=jax.random.key(0))
    return jnp.sum(mu) + jnp.sum(logvar) + jnp.sum(model.evaluate(z, batch["query_x"]))

  value, grads = jax.jit(jax.value_and_grad(f))(params)
  assert np.isfinite(value)
  assert all(np.all(np.isfinite(g)) for g in jax.tree.leaves(grads))
  assert np.any(np.asarray(grads["encoder"]["nonfinite_embed"][...]) != 0)


def test_kv_cache_decode_matches_teacher_forcing(lee, fns, cfg, batch):
  tokens = jnp.asarray(batch["tokens"])
  z = fns["encode"](tokens, batch["x"], batch["y"], batch["point_mask"], rng=jax.random.key(0))[0]
  graphdef, state = nnx.split(lee)

  @jax.jit
  def run(state, z, tokens):
    model = nnx.merge(graphdef, state)
    full = model.decode_logits(z, tokens)

    def step(cache, inp):
      tok, pos = inp
      logits, cache = model.decode_step(tok, pos, cache)
      return cache, logits

    inputs = tokens[:, :-1]
    positions = jnp.arange(inputs.shape[1], dtype=jnp.int32)
    _, stepped = jax.lax.scan(step, model.init_cache(z), (inputs.T, positions))
    return full, jnp.swapaxes(stepped, 0, 1)

  full, stepped = run(state, z, tokens)
  assert stepped.shape == (B, cfg.max_len - 1, cfg.vocab_size)
  np.testing.assert_allclose(stepped, full, rtol=1e-4, atol=1e-4)


def test_bf16_compute_runs(batch):
  cfg = configs.get_model_config("tiny")  # bfloat16 compute, fp32 params
  lee = M.LEE(cfg, rngs=nnx.Rngs(0))
  params = nnx.state(lee, nnx.Param)
  assert all(p.dtype == jnp.float32 for p in jax.tree.leaves(params))
  z, mu, logvar = jitted(lee, "encode")(batch["tokens"], batch["x"], batch["y"],
                                        batch["point_mask"])
  assert mu.dtype == jnp.float32 and np.all(np.isfinite(mu))
  logits = jitted(lee, "decode_logits")(z, batch["tokens"])
  assert logits.dtype == jnp.float32 and np.all(np.isfinite(logits))


def test_no_vae_variant(batch):
  cfg = configs.get_model_config("tiny", dtype="float32", use_vae=False)
  lee = M.LEE(cfg, rngs=nnx.Rngs(0))
  z, mu, logvar = jitted(lee, "encode")(batch["tokens"], batch["x"], batch["y"],
                                        batch["point_mask"], rng=jax.random.key(0))
  np.testing.assert_array_equal(z, mu)
  np.testing.assert_array_equal(logvar, 0.0)
  assert "logvar_head" not in nnx.state(lee, nnx.Param)["encoder"]


def test_trainable_filter_phase4(lee):
  params = nnx.state(lee, M.trainable_filter(configs.PHASES[4].trainable))
  assert set(params.keys()) == {"encoder"}
  assert M.count_params(lee) == sum(
      p.size for p in jax.tree.leaves(nnx.state(lee, M.trainable_filter())))


def test_with_params_builds_the_same_model_without_initialising(lee, cfg, batch):
  params = jax.tree.map(np.asarray, nnx.to_pure_dict(nnx.state(lee, nnx.Param)))
  built = M.with_params(cfg, params)
  for a, b in zip(jax.tree.leaves(nnx.state(lee, nnx.Param)), jax.tree.leaves(nnx.state(built, nnx.Param))):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)
  args = (batch["tokens"], batch["x"], batch["y"], batch["point_mask"])
  np.testing.assert_array_equal(lee.encode(*args)[0], built.encode(*args)[0])
  missing = jax.tree.map(lambda a: a, params)
  del missing["encoder"]["final_ln"]
  wrong = jax.tree.map(lambda a: a, params)
  wrong["encoder"]["token_embed"] = np.zeros((3, 3), np.float32)
  for bad, needle in ((missing, "do not fit the model config"), (wrong, r"shape \(3, 3\)")):
    with pytest.raises(ValueError, match=needle):
      M.with_params(cfg, bad)
