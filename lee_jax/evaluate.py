"""Evaluate expressions on points: a NumPy reference and a jit-batched JAX stack machine.

Both are *protected* the same way: every node's non-finite value becomes NaN (so NaN
propagates to the root), no warnings are emitted, and domain errors (log of a negative,
division by zero, overflow) give NaN. They agree wherever both are finite, up to float32
rounding on the JAX side.

The JAX evaluator reads padded token-id arrays `[B, L]` exactly as the decoder emits them
(BOS, prefix tokens, EOS, PAD...), with the constants as a separate `[B, L]` input (the value
of the constant that *starts* at that position, or of a `C`), so it is differentiable in the
constants. Malformed sequences evaluate to NaN with `valid=False`, never raise.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from lee_jax import expr as E
from lee_jax import vocab


# --- NumPy reference -----------------------------------------------------------------------

def evaluate_numpy(node: E.Node, X: np.ndarray) -> np.ndarray:
  """Tree on X [N, k] (k >= highest variable index + 1) -> y [N] float64, NaN where undefined."""
  X = np.asarray(X, np.float64)
  if X.ndim != 2:
    raise ValueError(f"X must be [N, k], got shape {X.shape}")
  n = X.shape[0]

  def ev(nd: E.Node) -> np.ndarray:
    if nd.name == "const":
      return np.full(n, nd.value)
    if nd.name == "C":
      return np.ones(n)
    if vocab.is_variable(nd.name):
      i = vocab.variable_index(nd.name)
      if i >= X.shape[1]:
        raise ValueError(f"expression uses {nd.name} but X has {X.shape[1]} columns")
      return X[:, i]
    out = vocab.NUMPY_FN[nd.name](*(ev(c) for c in nd.children))
    return np.where(np.isfinite(out), out, np.nan)

  with np.errstate(all="ignore"):
    return ev(node)


# --- JAX stack machine ---------------------------------------------------------------------

_UNARY_JAX = {
    "sin": jnp.sin, "cos": jnp.cos, "tan": jnp.tan, "tanh": jnp.tanh, "exp": jnp.exp,
    "log": jnp.log, "sqrt": jnp.sqrt, "sq": jnp.square, "cube": lambda a: a * a * a,
    "abs": jnp.abs, "neg": jnp.negative,
}
_BINARY_JAX = {"add": jnp.add, "sub": jnp.subtract, "mul": jnp.multiply, "div": jnp.divide}
assert set(_UNARY_JAX) == set(vocab.UNARY) and set(_BINARY_JAX) == set(vocab.BINARY)


def jax_function(node: E.Node):
  """The tree as a plain JAX function (PySR's `jax()` export): returns (f, params).

  f(X [N, k], params [n_constants]) -> y [N] is jit-, grad- and vmap-able; params are the
  tree's constants in prefix order (E.constants), so a user can refit or differentiate them.
  Unlike the protected evaluators it returns inf where the math does, so gradients stay
  those of the formula; where finite it agrees with evaluate_numpy to the precision of
  JAX's default float (float32 unless jax_enable_x64 was set before this call).
  """
  params = jnp.array(E.constants(node), dtype=float)  # float32 unless x64 is enabled
  n_vars = max(E.variables_used(node), default=-1) + 1

  def f(X, params):
    X = jnp.asarray(X)
    if X.ndim != 2 or X.shape[1] < n_vars:
      raise ValueError(f"X must be [N, k] with k >= {n_vars}, got shape {X.shape}")
    ones = jnp.ones(X.shape[:1], jnp.result_type(X.dtype, params.dtype))
    slot = iter(range(params.shape[0]))

    def ev(nd: E.Node):
      if nd.name in ("const", "C"):
        return params[next(slot)] * ones
      if vocab.is_variable(nd.name):
        return X[:, vocab.variable_index(nd.name)] * ones
      fn = _UNARY_JAX.get(nd.name) or _BINARY_JAX[nd.name]
      return fn(*(ev(c) for c in nd.children))

    return ev(node)

  return f, params


# Per token id: 0 no-op/invalid, 1 variable, 2 constant start (sign) or C, 3 unary, 4 binary.
_KIND = np.zeros(vocab.VOCAB_SIZE, np.int32)
for _t, _i in vocab.TOKEN_TO_ID.items():
  if vocab.is_variable(_t):
    _KIND[_i] = 1
  elif _t in vocab.SIGNS or _t == "C":
    _KIND[_i] = 2
  elif _t in vocab.UNARY:
    _KIND[_i] = 3
  elif _t in vocab.BINARY:
    _KIND[_i] = 4
_FIRST_UNARY = vocab.TOKEN_TO_ID[vocab.UNARY[0]]
_FIRST_BINARY = vocab.TOKEN_TO_ID[vocab.BINARY[0]]
_DIGIT, _DOT, _E, _SIGN = 0, 1, 2, 3
# What each of the 8 tokens after a constant's sign must be: d1 . d2 d3 e sign' e1 e2
_CONST_PATTERN = np.array([_DIGIT, _DOT, _DIGIT, _DIGIT, _E, _SIGN, _DIGIT, _DIGIT], np.int32)
_CLASS = np.full(vocab.VOCAB_SIZE, -1, np.int32)
for _d in vocab.DIGITS:
  _CLASS[vocab.TOKEN_TO_ID[_d]] = _DIGIT
_CLASS[vocab.TOKEN_TO_ID["."]] = _DOT
_CLASS[vocab.TOKEN_TO_ID["e"]] = _E
for _s in vocab.SIGNS:
  _CLASS[vocab.TOKEN_TO_ID[_s]] = _SIGN


def _body_mask(ids: jnp.ndarray) -> jnp.ndarray:
  """[L] bool: positions strictly between the leading BOS and the first EOS."""
  before_eos = jnp.cumsum(ids == vocab.EOS) == 0
  return before_eos & (jnp.arange(ids.shape[0]) > 0)


def constant_values(ids: jnp.ndarray) -> jnp.ndarray:
  """[..., L] ids -> [..., L] floats: the value of a constant starting at each position.

  Positions that do not start a well-formed constant get 1.0 (the value `C` stands for); a
  well-formed one beyond the float's range is +-inf, not 1.0 (2e50 in float32).
  """
  L = ids.shape[-1]
  padded = jnp.concatenate([ids, jnp.full(ids.shape[:-1] + (vocab.CONST_LEN,), vocab.PAD, ids.dtype)], -1)
  win = jnp.stack([padded[..., k:k + L] for k in range(vocab.CONST_LEN)], -1)  # [..., L, 9]
  fdtype = jnp.result_type(float)  # float64 under jax.enable_x64, else float32
  digit = (win - vocab.FIRST_DIGIT_ID).astype(fdtype)
  sign = jnp.where(win[..., 0] == vocab.MINUS_ID, -1.0, 1.0)
  esign = jnp.where(win[..., 6] == vocab.MINUS_ID, -1.0, 1.0)
  mant = digit[..., 1] + digit[..., 3] / 10 + digit[..., 4] / 100
  expo = esign * (10 * digit[..., 7] + digit[..., 8])
  # (0 * 10^99 would be 0 * inf = NaN in float32; a zero mantissa is 0 at any exponent)
  value = jnp.where(mant == 0, 0.0, sign * mant * jnp.power(10.0, expo))
  cls = jnp.asarray(_CLASS)[win]
  pattern = jnp.broadcast_to(jnp.asarray(_CONST_PATTERN), cls[..., 1:].shape)
  ok = (cls[..., 0] == _SIGN) & jnp.all(cls[..., 1:] == pattern, -1)
  return jnp.where(ok, value, 1.0).astype(fdtype)


def _roles(ids: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
  """Forward pass over one sequence: which positions are nodes, and is the layout legal.

  Returns (kind [L] int32 with constant bodies zeroed, body [L] bool, ok bool).
  """
  body = _body_mask(ids)
  kind = jnp.asarray(_KIND)[ids]
  cls = jnp.asarray(_CLASS)[ids]

  def step(carry, inp):
    left, ok = carry  # tokens left inside the current constant
    k, c, active = inp
    inside = left > 0
    expected = jnp.asarray(_CONST_PATTERN)[jnp.clip(8 - left, 0, 7)]
    ok = ok & jnp.where(active & inside, c == expected, True)
    # Outside constants only node tokens may appear in the body.
    ok = ok & jnp.where(active & ~inside, k > 0, True)
    starts = active & ~inside & (c == _SIGN)
    left = jnp.where(active & inside, left - 1, jnp.where(starts, 8, left))
    return (left, ok), jnp.where(active & ~inside, k, 0)

  (left, ok), node_kind = jax.lax.scan(step, (jnp.int32(0), jnp.bool_(True)), (kind, cls, body))
  ok = ok & (left == 0) & (ids[0] == vocab.BOS) & jnp.any(ids == vocab.EOS)
  return node_kind, body, ok


def evaluate_one(ids: jnp.ndarray, consts: jnp.ndarray, X: jnp.ndarray):
  """One sequence [L] on X [N, D] -> (y [N], valid)."""
  L, N = ids.shape[0], X.shape[0]
  depth = L // 2 + 1  # a prefix sequence of L tokens never needs a deeper stack
  node_kind, _, ok = _roles(ids)
  dtype = jnp.result_type(consts.dtype, X.dtype)
  unary_fns = [_UNARY_JAX[u] for u in vocab.UNARY]
  binary_fns = [_BINARY_JAX[b] for b in vocab.BINARY]

  def step(carry, inp):
    stack, sp, ok = carry
    tok, kind, c = inp
    top = stack[jnp.clip(sp - 1, 0, depth - 1)]
    second = stack[jnp.clip(sp - 2, 0, depth - 1)]
    # Each op sees a harmless argument unless it is the selected one: keeps gradients of
    # the unselected branches (log, sqrt, div at 0) from turning into NaN.
    u = jnp.clip(tok - _FIRST_UNARY, 0, len(unary_fns) - 1)
    un = jnp.stack([f(jnp.where(u == i, top, 1.0)) for i, f in enumerate(unary_fns)])[u]
    b = jnp.clip(tok - _FIRST_BINARY, 0, len(binary_fns) - 1)
    bi = jnp.stack([f(jnp.where(b == i, top, 1.0), jnp.where(b == i, second, 1.0))
                    for i, f in enumerate(binary_fns)])[b]
    var = X[:, jnp.clip(tok - vocab.FIRST_VAR_ID, 0, X.shape[1] - 1)]
    leaf = jnp.where(kind == 1, var, jnp.full((N,), c, dtype))
    value = jnp.select([kind <= 2, kind == 3], [leaf, un], bi)
    value = jnp.where(jnp.isfinite(value), value, jnp.nan)
    pops = jnp.select([kind == 3, kind == 4], [1, 2], 0)
    pushes = (kind > 0).astype(jnp.int32)
    ok = ok & (sp >= pops) & (sp - pops < depth)
    ok = ok & jnp.where(kind == 1, tok - vocab.FIRST_VAR_ID < X.shape[1], True)
    new_sp = sp - pops + pushes
    slot = jnp.clip(new_sp - 1, 0, depth - 1)
    stack = jnp.where(kind > 0, stack.at[slot].set(value.astype(dtype)), stack)
    return (stack, new_sp, ok), None

  init = (jnp.zeros((depth, N), dtype), jnp.int32(0), ok)
  (stack, sp, ok), _ = jax.lax.scan(step, init, (ids, node_kind, consts.astype(dtype)), reverse=True)
  ok = ok & (sp == 1)
  return jnp.where(ok, stack[0], jnp.nan), ok


def batch_bucket(n: int, minimum: int = 8) -> int:
  """The padded size for n items: the next power of two, at least `minimum` (so a jitted
  batched call compiles once per bucket, not once per size)."""
  return max(minimum, 1 << max(n - 1, 0).bit_length())


@jax.jit
def evaluate_jax(ids: jnp.ndarray, consts: jnp.ndarray, X: jnp.ndarray):
  """Batched evaluation.

  Args:
    ids: [B, L] int32 token ids (BOS, prefix, EOS, PAD...).
    consts: [B, L] float values of the constants starting at each position (see
      `constant_values` for the decoded defaults; a `C` takes its position's value).
    X: [B, N, D] points; D may exceed the variables used (padding columns are ignored).
  Returns:
    (y [B, N] with NaN where undefined or invalid, valid [B] bool).
  """
  return jax.vmap(evaluate_one)(ids, consts, X)


def evaluate_ids(ids: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """Convenience: [B, L] ids with their own decoded constants on shared X [N, D]."""
  ids = jnp.asarray(ids, jnp.int32)
  X = jnp.asarray(X, jnp.float32)
  consts = constant_values(ids)
  y, ok = evaluate_jax(ids, consts, jnp.broadcast_to(X, (ids.shape[0],) + X.shape))
  return np.asarray(y), np.asarray(ok)
