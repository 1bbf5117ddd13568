"""How many recorded answers the parsimony step's new tie rule changes: SymPy's form of the
answer is a shorter tree with the same values on the training rows (parsimony._same_but_shorter).

    python experiments/results/sympy_tree_2026-11-29/shorter_forms.py RESULTS.jsonl ...

For each answer: the prefix (3 significant figures), its SymPy form, whether the rule takes
it, and the largest relative difference of the two on the cell's test rows.
"""
import json
import sys

import numpy as np

from lee_jax import datasets, evaluate, parsimony
from lee_jax import expr as E

taken = total = 0
for path in sys.argv[1:]:
  for line in open(path):
    r = json.loads(line)
    if not (r.get("found") and r.get("prefix")):
      continue
    total += 1
    node = E.from_prefix(r["prefix"].split())
    form = parsimony.sympy_form(node)
    ds = datasets.load_dataset(r["dataset"])
    p = datasets.split(ds.X, ds.y, seed=r["seed"], noise=r["noise"])
    if form is None or not parsimony._same_but_shorter(form, node, p.X_train):
      continue
    taken += 1
    with np.errstate(all="ignore"):
      a, b = evaluate.evaluate_numpy(node, p.X_test), evaluate.evaluate_numpy(form, p.X_test)
    nan_fixed = int(np.sum(~np.isfinite(a) & np.isfinite(b)))
    ok = np.isfinite(a) & np.isfinite(b)
    rel = float(np.max(np.abs(a[ok] - b[ok]) / np.maximum(np.abs(a[ok]), 1e-300))) if ok.any() else 0
    print(f"{r['dataset']} eps={r['noise']}: {len(node)} -> {len(form)} nodes, test rows "
          f"non-finite before only {nan_fixed}, max rel diff {rel:.1e}: {r['expression']}")
print(f"{taken} of {total} answers take SymPy's shorter tree")
