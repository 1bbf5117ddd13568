"""Every SRBench set's subset-search seeds (polynomial 3 terms, separable 2, power laws; on the
black-box sets the long sums' 6-term sums) on its first 500 (long sums: 1000) training rows,
seed 0, as JSON: run before and after a change and compare. python seeds_cmp2.py OUT.json"""
import sys, json, time
from lee_jax import datasets as D, polynomial, separable, power_law, long_sums, expr as E
out = {}
t0 = time.time()
for info in D.list_datasets():
  ds = D.load_dataset(info.name)
  parts = D.split(ds.X, ds.y, seed=0)
  X, y = parts.X_train[:500], parts.y_train[:500]
  if info.group in ("strogatz", "feynman"):
    nodes = (polynomial.sparse_fits(X, y, None, max_terms=3)
             + separable.separable_fits(X, y, None, max_terms=2) + power_law.power_fits(X, y, None))
  else:
    nodes = long_sums.sums(parts.X_train[:1000], parts.y_train[:1000], None, 6)
  out[info.name] = [" ".join(E.to_prefix(n)) for n in nodes]
  print(info.name, len(nodes), f"{time.time()-t0:.0f}s", flush=True)
json.dump(out, open(sys.argv[1], "w"))
