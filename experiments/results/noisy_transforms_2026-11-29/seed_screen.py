"""Seed-level screen (thirty-ninth session): the transformed seeds before (HEAD's
transformed.py, copied to OLD) and after the noise-tolerant sign and delta-method weights, on
each round's fit rows (fast: rows drawn as search.Round draws them, seeds 0 and 1) of the
SRBench split (seed 0) of every Strogatz, Feynman and black-box set at the given noise.
Usage: python seed_screen.py NOISE SHARD NUM_SHARDS OLD OUT [GROUP]"""
import importlib.util, json, sys, time
import numpy as np
from lee_jax import datasets, evaluate, expr, score, transformed as new
noise, shard, shards, old_path, out_path = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
spec = importlib.util.spec_from_file_location("transformed_old", old_path)
old = importlib.util.module_from_spec(spec); spec.loader.exec_module(old)
names = datasets.resolve(None, [sys.argv[6]] if len(sys.argv) > 6 else ["all"])
out = open(out_path, "a")
for i, name in enumerate(names):
  if i % shards != shard:
    continue
  ds = datasets.load_dataset(name)
  p = datasets.split(ds.X, ds.y, seed=0, noise=noise)
  row = {"dataset": name, "noise": noise}
  for rnd in (0, 1):
    rng = np.random.default_rng(rnd)
    n = len(p.y_train)
    idx = rng.choice(n, min(500, n), replace=False)
    X, y = p.X_train[idx], p.y_train[idx]
    for tag, mod in (("old", old), ("new", new)):
      t = time.time(); nodes = mod.transformed_fits(X, y); dt = time.time() - t
      best = -np.inf
      for nd in nodes:
        with np.errstate(all="ignore"):
          yh = evaluate.evaluate_numpy(nd, X)
        if np.isfinite(yh).all():
          best = max(best, score.r2(y, yh, np.ones(len(y))))
      row[f"{tag}{rnd}"] = {"n": len(nodes), "best": best if nodes else None, "s": round(dt, 2),
                            "prefixes": sorted(" ".join(expr.to_prefix(nd)) for nd in nodes)}
  out.write(json.dumps(row) + "\n"); out.flush()
