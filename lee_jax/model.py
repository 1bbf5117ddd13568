"""The LEE network: encoder, expression decoder, evaluation decoder (paper §3.1-3.3, App. G).

Conventions:
  * Randomness is explicit: every forward method takes `rng: jax.Array | None`; None means
    deterministic (no dropout, z = mu). No nnx.Rngs is stored or consumed after __init__, so
    a train step over `nnx.split(model, nnx.Param, ...)` is a pure function.
  * Params are param_dtype (fp32); transformer matmuls run in cfg.dtype (bf16 by default).
    Layer-norm statistics and attention softmax are fp32; the point/query MLP input layers,
    the final layer norms, the latent heads, the vocab head and the eval output MLP run
    entirely in fp32 (they are small, and they touch raw numbers or losses).
  * Attention is `jax.nn.dot_product_attention` with fused QKV (self) / KV (cross)
    projections; key padding is expressed as `key_value_seq_lengths`, which both the XLA and
    the cuDNN backends accept (the encoder compacts valid positions to the front for this).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from lee_jax import configs
from lee_jax import vocab

_EMBED_INIT = nnx.initializers.normal(stddev=0.02)
_SYMEXP_MAX = 80.0  # expm1(80) ~ 5.5e34 stays finite in fp32


def symlog(u: jax.Array) -> jax.Array:
  """sign(u) * log(1 + |u|), the paper's log-compression (§3.1)."""
  return jnp.sign(u) * jnp.log1p(jnp.abs(u))


def symexp(v: jax.Array) -> jax.Array:
  """Inverse of symlog; |v| is clipped so the result stays finite."""
  v = jnp.clip(v, -_SYMEXP_MAX, _SYMEXP_MAX)
  return jnp.sign(v) * jnp.expm1(jnp.abs(v))


def dropout(x: jax.Array, rate: float, rng: jax.Array | None) -> jax.Array:
  """Inverted dropout; identity when rng is None or rate == 0."""
  if rng is None or rate == 0.0:
    return x
  keep = jax.random.bernoulli(rng, 1.0 - rate, x.shape)
  return jnp.where(keep, x / (1.0 - rate), 0).astype(x.dtype)


DENSE_TABLES = False  # dense_tables() (bench_train --dense_tables=on: the A/B)


def dense_tables() -> bool:
  """Whether embeddings are read as one-hot matmuls and the encoder reorders its inputs
  rather than its embeddings: the same values either way, and no scatter of a [B, T, D]
  cotangent in the backward pass. Off: on an H200 the `paper` step took 142.0 ms with it
  and 141.5 ms without (seventh lease, BUILD_NOTES), and a CPU's `tiny` step ~5% longer."""
  return DENSE_TABLES


def lookup(table: jax.Array, ids: jax.Array, dense: bool | None = None) -> jax.Array:
  """table[ids]; ids < 0 give zero rows. dense (default `dense_tables()`): as a one-hot
  matmul at full precision (exactly the same values), whose gradient is a small GEMM."""
  if dense is None:
    dense = dense_tables()
  if dense:
    onehot = jax.nn.one_hot(ids, table.shape[0], dtype=table.dtype)
    return jnp.matmul(onehot, table, precision=jax.lax.Precision.HIGHEST)
  return jnp.where((ids >= 0)[..., None], table[jnp.maximum(ids, 0)], 0).astype(table.dtype)


def split_rng(rng: jax.Array | None, n: int) -> tuple[jax.Array | None, ...]:
  return (None,) * n if rng is None else tuple(jax.random.split(rng, n))


