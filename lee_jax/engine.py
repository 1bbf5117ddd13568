"""The device side of the search: jit-compiled encode, decode and gradient segment.

One `Engine` wraps one model. Every method pads its batch to a fixed bucket (a power of two)
so a whole search compiles each function a few times, then reuses it; `traces` counts the
compilations (tests assert it stays flat across calls).
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from lee_jax import compile_cache
from lee_jax import configs
from lee_jax import decode
from lee_jax import evaluate
from lee_jax import model as model_lib
from lee_jax import vocab


@dataclasses.dataclass(frozen=True)
class Scatter:
  """The encoder's view of the data: n_scatter rows, features padded to the model's width."""
  x: np.ndarray  # [P, F] float32
  y: np.ndarray  # [P] float32
  mask: np.ndarray  # [P] bool


def make_scatter(X: np.ndarray, y: np.ndarray, n_points: int, n_features: int,
                 rng: np.random.Generator) -> Scatter:
  """n_points rows drawn without replacement (all rows, padded and masked, if fewer)."""
  idx = rng.choice(len(y), size=min(n_points, len(y)), replace=False)
  x = np.zeros((n_points, n_features), np.float32)
  x[:len(idx), :X.shape[1]] = X[idx]
  yy = np.zeros(n_points, np.float32)
  yy[:len(idx)] = y[idx]
  return Scatter(x, yy, np.arange(n_points) < len(idx))


class Engine:
  """Jitted encode / decode / descend for one LEE model (the encoder's mean: z = mu)."""

  def __init__(self, model: model_lib.LEE, constrain: bool = True):
    self.cfg: configs.ModelConfig = model.cfg
    self.graphdef, self.state = nnx.split(model)
    self.constrain = constrain
    self.traces: collections.Counter = collections.Counter()
    self._encode = jax.jit(self._encode_fn)
    self._decode = jax.jit(self._decode_fn)
    self._descend = jax.jit(self._descend_fn, static_argnames=("steps",))

  # --- traced bodies (the trace counter runs once per compilation) ---------------------------

  def _encode_fn(self, state, tokens, x, y, mask):
    self.traces["encode"] += 1
    m = nnx.merge(self.graphdef, state)
    b = tokens.shape[0]
    if x.ndim == 2:  # one scatter shared by every row (encode); encode_each passes one per row
      x, y, mask = (jnp.broadcast_to(a, (b,) + a.shape) for a in (x, y, mask))
    _, mu, logvar = m.encode(tokens, x, y, mask)
    # The posterior's spread, for latent noise (SearchConfig.latent_noise); a model without
    # the VAE (App. E ablation) has none.
    std = jnp.exp(0.5 * logvar) if self.cfg.use_vae else jnp.zeros_like(mu)
    return mu, std

  def _decode_fn(self, state, z, key, temperature, greedy, n_vars):
    self.traces["decode"] += 1
    m = nnx.merge(self.graphdef, state)
    cache = m.init_cache(z, self.cfg.max_len)
    return decode.sample(m.decode_step, cache, key, batch=z.shape[0], max_len=self.cfg.max_len,
                         temperature=temperature, greedy=greedy, n_vars=n_vars,
                         constrain=self.constrain)

  def _descend_fn(self, state, z, anchor, x, y, mask, lr, prox, *, steps):
    self.traces["descend"] += 1
    m = nnx.merge(self.graphdef, state)
    n = jnp.maximum(mask.sum(), 1)
    y_mean = jnp.sum(jnp.where(mask, y, 0.0)) / n
    y_var = jnp.maximum(jnp.sum(jnp.where(mask, (y - y_mean) ** 2, 0.0)) / n, 1e-12)

    def loss(z):
      y_hat = m.evaluate(z[None], x[None])[0]
      data = jnp.sum(jnp.where(mask, (y_hat - y) ** 2, 0.0)) / n / y_var
      return data + prox * jnp.sum((z - anchor) ** 2)

    tx = optax.adam(lr)

    def step(carry, _):
      z, opt = carry
      value, g = jax.value_and_grad(loss)(z)
      updates, opt = tx.update(g, opt)
      return (optax.apply_updates(z, updates), opt), value

    (z, _), losses = jax.lax.scan(step, (z, tx.init(z)), None, length=steps)
    return z, losses

  # --- host API --------------------------------------------------------------------------

  def encode(self, tokens: np.ndarray | None, scatter: Scatter, with_std: bool = False):
    """tokens [B, L] (None: one scatter-only encode f(pad, D)) -> z = mu [B, d_z] float32,
    or (mu, std) with_std: the posterior's mean and standard deviation."""
    if tokens is None:
      tokens = np.zeros((1, 0), np.int32)
    b = len(tokens)
    # Powers of two from 1: a search encodes 1-3 distinct parents per call (its parents repeat
    # and are cached per scatter), so a bucket of 8 was three quarters padding.
    padded = np.zeros((evaluate.batch_bucket(b, 1), tokens.shape[1]), np.int32)
    padded[:b] = tokens
    if tokens.shape[1]:
      padded[b:, 0], padded[b:, 1], padded[b:, 2] = vocab.BOS, vocab.FIRST_VAR_ID, vocab.EOS
    mu, std = self._encode(self.state, padded, scatter.x, scatter.y, scatter.mask)
    mu, std = np.asarray(mu)[:b], np.asarray(std)[:b]
    return (mu, std) if with_std else mu

  def encode_each(self, tokens: np.ndarray, scatters: Scatter) -> np.ndarray:
    """tokens [B, L], row i with its own scatter (x [B, P, F], y [B, P], mask [B, P]) -> z [B, d_z]."""
    b = len(tokens)
    extra = evaluate.batch_bucket(b) - b
    pad = lambda a: np.concatenate([a, np.repeat(a[:1], extra, axis=0)])  # bucket rows copy row 0
    z, _ = self._encode(self.state, pad(tokens), pad(scatters.x), pad(scatters.y), pad(scatters.mask))
    return np.asarray(z)[:b]

  def decode(self, z: np.ndarray, key: jax.Array, temperature: float, n_greedy: int,
             n_vars: int) -> np.ndarray:
    """Decode one sequence per row of z [B, d_z]; the first n_greedy rows by argmax."""
    b = len(z)
    bp = evaluate.batch_bucket(b)
    zp = np.zeros((bp, z.shape[1]), np.float32)
    zp[:b] = z
    greedy = np.arange(bp) < n_greedy
    ids = self._decode(self.state, zp, key, jnp.float32(temperature), greedy, jnp.int32(n_vars))
    return np.asarray(ids)[:b]

  def descend(self, z: np.ndarray, anchor: np.ndarray, scatter: Scatter, steps: int, lr: float,
              prox: float) -> tuple[np.ndarray, np.ndarray]:
    """Adam on z [d_z] through g_eval (Eq. 10, one lax.scan); returns (z, loss per step)."""
    z_out, losses = self._descend(self.state, jnp.asarray(z, jnp.float32),
                                  jnp.asarray(anchor, jnp.float32), scatter.x, scatter.y,
                                  scatter.mask, jnp.float32(lr), jnp.float32(prox), steps=steps)
    return np.asarray(z_out), np.asarray(losses)


# --- a model as plain arrays (to hand to worker processes) ---------------------------------

def to_bundle(model: model_lib.LEE) -> dict[str, Any]:
  """{'config': ModelConfig fields, 'params': nested dict of NumPy arrays}; picklable."""
  params = nnx.to_pure_dict(nnx.state(model, nnx.Param))
  return {"config": dataclasses.asdict(model.cfg), "params": jax.tree.map(np.asarray, params)}


def from_bundle(bundle: dict[str, Any]) -> model_lib.LEE:
  return model_lib.with_params(configs.ModelConfig(**bundle["config"]), bundle["params"])


def untrained(name: str) -> tuple[Engine, dict]:
  """(Engine, bundle) of a randomly initialised model of a preset size (timing, smoke tests)."""
  compile_cache.enable()
  model = model_lib.LEE(configs.get_model_config(name), rngs=nnx.Rngs(0))
  return Engine(model), to_bundle(model)


_LOADED: dict[tuple[str, bool], tuple[Engine, dict]] = {}


def load(checkpoint: str | None = None, constrain: bool = True) -> tuple[Engine, dict]:
  """(Engine, bundle) for a model directory (None: the one shipped in the package).

  The directory is either shippable weights (lee_jax.weights) or an Orbax export / training
  workdir (lee_jax.checkpoints).

  Cached per process, so repeated fits (an estimator in a sweep) load and compile once.
  Raises checkpoints.CheckpointError (one line, names the path) when it cannot be loaded.
  """
  from lee_jax import checkpoints  # deferred: orbax is slow to import
  from lee_jax import weights

  compile_cache.enable()
  path = str(checkpoints.shipped_dir() if checkpoint is None else checkpoint)
  if (path, constrain) not in _LOADED:
    if checkpoint is None and not checkpoints.shipped_available():
      raise checkpoints.CheckpointError(
          f"no trained checkpoint is shipped with this build ({path} is missing); pass a "
          "checkpoint directory (a training workdir or its export/ folder)")
    model = weights.load_any(path)
    _LOADED[(path, constrain)] = (Engine(model, constrain), to_bundle(model))
  return _LOADED[(path, constrain)]
