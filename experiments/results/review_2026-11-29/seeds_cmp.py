"""Every Strogatz/Feynman set's polynomial and separable seeds on its first 500 training rows
(seed 0), as JSON: run at two commits and compare. python experiments/results/review_2026-11-29/seeds_cmp.py OUT.json"""
import sys, json
from lee_jax import datasets as D, polynomial, separable, expr as E
out = {}
for info in D.list_datasets():
  if info.group not in ("strogatz", "feynman"): continue
  ds = D.load_dataset(info.name)
  parts = D.split(ds.X, ds.y, seed=0)
  X, y = parts.X_train[:500], parts.y_train[:500]
  p = polynomial.sparse_fits(X, y, None, max_terms=3)
  s = separable.separable_fits(X, y, None, max_terms=2)
  out[info.name] = [" ".join(E.to_prefix(n)) for n in p + s]
json.dump(out, open(sys.argv[1], "w"))