def point_features(x: jax.Array, y: jax.Array | None, x_scale: float):
  """Sanitized, log-compressed point features and a non-finite code.

  Args: x [..., F] float, y [...] float or None (queries have no y).
  Returns: feats [..., F(+1)] float32 (finite everywhere: non-finite entries are zeroed
    *before* any arithmetic, so no NaN reaches a matmul or a gradient), and code [...] int32:
    -1 finite, 0 NaN (or any non-finite x), 1 y=+inf, 2 y=-inf.
  """
  x = x.astype(jnp.float32)
  x_ok = jnp.all(jnp.isfinite(x), axis=-1)
  feats = symlog(jnp.where(jnp.isfinite(x), x, 0.0)) / x_scale
  if y is None:
    return feats, jnp.where(x_ok, -1, 0).astype(jnp.int32)
  y = y.astype(jnp.float32)
  y_ok = jnp.isfinite(y)
  feats = jnp.concatenate([feats, symlog(jnp.where(y_ok, y, 0.0))[..., None]], axis=-1)
  code = jnp.where(~x_ok | jnp.isnan(y), 0, jnp.where(y > 0, 1, 2))
  return feats, jnp.where(x_ok & y_ok, -1, code).astype(jnp.int32)


def _linear(cfg: configs.ModelConfig, din: int, dout: int, rngs: nnx.Rngs, dtype=None):
  return nnx.Linear(din, dout, dtype=jnp.dtype(dtype or cfg.dtype),
                    param_dtype=jnp.dtype(cfg.param_dtype), rngs=rngs)


def _layer_norm(cfg: configs.ModelConfig, dim: int, rngs: nnx.Rngs, dtype=None):
  return nnx.LayerNorm(dim, dtype=jnp.dtype(dtype or cfg.dtype),
                       param_dtype=jnp.dtype(cfg.param_dtype), rngs=rngs)


def _table(cfg: configs.ModelConfig, rows: int, dim: int, rngs: nnx.Rngs) -> nnx.Param:
  return nnx.Param(_EMBED_INIT(rngs.params(), (rows, dim), jnp.dtype(cfg.param_dtype)))


CUDNN_LENGTH_MULTIPLE = 8  # pad_attention_lengths: what the cuDNN path is given


def pad_attention_lengths(q, k, v, kv_lengths, multiple: int = CUDNN_LENGTH_MULTIPLE):
  """Pad q [B, T, N, H] and k, v [B, S, N, H] along T and S to multiples of `multiple`.

  cuDNN's fused attention rejects odd lengths in training with a padding mask (measured on
  the H100: "Unsupported sequence length Q 63, KV 63" for the expression decoder's 63
  inputs). Padded keys are hidden by the returned kv_lengths [B] (the original S where none
  was given); padded query rows are garbage for the caller to slice off ([:, :T]). With a
  causal mask, real queries never see a padded key, which sits after them.
  """
  t, s = q.shape[1], k.shape[1]
  pad_t, pad_s = -t % multiple, -s % multiple
  if kv_lengths is None and pad_s:
    kv_lengths = jnp.full((q.shape[0],), s, jnp.int32)
  widen = lambda a, n: jnp.pad(a, ((0, 0), (0, n), (0, 0), (0, 0))) if n else a
  return widen(q, pad_t), widen(k, pad_s), widen(v, pad_s), kv_lengths


