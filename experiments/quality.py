"""How good a trained model is on its own, before any search (issue 5's quality measures).

    python experiments/quality.py --checkpoint=DIR               # default: the shipped model
    python experiments/quality.py --random_model=tiny --n=64     # smoke test: untrained model

All on the held-out (test) split of the generated corpus (pipeline.split_of), scatter drawn
exactly as for training:

1. Losses: every Eq. 7 term of phase 5 (expr, eval, KL, align, refine) and the token
   accuracies, deterministic (no dropout, z = mu), averaged over --loss_batches batches of 32.
2. Reconstruction: greedy decode of g_expr(f(tokens, D)). Exact match of the token sequence
   (constants included), skeleton match (constants ignored), and R2 of the decoded expression
   against the true one on 200 fresh points.
3. One-shot: greedy decode of g_expr(f(PAD, D)), scatter only. R2 on fresh points as decoded,
   and after fitting its constants on D with scipy L-BFGS-B (what the search does to it).

R2 summaries: median, share >= 0.99, and the mean of R2 clipped to [0, 1]. The clip means an
invalid or diverging decode counts as 0, so it cannot swamp the mean.
R2 uses the fresh points where the true expression is finite and below 1e100 in size (log x0
where x0 > 0); one defined at fewer than 20 of them is skipped and counted.
Writes quality.json and quality.md to --out_dir (default experiments/results/quality/); an
existing one is replaced only with --overwrite.
"""

from __future__ import annotations

import json
import pathlib
import sys
import time

import jax
import numpy as np
from absl import flags
from flax import nnx

from lee_jax import cli
from lee_jax import configs
from lee_jax import engine as engine_lib
from lee_jax import evaluate
from lee_jax import expr as E
from lee_jax import fit
from lee_jax import losses
from lee_jax import score

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import latent  # noqa: E402  (experiments/latent.py, beside this script)

_LOSS_BATCHES = flags.DEFINE_integer("loss_batches", 20, "Held-out batches of 32 for the losses.")
_FIT_ITERS = flags.DEFINE_integer("fit_iters", 100, "L-BFGS-B iterations for the one-shot fit.")
_OVERWRITE = flags.DEFINE_bool("overwrite", False, "Allow replacing an existing quality.json and "
                               "quality.md in --out_dir (the default one holds the committed numbers).")

LOSS_BATCH = 32
DECODE_CHUNK = 64  # rows per decode call (the decoder compiles once per bucket size)
FRESH_POINTS = 200
MIN_DEFINED = 20  # fresh points where the truth is finite, else the expression is skipped


def heldout_batches(n_batches: int, max_len: int, seed: int):
  """n_batches training-shaped batches of test-split examples (the same ones for a seed)."""
  exs = latent.heldout_examples(n_batches * LOSS_BATCH, max_len, seed)
  for b in range(0, len(exs), LOSS_BATCH):
    yield {k: np.stack([ex[k] for ex in exs[b:b + LOSS_BATCH]]) for k in exs[0]}


def heldout_losses(eng: engine_lib.Engine, n_batches: int, seed: int) -> dict[str, float]:
  """Mean of each phase-5 loss term and token accuracy over the held-out batches."""
  weights = configs.PHASES[5].weights
  cfg = eng.cfg

  @jax.jit
  def metrics_of(state, batch):
    model = nnx.merge(eng.graphdef, state)
    return losses.total_loss(model, batch, None, weights, cfg)[1]

  rows = [jax.device_get(metrics_of(eng.state, b))
          for b in heldout_batches(n_batches, cfg.max_len, seed)]
  return {k: float(np.mean([r[k] for r in rows])) for k in rows[0]}


def skeleton(tree: E.Node) -> tuple[str, ...]:
  """Prefix names with every constant written C (so 2.5*x0 and 3*x0 share a skeleton)."""
  return tuple("C" if n.name in ("const", "C") else n.name for n in E.walk(tree))


