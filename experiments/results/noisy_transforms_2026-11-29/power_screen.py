"""Seed-level screen (thirty-ninth session): the power-law seeds before (HEAD's power_law.py,
copied to OLD) and after the second, delta-method-weighted log fit, on round 0's and round
1's fit rows (drawn as search.Round draws them) of the SRBench split (seed 0) of every set
of GROUP at NOISE; each seed list's best R2 on the (noiseless) test rows.
Usage: python power_screen.py NOISE GROUP OLD OUT"""
import importlib.util, json, sys
import numpy as np
from lee_jax import datasets, evaluate, expr, power_law as new, score
noise, group, old_path, out_path = float(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
spec = importlib.util.spec_from_file_location("power_law_old", old_path)
old = importlib.util.module_from_spec(spec); spec.loader.exec_module(old)
out = open(out_path, "w")
for name in datasets.resolve(None, [group]):
  ds = datasets.load_dataset(name)
  p = datasets.split(ds.X, ds.y, seed=0, noise=noise)
  row = {"dataset": name, "noise": noise}
  for rnd in (0, 1):
    n = len(p.y_train)
    idx = np.random.default_rng(rnd).choice(n, min(500, n), replace=False)
    X, y = p.X_train[idx], p.y_train[idx]
    for tag, mod in (("old", old), ("new", new)):
      nodes = mod.power_fits(X, y)
      best = None
      for nd in nodes:
        with np.errstate(all="ignore"):
          yh = evaluate.evaluate_numpy(nd, p.X_test)
        if np.isfinite(yh).all():
          r = score.r2(p.y_test, yh, np.ones(len(yh)))
          best = r if best is None else max(best, r)
      row[f"{tag}{rnd}"] = {"n": len(nodes), "best_test": best,
                            "prefixes": sorted(" ".join(expr.to_prefix(nd)) for nd in nodes)}
  out.write(json.dumps(row) + "\n"); out.flush()
