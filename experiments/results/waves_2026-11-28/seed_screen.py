"""Seed-level screen (thirty-eighth session, run at the first version of waves.scan: grid
step 1/8 cycle, no significance floor): the best wave seed's R2 per dataset (first 500 rows
of a permutation, weights 1) beside the latest per-cell answers."""
import json, time, numpy as np
from lee_jax import waves, evaluate, score, datasets
R = "experiments/results/separable_singles_2026-11-28/"
cells = {}
for f in [R + "feynman_119.jsonl", R + "blackbox_72.jsonl"] + [R + "strogatz14/results.jsonl"]:
  for l in open(f):
    r = json.loads(l); cells[r["dataset"]] = r
out = open("experiments/results/waves_2026-11-28/seed_screen.jsonl", "w")
for name, r in sorted(cells.items()):
  d = datasets.load_dataset(name)
  idx = np.random.default_rng(0).permutation(len(d.y))[:500]
  X, y = d.X[idx], d.y[idx]
  t = time.time(); nodes = waves.wave_fits(X, y); dt = time.time() - t
  best, bn = -np.inf, None
  for n in nodes:
    with np.errstate(all="ignore"):
      yh = evaluate.evaluate_numpy(n, X)
    if np.isfinite(yh).all():
      s = score.r2(y, yh, np.ones(len(y)))
      if s > best: best, bn = s, n
  row = {"dataset": name, "wave_r2": best, "n": len(nodes), "s": round(dt, 3),
         "r2_test": r["r2_test"], "r2_val": r["r2_val"], "complexity": r["complexity"],
         "expr": r["expression"][:80]}
  out.write(json.dumps(row) + "\n"); out.flush()