def greedy_decode(eng: engine_lib.Engine, z: np.ndarray, n_vars: np.ndarray) -> np.ndarray:
  """Greedy ids [n, L] for each row of z, decoding with that row's variable count."""
  out = np.zeros((len(z), eng.cfg.max_len), np.int32)
  key = jax.random.key(0)  # unused by greedy rows
  for k in np.unique(n_vars):
    rows = np.flatnonzero(n_vars == k)
    for s in range(0, len(rows), DECODE_CHUNK):
      part = rows[s:s + DECODE_CHUNK]
      out[part] = eng.decode(z[part], key, 1.0, n_greedy=len(part), n_vars=int(k))
  return out


def parse_or_none(ids: np.ndarray) -> E.Node | None:
  try:
    return E.parse_ids(ids)
  except E.InvalidExpression:
    return None


def values(tree: E.Node | None, X: np.ndarray) -> np.ndarray | None:
  if tree is None:
    return None
  with np.errstate(all="ignore"):
    return np.asarray(evaluate.evaluate_numpy(tree, X), np.float64)


def r2_on(y_true: np.ndarray, tree: E.Node | None, X: np.ndarray) -> float:
  y_hat = values(tree, X)
  return -np.inf if y_hat is None else score.r2(y_true, y_hat)


def summarize(r2s: list[float]) -> dict[str, float]:
  # nan (an overflowed R2) counts as -inf; not nan_to_num, which also turns -inf into
  # -1.8e308: a median of -1.8e308, or -inf where the middle two overflow
  a = np.asarray(r2s, np.float64)
  a = np.where(np.isnan(a), -np.inf, a)
  if not len(a):
    return {"n": 0, "median_r2": float("nan"), "share_r2_ge_0.99": float("nan"),
            "mean_r2_clipped": float("nan")}
  return {"n": len(a), "median_r2": float(np.median(a)),
          "share_r2_ge_0.99": float(np.mean(a >= 0.99)),
          "mean_r2_clipped": float(np.mean(np.clip(a, 0, 1)))}  # -inf clips to 0


def fitted(tree: E.Node | None, scatter: engine_lib.Scatter, n_vars: int, iters: int):
  """The tree with its constants fitted to the scatter's kept, finite points (or as it was)."""
  if tree is None or not E.constants(tree):
    return tree
  keep = scatter.mask & np.isfinite(scatter.y)
  if keep.sum() < 2:
    return tree
  res = fit.fit_constants(tree, scatter.x[keep][:, :n_vars], scatter.y[keep], iters)
  return res.node if res.ok else tree


def measure(eng: engine_lib.Engine, n: int, seed: int, fit_iters: int) -> dict:
  """Reconstruction and one-shot numbers for n held-out expressions."""
  trees, tokens, scatters = latent.sample_heldout(n, eng.cfg.max_len, seed)
  k = np.array([latent.n_vars_of(t) for t in trees])
  z_full = latent.encode_all(eng, tokens, scatters, DECODE_CHUNK)
  z_data = latent.encode_all(eng, np.zeros((n, 0), np.int32), scatters, DECODE_CHUNK)
  rec_ids, one_ids = greedy_decode(eng, z_full, k), greedy_decode(eng, z_data, k)

  rng = np.random.default_rng(seed + 1)
  skel, rec_r2, one_r2, fit_r2, skipped, invalid = 0, [], [], [], 0, 0
  hits = np.zeros(n, bool)
  for i, tree in enumerate(trees):
    rec, one = parse_or_none(rec_ids[i]), parse_or_none(one_ids[i])
    invalid += (rec is None) + (one is None)
    hits[i] = rec is not None and E.to_prefix(rec) == E.to_prefix(tree)
    skel += rec is not None and skeleton(rec) == skeleton(tree)
    X = latent.uniform_points(rng, FRESH_POINTS, k[i])
    y = values(tree, X)
    # e.g. log x0 is compared where x0 > 0; |y| < 1e100 keeps R2's sums of squares finite
    defined = np.isfinite(y) & (np.abs(y) < 1e100)
    if defined.sum() < MIN_DEFINED:
      skipped += 1
      continue
    X, y = X[defined], y[defined]
    rec_r2.append(r2_on(y, rec, X))
    one_r2.append(r2_on(y, one, X))
    scatter_i = engine_lib.Scatter(scatters.x[i], scatters.y[i], scatters.mask[i])
    fit_r2.append(r2_on(y, fitted(one, scatter_i, k[i], fit_iters), X))
  return {"n": n, "skipped_nonfinite_truth": skipped, "invalid_decodes": invalid,
          "reconstruction": {"exact_match": float(hits.mean()), "skeleton_match": skel / n,
                             **summarize(rec_r2)},
          # by variable count: the grammar of 2026-11-29 put constants in 5+ variable laws,
          # which the models before it never saw (their held-out numbers fell with it)
          "exact_match_by_vars": {int(v): float(hits[k == v].mean()) for v in np.unique(k)},
          "oneshot": summarize(one_r2), "oneshot_fitted": summarize(fit_r2)}


