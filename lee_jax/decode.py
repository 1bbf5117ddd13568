"""Batched autoregressive decoding from latents: greedy and temperature sampling, one loop.

`sample` is a pure function over a `step_fn(token [B], position, cache) -> (logits [B, V],
cache)` callback (the model's KV-cached `decode_step`), written as one `lax.while_loop`, so
the caller jits it once per batch shape and reuses it for every call of a search.

Grammar-constrained decoding (our addition; the paper decodes unconstrained): at each step
the logits of tokens that cannot continue a well-formed prefix expression are set to -inf.
The constraint tracks the number of open operand slots and the position inside a 9-token
constant, allows only variables the dataset has, and never starts a subtree that cannot be
finished within max_len. So every decoded sequence parses, and none uses a missing column.
A trained decoder puts almost all its mass on legal tokens anyway; the mask turns the rest
from counted failures into the nearest legal alternative.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from lee_jax import vocab

_NEG = -1e30  # a masked logit (finite, so an all-masked row cannot make NaN probabilities)

# Per token id, for the constraint: how a node token changes the number of open slots, the
# extra tokens it commits to (a constant's 8-token body), which variable it is.
_DELTA = np.zeros(vocab.VOCAB_SIZE, np.int32)
_EXTRA = np.zeros(vocab.VOCAB_SIZE, np.int32)
_NODE_START = np.zeros(vocab.VOCAB_SIZE, bool)
_VAR_INDEX = np.full(vocab.VOCAB_SIZE, -1, np.int32)
for _t, _i in vocab.TOKEN_TO_ID.items():
  if vocab.is_variable(_t):
    _NODE_START[_i], _DELTA[_i], _VAR_INDEX[_i] = True, -1, vocab.variable_index(_t)
  elif _t in vocab.SIGNS:  # a constant starts with its sign
    _NODE_START[_i], _DELTA[_i], _EXTRA[_i] = True, -1, vocab.CONST_LEN - 1
  elif _t in vocab.UNARY:
    _NODE_START[_i] = True
  elif _t in vocab.BINARY:
    _NODE_START[_i], _DELTA[_i] = True, 1

# Allowed tokens at each of the 8 positions after a constant's sign: d1 . d2 d3 e sign' e1 e2.
_DIGIT_IDS = [vocab.TOKEN_TO_ID[d] for d in vocab.DIGITS]
_SIGN_IDS = [vocab.TOKEN_TO_ID[s] for s in vocab.SIGNS]
_CONST_BODY = np.zeros((vocab.CONST_LEN - 1, vocab.VOCAB_SIZE), bool)
for _k, _ids in enumerate([_DIGIT_IDS, [vocab.TOKEN_TO_ID["."]], _DIGIT_IDS, _DIGIT_IDS,
                           [vocab.TOKEN_TO_ID["e"]], _SIGN_IDS, _DIGIT_IDS, _DIGIT_IDS]):
  _CONST_BODY[_k, _ids] = True


def legal_mask(position, need, const_left, done, n_vars, max_len: int) -> jax.Array:
  """[B, V] bool: tokens that may be written at `position` (int32 scalar).

  need [B]: open operand slots; const_left [B]: tokens left in the current constant;
  done [B]: EOS already written; n_vars: number of dataset variables (int32 scalar).
  """
  v = jnp.arange(vocab.VOCAB_SIZE)
  remaining = max_len - 1 - position  # positions after this one
  # Fewest tokens needed after writing t: one leaf per open slot, t's constant body, EOS.
  min_after = need[:, None] + jnp.asarray(_DELTA)[None] + jnp.asarray(_EXTRA)[None] + 1
  var_ok = (jnp.asarray(_VAR_INDEX) < n_vars) | (jnp.asarray(_VAR_INDEX) < 0)
  node_ok = jnp.asarray(_NODE_START)[None] & var_ok[None] & (min_after <= remaining)
  body_ok = jnp.asarray(_CONST_BODY)[jnp.clip(vocab.CONST_LEN - 1 - const_left, 0, 7)]
  eos = (v == vocab.EOS)[None]
  pad = (v == vocab.PAD)[None]
  return jnp.where(done[:, None], pad,
                   jnp.where((const_left > 0)[:, None], body_ok,
                             jnp.where((need == 0)[:, None], eos, node_ok)))


def _advance(token, need, const_left, done):
  """Constraint state after writing token [B]."""
  in_const = const_left > 0
  delta = jnp.asarray(_DELTA)[token]
  need = jnp.where(done | in_const, need, need + delta)
  const_left = jnp.where(in_const, const_left - 1, jnp.asarray(_EXTRA)[token])
  return need, jnp.where(done, 0, const_left), done | (token == vocab.EOS)


def sample(step_fn: Callable, cache, key: jax.Array, *, batch: int, max_len: int,
           temperature, greedy: jax.Array, n_vars, constrain: bool = True) -> jax.Array:
  """Decode `batch` sequences; returns ids [B, max_len] int32 (BOS ... EOS PAD ...).

  Args:
    step_fn: (token [B] int32, position int32, cache) -> (logits [B, V], cache).
    cache: the decoder's cache for the batch's latents (init_cache).
    key: PRNG key for the sampled rows.
    temperature: float scalar (traced: changing it does not recompile).
    greedy: [B] bool, True for rows decoded by argmax.
    n_vars: int32 scalar, variables x0..x{n_vars-1} may appear (only with constrain).
    constrain: mask tokens that cannot continue a well-formed expression.
  """
  ids = jnp.full((batch, max_len), vocab.PAD, jnp.int32).at[:, 0].set(vocab.BOS)
  zeros = jnp.zeros((batch,), jnp.int32)
  state = (jnp.int32(1), ids, jnp.ones((batch,), jnp.int32), zeros,
           jnp.zeros((batch,), bool), cache, key)

  def cond(s):
    position, _, _, _, done, _, _ = s
    return (position < max_len) & ~jnp.all(done)

  def body(s):
    position, ids, need, const_left, done, cache, key = s
    logits, cache = step_fn(ids[:, position - 1], position - 1, cache)
    logits = logits.astype(jnp.float32)
    if constrain:
      ok = legal_mask(position, need, const_left, done, n_vars, max_len)
    else:
      ok = jnp.where(done[:, None], (jnp.arange(vocab.VOCAB_SIZE) == vocab.PAD)[None], True)
    logits = jnp.where(ok, logits, _NEG)
    key, sub = jax.random.split(key)
    sampled = jax.random.categorical(sub, logits / jnp.maximum(temperature, 1e-6), axis=-1)
    token = jnp.where(greedy, jnp.argmax(logits, axis=-1), sampled).astype(jnp.int32)
    token = jnp.where(done, vocab.PAD, token)
    ids = jax.lax.dynamic_update_slice_in_dim(ids, token[:, None], position, 1)
    need, const_left, done = _advance(token, need, const_left, done)
    return position + 1, ids, need, const_left, done, cache, key

  return jax.lax.while_loop(cond, body, state)[1]