class Attention(nnx.Module):
  """Multi-head attention: fused QKV for self-attention, Q + fused KV for cross-attention."""

  def __init__(self, cfg: configs.ModelConfig, dim: int, heads: int, *, cross: bool,
               rngs: nnx.Rngs):
    self.heads, self.cross, self.impl = heads, cross, cfg.attention_impl
    if cross:
      self.q = _linear(cfg, dim, dim, rngs)
      self.kv = _linear(cfg, dim, 2 * dim, rngs)
    else:
      self.qkv = _linear(cfg, dim, 3 * dim, rngs)
    self.out = _linear(cfg, dim, dim, rngs)

  def _split_heads(self, t: jax.Array, parts: int) -> tuple[jax.Array, ...]:
    """[B, T, parts*D] -> parts x [B, T, N, H]."""
    t = t.reshape(*t.shape[:2], parts, self.heads, -1)
    return tuple(t[:, :, i] for i in range(parts))

  def self_qkv(self, x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """x [B, T, D] -> q, k, v [B, T, N, H]."""
    return self._split_heads(self.qkv(x), 3)

  def query(self, x: jax.Array) -> jax.Array:
    return self._split_heads(self.q(x), 1)[0]

  def memory_kv(self, memory: jax.Array) -> tuple[jax.Array, jax.Array]:
    """memory [B, S, D] -> k, v [B, S, N, H]."""
    return self._split_heads(self.kv(memory), 2)

  def attend(self, q, k, v, *, is_causal=False, kv_lengths=None, impl="config") -> jax.Array:
    """q [B, T, N, H], k/v [B, S, N, H], kv_lengths [B] int32 or None -> [B, T, D].

    impl overrides cfg.attention_impl (cached decoding always uses 'xla': T == 1).
    """
    impl = self.impl if impl == "config" else impl
    t = q.shape[1]
    if impl == "cudnn":
      q, k, v, kv_lengths = pad_attention_lengths(q, k, v, kv_lengths)
    o = jax.nn.dot_product_attention(
        q, k, v, is_causal=is_causal, key_value_seq_lengths=kv_lengths, implementation=impl)
    o = o[:, :t]
    return self.out(o.reshape(*o.shape[:2], -1))


class Block(nnx.Module):
  """Pre-LN transformer block: self-attention, [cross-attention to memory], GELU FFN."""

  def __init__(self, cfg: configs.ModelConfig, dim: int, heads: int, ffn: int, *,
               cross: bool, causal: bool, rngs: nnx.Rngs):
    self.cross, self.causal, self.rate = cross, causal, cfg.dropout
    self.ln_self = _layer_norm(cfg, dim, rngs)
    self.self_attn = Attention(cfg, dim, heads, cross=False, rngs=rngs)
    if cross:
      self.ln_cross = _layer_norm(cfg, dim, rngs)
      self.cross_attn = Attention(cfg, dim, heads, cross=True, rngs=rngs)
    self.ln_ffn = _layer_norm(cfg, dim, rngs)
    self.ffn_in = _linear(cfg, dim, ffn, rngs)
    self.ffn_out = _linear(cfg, ffn, dim, rngs)

  def _ffn(self, x):
    return self.ffn_out(jax.nn.gelu(self.ffn_in(self.ln_ffn(x))))

  def __call__(self, x, memory=None, *, kv_lengths=None, rng=None) -> jax.Array:
    """x [B, T, D], memory [B, K, D] (cross blocks), kv_lengths [B] int32 -> [B, T, D]."""
    r_self, r_cross, r_ffn = split_rng(rng, 3)
    q, k, v = self.self_attn.self_qkv(self.ln_self(x))
    h = self.self_attn.attend(q, k, v, is_causal=self.causal, kv_lengths=kv_lengths)
    x = x + dropout(h, self.rate, r_self)
    if self.cross:
      k, v = self.cross_attn.memory_kv(memory)
      h = self.cross_attn.attend(self.cross_attn.query(self.ln_cross(x)), k, v)
      x = x + dropout(h, self.rate, r_cross)
    return x + dropout(self._ffn(x), self.rate, r_ffn)

  def decode(self, x, position, self_k, self_v, mem_k, mem_v):
    """One cached step. x [B, 1, D]; self_k/v [B, S, N, H]; mem_k/v [B, K, N, H].

    Returns (x [B, 1, D], self_k, self_v) with this position's keys/values written.
    """
    q, k, v = self.self_attn.self_qkv(self.ln_self(x))
    self_k = jax.lax.dynamic_update_slice_in_dim(self_k, k.astype(self_k.dtype), position, 1)
    self_v = jax.lax.dynamic_update_slice_in_dim(self_v, v.astype(self_v.dtype), position, 1)
    lengths = jnp.full((x.shape[0],), position + 1, jnp.int32)
    x = x + self.self_attn.attend(q, self_k, self_v, kv_lengths=lengths, impl="xla")
    q = self.cross_attn.query(self.ln_cross(x))
    x = x + self.cross_attn.attend(q, mem_k, mem_v, impl="xla")
    return x + self._ffn(x), self_k, self_v


class PointMLP(nnx.Module):
  """2-layer SiLU MLP on point features; the input layer stays fp32 (raw magnitudes)."""

  def __init__(self, cfg: configs.ModelConfig, din: int, dout: int, rngs: nnx.Rngs):
    self.hidden = _linear(cfg, din, cfg.mlp_hidden, rngs, dtype=jnp.float32)
    self.out = _linear(cfg, cfg.mlp_hidden, dout, rngs)

  def __call__(self, feats: jax.Array) -> jax.Array:
    return self.out(jax.nn.silu(self.hidden(feats)))


class Encoder(nnx.Module):
  """f_theta(t, D) -> (z, mu, logvar): token + scatter streams, transformer, mean-pool (§3.1)."""

  def __init__(self, cfg: configs.ModelConfig, *, rngs: nnx.Rngs):
    d = cfg.enc_dim
    self.cfg = cfg
    self.token_embed = _table(cfg, cfg.vocab_size, d, rngs)
    self.pos_embed = _table(cfg, cfg.max_len, d, rngs)
    self.stream_embed = _table(cfg, 2, d, rngs)  # 0: symbolic, 1: numeric
    self.nonfinite_embed = _table(cfg, 3, d, rngs)  # NaN / +inf / -inf (point_features code)
    self.point_mlp = PointMLP(cfg, cfg.n_features + 1, d, rngs)
    self.blocks = nnx.List([
        Block(cfg, d, cfg.enc_heads, cfg.enc_ffn, cross=False, causal=False, rngs=rngs)
        for _ in range(cfg.enc_layers)])
    self.final_ln = _layer_norm(cfg, d, rngs, dtype=jnp.float32)
    self.mu_head = _linear(cfg, d, cfg.d_z, rngs, dtype=jnp.float32)
    if cfg.use_vae:
      self.logvar_head = _linear(cfg, d, cfg.d_z, rngs, dtype=jnp.float32)

  def embed(self, tokens: jax.Array, x: jax.Array, y: jax.Array,
            order: jax.Array | None = None) -> jax.Array:
    """tokens [B, L] int32, x [B, P, F], y [B, P] -> [B, L+P, D] compute dtype.

    order [B, L+P] int32: slot j embeds position order[:, j] of [tokens, points] (None:
    that order). The inputs are gathered, not the embeddings, so no gradient flows
    through the gather (`dense_tables`).
    """
    n_tok, n_pts = tokens.shape[1], x.shape[1]
    feats, code = point_features(x, y, self.cfg.x_scale)
    if order is None:
      pos = jnp.broadcast_to(jnp.arange(n_tok, dtype=jnp.int32), tokens.shape)
      return jnp.concatenate([self._symbols(tokens, pos), self._points(feats, code)], axis=1)
    is_tok = order < n_tok
    pos = jnp.where(is_tok, order, -1)  # the token's position, -1 on a point's slot
    ids = (jnp.take_along_axis(tokens, jnp.clip(pos, 0, n_tok - 1), axis=1)
           if n_tok else pos)
    sym = self._symbols(jnp.where(is_tok, ids, -1), pos)
    if not n_pts:
      return sym
    at = jnp.clip(order - n_tok, 0, n_pts - 1)
    num = self._points(jnp.take_along_axis(feats, at[..., None], axis=1),
                       jnp.take_along_axis(code, at, axis=1))
    return jnp.where(is_tok[..., None], sym, num)

  def _symbols(self, ids: jax.Array, pos: jax.Array) -> jax.Array:
    """Token ids and positions [B, T] int32 -> the symbolic stream's embeddings [B, T, D]."""
    sym = lookup(self.token_embed[...], ids) + lookup(self.pos_embed[...], pos)
    return (sym + self.stream_embed[...][None, None, 0]).astype(jnp.dtype(self.cfg.dtype))

  def _points(self, feats: jax.Array, code: jax.Array) -> jax.Array:
    """point_features' feats [B, T, F+1] and code [B, T] -> the numeric stream's [B, T, D]."""
    dt = jnp.dtype(self.cfg.dtype)
    special = lookup(self.nonfinite_embed[...], code)
    num = jnp.where((code >= 0)[..., None], special.astype(dt), self.point_mlp(feats))
    return num + self.stream_embed[...][None, None, 1].astype(dt)

  def __call__(self, tokens, x, y, point_mask, *, rng=None):
    """tokens [B, L] int32 (L may be 0), x [B, P, F], y [B, P], point_mask [B, P] bool.

    Returns z, mu, logvar, each [B, d_z] float32 (logvar is zeros when use_vae=False).
    PAD tokens and masked-out points are invisible: they are neither attended to nor pooled.
    """
    r_drop, r_eps, *r_blocks = split_rng(rng, 2 + len(self.blocks))
    valid = jnp.concatenate([tokens != vocab.PAD, point_mask.astype(bool)], axis=1)
    # Move valid positions to the front (stable) so padding is a length: [B] kv_lengths is
    # what cuDNN flash attention supports, and attention + mean-pool are order-invariant.
    order = jnp.argsort((~valid).astype(jnp.int32), axis=1, stable=True)
    if dense_tables():
      h = self.embed(tokens, x, y, order)
    else:
      h = jnp.take_along_axis(self.embed(tokens, x, y), order[..., None], axis=1)
    n_valid = valid.sum(axis=1, dtype=jnp.int32)
    h = dropout(h, self.cfg.dropout, r_drop)
    for block, r in zip(self.blocks, r_blocks):
      h = block(h, kv_lengths=n_valid, rng=r)
    h = self.final_ln(h)  # fp32
    pool = (jnp.arange(h.shape[1])[None, :] < n_valid[:, None]).astype(h.dtype)
    pooled = (h * pool[..., None]).sum(axis=1) / jnp.maximum(n_valid, 1)[:, None]
    mu = self.mu_head(pooled)
    if not self.cfg.use_vae:
      return mu, mu, jnp.zeros_like(mu)
    logvar = self.logvar_head(pooled)
    if r_eps is None:
      return mu, mu, logvar
    eps = jax.random.normal(r_eps, mu.shape, mu.dtype)
    return mu + jnp.exp(0.5 * logvar) * eps, mu, logvar


class ExpressionDecoder(nnx.Module):
  """g_expr: z -> K memory tokens (Eq. 4) -> causal transformer decoder -> vocab logits.

  The vocab head is untied from the token embedding by default (cfg.tie_output_head).
  """

  def __init__(self, cfg: configs.ModelConfig, *, rngs: nnx.Rngs):
    d = cfg.expr_dim
    self.cfg = cfg
    self.memory_proj = _linear(cfg, cfg.d_z, cfg.n_memory * d, rngs)
    self.token_embed = _table(cfg, cfg.vocab_size, d, rngs)
    self.pos_embed = _table(cfg, cfg.max_len, d, rngs)
    self.blocks = nnx.List([
        Block(cfg, d, cfg.expr_heads, cfg.expr_ffn, cross=True, causal=True, rngs=rngs)
        for _ in range(cfg.expr_layers)])
    self.final_ln = _layer_norm(cfg, d, rngs, dtype=jnp.float32)
    if not cfg.tie_output_head:
      self.head = _linear(cfg, d, cfg.vocab_size, rngs, dtype=jnp.float32)

  def memory(self, z: jax.Array) -> jax.Array:
    """z [B, d_z] -> M_expr [B, K, D]."""
    return self.memory_proj(z).reshape(z.shape[0], self.cfg.n_memory, -1)

  def _logits(self, h: jax.Array) -> jax.Array:
    h = self.final_ln(h)  # fp32
    if self.cfg.tie_output_head:
      return h @ self.token_embed[...].T.astype(jnp.float32)
    return self.head(h)

  def _embed(self, tokens: jax.Array, pos: jax.Array) -> jax.Array:
    """tokens [B, T] int32, pos [T, D] -> [B, T, D] compute dtype."""
    e = lookup(self.token_embed[...], tokens) + pos[None]
    return e.astype(jnp.dtype(self.cfg.dtype))

  def __call__(self, z: jax.Array, inputs: jax.Array, *, rng=None) -> jax.Array:
    """Teacher forcing: z [B, d_z], inputs [B, T] int32 -> logits [B, T, V] float32."""
    r_drop, *r_blocks = split_rng(rng, 1 + len(self.blocks))
    memory = self.memory(z)
    x = dropout(self._embed(inputs, self.pos_embed[...][:inputs.shape[1]]),
                self.cfg.dropout, r_drop)
    for block, r in zip(self.blocks, r_blocks):
      x = block(x, memory, rng=r)
    return self._logits(x)

  def init_cache(self, z: jax.Array, max_len: int | None = None) -> dict:
    """KV cache for `decode_step`, for a batch of latents z [B, d_z].

    Returns {'self_k', 'self_v'}: per-layer lists of zeros [B, max_len, N, H], and
    {'mem_k', 'mem_v'}: per-layer [B, K, N, H] cross-attention keys/values of M_expr(z).
    """
    max_len = max_len or self.cfg.max_len
    b, heads = z.shape[0], self.cfg.expr_heads
    shape = (b, max_len, heads, self.cfg.expr_dim // heads)
    memory = self.memory(z)
    mem = [blk.cross_attn.memory_kv(memory) for blk in self.blocks]
    zeros = lambda: [jnp.zeros(shape, jnp.dtype(self.cfg.dtype)) for _ in self.blocks]
    return {"self_k": zeros(), "self_v": zeros(),
            "mem_k": [k for k, _ in mem], "mem_v": [v for _, v in mem]}

  def decode_step(self, token: jax.Array, position: jax.Array, cache: dict):
    """token [B] int32 at `position` (int32 scalar, same for the batch) -> (logits [B, V], cache).

    Equals the teacher-forced logits at that position given the same earlier tokens.
    """
    pos = jax.lax.dynamic_slice_in_dim(self.pos_embed[...], position, 1)
    x = self._embed(token[:, None], pos)
    ks, vs = [], []
    for i, block in enumerate(self.blocks):
      x, k, v = block.decode(x, position, cache["self_k"][i], cache["self_v"][i],
                             cache["mem_k"][i], cache["mem_v"][i])
      ks.append(k)
      vs.append(v)
    return self._logits(x)[:, 0], dict(cache, self_k=ks, self_v=vs)


class EvaluationDecoder(nnx.Module):
  """g_eval: (z, query points) -> y_hat (Eq. 6): memory tokens, bidirectional decoder, MLP."""

  def __init__(self, cfg: configs.ModelConfig, *, rngs: nnx.Rngs):
    d = cfg.eval_dim
    self.cfg = cfg
    self.memory_proj = _linear(cfg, cfg.d_z, cfg.n_memory * d, rngs)
    self.query_mlp = PointMLP(cfg, cfg.n_features, d, rngs)
    self.blocks = nnx.List([
        Block(cfg, d, cfg.eval_heads, cfg.eval_ffn, cross=True, causal=False, rngs=rngs)
        for _ in range(cfg.eval_layers)])
    self.final_ln = _layer_norm(cfg, d, rngs, dtype=jnp.float32)
    self.head_hidden = _linear(cfg, d, cfg.mlp_hidden, rngs, dtype=jnp.float32)
    self.head_out = _linear(cfg, cfg.mlp_hidden, 1, rngs, dtype=jnp.float32)

  def __call__(self, z: jax.Array, query_x: jax.Array, *, rng=None) -> jax.Array:
    """z [B, d_z], query_x [B, Q, F] -> y_hat [B, Q] float32 in the raw scale of y."""
    r_drop, *r_blocks = split_rng(rng, 1 + len(self.blocks))
    memory = self.memory_proj(z).reshape(z.shape[0], self.cfg.n_memory, -1)
    feats, _ = point_features(query_x, None, self.cfg.x_scale)
    x = dropout(self.query_mlp(feats), self.cfg.dropout, r_drop)
    for block, r in zip(self.blocks, r_blocks):
      x = block(x, memory, rng=r)
    v = self.head_out(jax.nn.silu(self.head_hidden(self.final_ln(x))))[..., 0]
    return symexp(v) if self.cfg.eval_output == "symexp" else v


class LEE(nnx.Module):
  """Encoder + expression decoder + evaluation decoder sharing the latent space (§3)."""

  def __init__(self, cfg: configs.ModelConfig, *, rngs: nnx.Rngs):
    self.cfg = cfg
    self.encoder = Encoder(cfg, rngs=rngs)
    self.expr_decoder = ExpressionDecoder(cfg, rngs=rngs)
    self.eval_decoder = EvaluationDecoder(cfg, rngs=rngs)

  def encode(self, tokens, x, y, point_mask, *, rng=None):
    """tokens [B, L] int32, x [B, P, F], y [B, P], point_mask [B, P] bool.

    Returns z, mu, logvar [B, d_z] float32; rng=None gives z = mu and no dropout.
    """
    return self.encoder(tokens, x, y, point_mask, rng=rng)

  def encode_scatter(self, x, y, point_mask, *, rng=None):
    """Scatter-only encode f(pad, D): same as encode with all-PAD tokens, minus their compute."""
    tokens = jnp.zeros((x.shape[0], 0), jnp.int32)
    return self.encoder(tokens, x, y, point_mask, rng=rng)

  def decode_logits(self, z, tokens, *, rng=None) -> jax.Array:
    """z [B, d_z], tokens [B, L] int32 (BOS..EOS PAD) -> logits [B, L-1, V] for tokens[:, 1:]."""
    return self.expr_decoder(z, tokens[:, :-1], rng=rng)

  def evaluate(self, z, query_x, *, rng=None) -> jax.Array:
    """z [B, d_z], query_x [B, Q, F] -> y_hat [B, Q] float32."""
    return self.eval_decoder(z, query_x, rng=rng)

  def init_cache(self, z, max_len: int | None = None) -> dict:
    return self.expr_decoder.init_cache(z, max_len)

  def decode_step(self, token, position, cache):
    return self.expr_decoder.decode_step(token, position, cache)


def trainable_filter(modules: tuple[str, ...] = configs.ALL_MODULES):
  """nnx filter for the Params of the named LEE submodules (PhaseConfig.trainable)."""
  if set(modules) == set(configs.ALL_MODULES):
    return nnx.Param
  return nnx.All(nnx.Param, nnx.Any(*(nnx.PathContains(m) for m in modules)))


def with_params(cfg: configs.ModelConfig, params) -> LEE:
  """An LEE holding `params` (nested dict of arrays, as nnx.to_pure_dict gives), built
  without running the initialisers: eagerly they compile ~50 small programs per process
  (the shipped `small`: 17 s on a fresh 2-core CPU, 4-6 s from the compilation cache), which
  every search worker would pay only to overwrite. A missing, extra or misshapen array is a
  ValueError."""
  abstract = nnx.eval_shape(lambda: LEE(cfg, rngs=nnx.Rngs(0)))
  graphdef, state = nnx.split(abstract)  # LEE keeps no state but its Params
  try:  # (a tree of another structure is jax's ValueError)
    got = jax.tree.map(_as_spec, nnx.to_pure_dict(state), params)
  except (ValueError, TypeError) as e:
    raise ValueError(f"params do not fit the model config: {str(e).splitlines()[0][:200]}") from None
  nnx.replace_by_pure_dict(state, got)
  return nnx.merge(graphdef, state)


def _as_spec(spec: jax.ShapeDtypeStruct, value) -> jax.Array:
  """`value` as the array `spec` describes (its dtype); another shape is a ValueError."""
  if jnp.shape(value) != spec.shape:
    raise ValueError(f"an array of shape {jnp.shape(value)} where {spec.shape} belongs")
  return jnp.asarray(value, spec.dtype)


def count_params(model: nnx.Module) -> int:
  return sum(p.size for p in jax.tree.leaves(nnx.state(model, nnx.Param)))


if __name__ == "__main__":
  for name in configs.MODELS:
    cfg = configs.get_model_config(name)
    model = nnx.eval_shape(lambda: LEE(cfg, rngs=nnx.Rngs(0)))  # shapes only
    parts = {m: count_params(getattr(model, m)) for m in configs.ALL_MODULES}
    total = sum(parts.values())
    print(f"{name:6s} {total / 1e6:7.2f}M params ({total * 4 / 2**20:6.1f} MiB fp32)  "
          + "  ".join(f"{m} {n / 1e6:.2f}M" for m, n in parts.items()))
