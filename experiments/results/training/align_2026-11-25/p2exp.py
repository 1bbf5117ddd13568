# Throwaway phase-2 probe (2026-11-25), kept as the record of BUILD_NOTES "Phase 2 with an EMA align target".
# Run from the repo root: python experiments/results/training/align_2026-11-25/p2exp.py VARIANT STEPS PARAMS [DECAY] [BATCH]
"""Scratch: phase-2 variants on a phase-1 model. Not part of the project."""
import sys, time, functools
from flax import nnx
import jax, jax.numpy as jnp, numpy as np, optax
from lee_jax import configs, losses, pipeline, weights, trainer

variant, steps, src = sys.argv[1], int(sys.argv[2]), sys.argv[3]
decay = float(sys.argv[4]) if len(sys.argv) > 4 else 0.99
bs = int(sys.argv[5]) if len(sys.argv) > 5 else 32
model = weights.load_any(src)
cfg = model.cfg if hasattr(model, "cfg") else None
mcfg = cfg
graphdef, params, rest = nnx.split(model, nnx.Param, ...)
ema = jax.tree.map(jnp.array, params)
W = configs.LossWeights(1.0, 5.0, 0.001, 0.0, 0.0)
lr = optax.warmup_cosine_decay_schedule(0.0, 3e-4, 50, max(steps, 100), end_value=1e-5)
tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(lr, weight_decay=0.01))
opt = tx.init(params)

@jax.jit
def step(params, opt, ema, batch, key):
  def loss_fn(p):
    m = nnx.merge(graphdef, p, rest)
    loss, met = losses.total_loss(m, batch, key, W, mcfg)
    z, mu, lv = m.encode(batch["tokens"], batch["x"], batch["y"], batch["point_mask"], rng=None)
    if variant == "ema":
      tm = nnx.merge(graphdef, ema, rest)
    else:
      tm = m
    _, mp, lp = tm.encode_scatter(batch["x"], batch["y"], batch["point_mask"])
    if variant in ("paper", "ema"):
      mp, lp = jax.lax.stop_gradient((mp, lp))
    # align on the step's q (deterministic here for simplicity)
    a = losses.gaussian_kl(mu, lv, mp, lp)
    loss = loss + 2.0 * a
    met["align"] = a
    _, accp = losses.expr_loss(m.decode_logits(jax.lax.stop_gradient(mp), batch["tokens"]), batch["tokens"][:, 1:])
    met["acc_p"] = accp
    return loss, met
  (l, met), g = jax.value_and_grad(loss_fn, has_aux=True)(params)
  up, opt = tx.update(g, opt, params)
  params = optax.apply_updates(params, up)
  ema = jax.tree.map(lambda e, p: decay * e + (1 - decay) * p, ema, params)
  met["gn"] = optax.tree.norm(g)
  return params, opt, ema, met

it = iter(pipeline.batches(pipeline.DataConfig(max_len=mcfg.max_len), 7, bs, workers=0))
key = jax.random.key(0)
t = time.time(); acc = []
for s in range(1, steps + 1):
  params, opt, ema, met = step(params, opt, ema, next(it), jax.random.fold_in(key, s))
  acc.append(jax.device_get(met))
  if s % 25 == 0:
    m = {k: np.mean([a[k] for a in acc]) for k in acc[0]}; acc = []
    print(f"{variant} {s} {time.time()-t:.0f}s " + " ".join(f"{k} {v:.4g}" for k, v in m.items()), flush=True)