def to_markdown(result: dict) -> str:
  lo, rec = result["losses"], result["reconstruction"]
  # "--" only for no value (nan); a median of -inf (over half the decodes undefined or
  # overflowing) prints as such, not as if the cell did not apply
  f = lambda v: "--" if np.isnan(v) else f"{v:.3f}"
  lines = [f"# Model quality on held-out expressions -- {result['model']}", "",
           f"Held-out losses ({result['loss_batches']} batches of {LOSS_BATCH}, deterministic): "
           + ", ".join(f"{k} {v:.4g}" for k, v in sorted(lo.items())), "",
           f"{result['n']} held-out expressions; R2 on {FRESH_POINTS} fresh points "
           f"where the truth is finite ({result['skipped_nonfinite_truth']} skipped: finite at < {MIN_DEFINED}).", "",
           "| decode | exact match | skeleton match | median R2 | R2 >= 0.99 | mean R2 (clip 0..1) |",
           "|---|---:|---:|---:|---:|---:|",
           f"| f(tokens, D), greedy | {f(rec['exact_match'])} | {f(rec['skeleton_match'])} | "
           f"{f(rec['median_r2'])} | {f(rec['share_r2_ge_0.99'])} | {f(rec['mean_r2_clipped'])} |"]
  for name, label in (("oneshot", "f(PAD, D), greedy"),
                      ("oneshot_fitted", "f(PAD, D), greedy + L-BFGS-B")):
    s = result[name]
    lines.append(f"| {label} | -- | -- | {f(s['median_r2'])} | {f(s['share_r2_ge_0.99'])} | "
                 f"{f(s['mean_r2_clipped'])} |")
  by_vars = result.get("exact_match_by_vars", {})
  if by_vars:
    lines += ["", "Exact match by number of variables: " + ", ".join(
        f"{k}: {f(v)}" for k, v in sorted(by_vars.items(), key=lambda kv: int(kv[0])))]
  return "\n".join(lines) + "\n"


def main(argv):
  del argv
  n = latent.n_or(1000)
  if n < 1 or _LOSS_BATCHES.value < 1 or _FIT_ITERS.value < 0:
    cli.fail("need --n >= 1, --loss_batches >= 1 and --fit_iters >= 0")
  # Both outputs are checked before the model loads and the minutes of measuring start.
  out = cli.output_dir(latent.OUT_DIR.value or "experiments/results/quality")
  for name in ("quality.json", "quality.md"):
    cli.output_file(out / name, overwrite=_OVERWRITE.value, flag="--out_dir")
  eng, label = latent.engine_from_flags()
  t0 = time.perf_counter()
  result = {"model": label, "loss_batches": _LOSS_BATCHES.value,
            "losses": heldout_losses(eng, _LOSS_BATCHES.value, latent.SEED.value),
            **measure(eng, n, latent.SEED.value, _FIT_ITERS.value)}
  result["seconds"] = round(time.perf_counter() - t0, 1)
  (out / "quality.json").write_text(json.dumps(result, indent=1) + "\n")
  md = to_markdown(result)
  (out / "quality.md").write_text(md)
  print(md)
  print(f"measured in {result['seconds']} s; wrote {out / 'quality.json'} and {out / 'quality.md'}")


if __name__ == "__main__":
  cli.run(main, ValueError)
