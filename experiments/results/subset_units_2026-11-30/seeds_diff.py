"""Compare two seeds_cmp2.py outputs: which sets' seeds changed, and the best R2 of each side's
seeds on the rows they came from (and on the test fold)."""
import sys, json
import numpy as np
from lee_jax import datasets as D, expr as E, score, trial
a, b = (json.load(open(p)) for p in sys.argv[1:3])
changed = [k for k in a if a[k] != b[k]]
print(f"{len(changed)} of {len(a)} sets changed")
rows = []
for k in changed:
  ds = D.load_dataset(k); parts = D.split(ds.X, ds.y, seed=0)
  n = 1000 if ds.group not in ("strogatz", "feynman") else 500
  X, y = parts.X_train[:n], parts.y_train[:n]
  def best(seeds, X, y):
    with np.errstate(all="ignore"):
      return max([score.r2(y, trial.predict(E.from_prefix(s.split()), X)) for s in seeds] or [-np.inf])
  ra, rb = best(a[k], X, y), best(b[k], X, y)
  ta, tb = best(a[k], parts.X_test, parts.y_test), best(b[k], parts.X_test, parts.y_test)
  rows.append((k, len(a[k]), len(b[k]), ra, rb, ta, tb))
  print(f"{k:32s} n {len(a[k]):3d}->{len(b[k]):3d}  best train R2 {ra:.6f} -> {rb:.6f}  test {ta:.6f} -> {tb:.6f}", flush=True)
better = sum(r[4] > r[3] + 1e-9 for r in rows); worse = sum(r[4] < r[3] - 1e-9 for r in rows)
print(f"best train R2: {better} better, {worse} worse, {len(rows)-better-worse} the same (1e-9)")
