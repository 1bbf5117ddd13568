"""The five training losses and their weighted sum (paper §3.4, Eq. 7-9; App. F Table 7).

Every term is a pure function of arrays; `total_loss` runs the model branches a phase needs
and skips (at trace time) every term whose weight is 0.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

from lee_jax import configs
from lee_jax import vocab


def expr_loss(logits: jax.Array, targets: jax.Array) -> tuple[jax.Array, jax.Array]:
  """Token cross-entropy over non-PAD targets (L_expr).

  Args: logits [B, T, V] float, targets [B, T] int32 (PAD positions are ignored).
  Returns: (mean CE over non-PAD targets, token accuracy over the same tokens), both [].
  """
  mask = (targets != vocab.PAD).astype(jnp.float32)
  ce = optax.softmax_cross_entropy_with_integer_labels(logits.astype(jnp.float32), targets)
  n = jnp.maximum(mask.sum(), 1.0)
  correct = (jnp.argmax(logits, axis=-1) == targets).astype(jnp.float32)
  return (ce * mask).sum() / n, (correct * mask).sum() / n


def refine_loss(logits: jax.Array, targets: jax.Array) -> tuple[jax.Array, jax.Array]:
  """L_refine (Eq. 9): expr_loss of logits decoded from f(corrupted, D) vs the clean tokens."""
  return expr_loss(logits, targets)


def eval_loss(y_hat: jax.Array, y: jax.Array) -> jax.Array:
  """Scale-invariant MAE mean_j |y_hat_j - y_j| / max(|y_j|, 1) over finite targets (L_eval).

  Args: y_hat [B, Q] float (finite), y [B, Q] float (NaN/inf are excluded).
  Non-finite targets are replaced before any arithmetic, so their gradient is exactly 0.
  """
  finite = jnp.isfinite(y)
  y = jnp.where(finite, y, 0.0).astype(jnp.float32)
  scale = jnp.maximum(jnp.abs(y), 1.0)
  # Divide before subtracting: y_hat and y can each be ~1e38, their difference overflows.
  err = jnp.abs(y_hat.astype(jnp.float32) / scale - y / scale)
  return jnp.where(finite, err, 0.0).sum() / jnp.maximum(finite.sum(), 1)


def kl_loss(mu: jax.Array, logvar: jax.Array) -> jax.Array:
  """KL(N(mu, exp(logvar)) || N(0, I)), summed over latent dims, mean over batch (L_KL).

  Args: mu, logvar [B, d_z]. Returns [].
  """
  kl = 0.5 * (jnp.square(mu) + jnp.exp(logvar) - 1.0 - logvar)
  return kl.sum(axis=-1).mean()


def gaussian_kl(mu_q, logvar_q, mu_p, logvar_p) -> jax.Array:
  """KL(q || p) of diagonal Gaussians, summed over dims, mean over batch. All [B, d_z]."""
  kl = 0.5 * (logvar_p - logvar_q
              + (jnp.exp(logvar_q) + jnp.square(mu_q - mu_p)) * jnp.exp(-logvar_p) - 1.0)
  return kl.sum(axis=-1).mean()


def align_loss(mu_q, logvar_q, mu_p, logvar_p, direction: str = "q_to_p") -> jax.Array:
  """L_align (Eq. 8) = KL(q(z|t,D) || sg[p(z|D)]); no gradient reaches (mu_p, logvar_p).

  direction='p_to_q' (a deviation, configs.LossWeights) is KL(sg[q] || p): the gradient
  reaches only p. Args: q = posterior from (tokens, scatter), p = scatter-only; all [B, d_z].
  Returns [].
  """
  sg = jax.lax.stop_gradient
  if direction == "q_to_p":
    return gaussian_kl(mu_q, logvar_q, sg(mu_p), sg(logvar_p))
  if direction == "p_to_q":
    return gaussian_kl(sg(mu_q), sg(logvar_q), mu_p, logvar_p)
  raise ValueError(f"align direction must be one of {configs.ALIGN_DIRECTIONS}, "
                   f"got {direction!r}")


def znorm_loss(z: jax.Array) -> jax.Array:
  """Mean over batch of ||z||^2: the latent penalty that replaces KL when use_vae=False."""
  return jnp.square(z).sum(axis=-1).mean()


def total_loss(model, batch: dict, rng: jax.Array, weights: configs.LossWeights,
               cfg: configs.ModelConfig, align_target=None,
               fused: bool = False) -> tuple[jax.Array, dict[str, jax.Array]]:
  """Eq. 7 on one batch (pipeline.make_example keys with a leading B axis).

  Args:
    model: a LEE module (e.g. nnx.merge of the split params inside the train step).
    batch: tokens/corrupted [B, L] int32, x [B, P, F], y [B, P], point_mask [B, P] bool,
      query_x [B, Q, F], query_y [B, Q].
    rng: key for dropout and reparameterization (None: deterministic, e.g. for eval).
    weights: the phase's loss weights; a 0 weight skips that branch entirely.
    cfg: the model config (use_vae=False swaps KL for znorm_loss and drops align).
    align_target: the module whose scatter-only encoding is L_align's p(z|D): None for
      `model` itself (Eq. 8 read literally), or a slow copy of it (the trainer's EMA target).
    fused: with L_refine on, encode the tokens and the corrupted tokens in one call of twice
      the batch (same module, same points), and decode both latents in one call: fewer,
      larger kernels for the same terms (equal without rng; with it, other dropout and eps
      draws of the same distribution).
  Returns: (weighted loss [], metrics: 'loss' and each computed term, plus accuracies).
  """
  r_enc, r_expr, r_eval, r_renc, r_rdec = (
      (None,) * 5 if rng is None else tuple(jax.random.split(rng, 5)))
  tokens, x, y, mask = batch["tokens"], batch["x"], batch["y"], batch["point_mask"]
  fused = fused and bool(weights.refine)
  b = tokens.shape[0]
  if fused:
    twice = lambda a: jnp.concatenate([a, a], axis=0)
    z, mu, logvar = model.encode(jnp.concatenate([tokens, batch["corrupted"]], axis=0),
                                 twice(x), twice(y), twice(mask), rng=r_enc)
    z_r, z, mu, logvar = z[b:], z[:b], mu[:b], logvar[:b]
    # (teacher forcing reads the original tokens under both latents)
    logits = (model.decode_logits(jnp.concatenate([z, z_r], axis=0), twice(tokens), rng=r_expr)
              if weights.expr else None)
  else:
    z, mu, logvar = model.encode(tokens, x, y, mask, rng=r_enc)
  metrics, loss = {}, jnp.zeros((), jnp.float32)

  def add(name, value, weight):
    nonlocal loss
    metrics[name] = value
    loss = loss + weight * value

  if weights.expr:
    ce, acc = expr_loss(logits[:b] if fused else model.decode_logits(z, tokens, rng=r_expr),
                        tokens[:, 1:])
    add("expr", ce, weights.expr)
    metrics["expr_acc"] = acc
  if weights.eval:
    add("eval", eval_loss(model.evaluate(z, batch["query_x"], rng=r_eval), batch["query_y"]),
        weights.eval)
  if weights.kl:
    if cfg.use_vae:
      add("kl", kl_loss(mu, logvar), weights.kl)
    else:
      add("znorm", znorm_loss(z), weights.kl)
  if weights.align and cfg.use_vae:
    # p(z|D) runs deterministically (no dropout). As the paper's target it is wrapped in
    # stop_gradient, so autodiff prunes this whole branch from the backward pass.
    if align_target is not None and weights.align_direction != "q_to_p":
      raise ValueError("a separate align target needs align_direction='q_to_p': p_to_q trains p")
    _, mu_p, logvar_p = (model if align_target is None else align_target).encode_scatter(x, y, mask)
    if weights.align_direction == "q_to_p":
      mu_p, logvar_p = jax.lax.stop_gradient((mu_p, logvar_p))
    add("align", align_loss(mu, logvar, mu_p, logvar_p, weights.align_direction), weights.align)
  if weights.refine:
    if not fused:
      z_r, _, _ = model.encode(batch["corrupted"], x, y, mask, rng=r_renc)
    ce, acc = refine_loss(logits[b:] if fused and weights.expr
                          else model.decode_logits(z_r, tokens, rng=r_rdec), tokens[:, 1:])
    add("refine", ce, weights.refine)
    metrics["refine_acc"] = acc
  metrics["loss"] = loss
  return loss, metrics


def held_out_metrics(model, batch: dict, cfg: configs.ModelConfig) -> dict[str, jax.Array]:
  """Deterministic probes of a batch the optimizer never sees (the trainer's val batch).

  val_expr_acc: teacher-forced token accuracy decoding from mu(tokens, D), the autoencoder;
  val_scatter_acc: the same from the scatter-only mu(PAD, D), what inference starts from
  (phase 1 never trains it; phases 2-5 should raise it); val_align: Eq. 8 between the two.
  """
  tokens, x, y, mask = batch["tokens"], batch["x"], batch["y"], batch["point_mask"]
  _, mu, logvar = model.encode(tokens, x, y, mask)
  _, mu_p, logvar_p = model.encode_scatter(x, y, mask)
  out = {"val_expr_acc": expr_loss(model.decode_logits(mu, tokens), tokens[:, 1:])[1],
         "val_scatter_acc": expr_loss(model.decode_logits(mu_p, tokens), tokens[:, 1:])[1]}
  if cfg.use_vae:
    out["val_align"] = gaussian_kl(mu, logvar, mu_p, logvar_p)
  return out
