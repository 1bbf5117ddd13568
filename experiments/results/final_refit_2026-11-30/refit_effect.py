"""The final refit's own effect in a `parsimony_replay.py --final_refit` output: each cell's
answer before the refit ("before_refit", where it was taken) against after it.

    python refit_effect.py REPLAYED.jsonl [...]

Prints per file the clipped mean test R2 before and after, the cells better and worse by more
than 1e-4 and by more than 1e-3, and the laws exact (test R2 >= 1 - 1e-9) before and after.
"""
import json
import sys

import numpy as np

for path in sys.argv[1:]:
  cells = [json.loads(l) for l in open(path) if l.strip()]
  after = np.array([max(0.0, c["r2_test"] or 0.0) for c in cells])
  before = np.array([max(0.0, (c.get("before_refit") or c)["r2_test"] or 0.0) for c in cells])
  d = after - before
  exact = lambda v: int(np.sum(v >= 1 - 1e-9))
  print(f"{path}: {len(cells)} cells, {sum('before_refit' in c for c in cells)} refitted; "
        f"clipped {before.mean():.4f} -> {after.mean():.4f}; better/worse by 1e-4: "
        f"{int(np.sum(d > 1e-4))}/{int(np.sum(d < -1e-4))}, by 1e-3: {int(np.sum(d > 1e-3))}/"
        f"{int(np.sum(d < -1e-3))}; exact {exact(before)} -> {exact(after)}")
  for c, x in sorted(zip(cells, d), key=lambda t: t[1]):
    if abs(x) > 1e-3:
      print(f"  {c['dataset']}: {before[cells.index(c)]:.4f} -> {after[cells.index(c)]:.4f}")
