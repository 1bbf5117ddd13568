"""Seconds `rewrite.shortest_tree` takes on each recorded answer (its CPU time on this
thread), on the cell's training and validation rows, with the trial's pole guard.

    LEE_JAX_CPU_THREADS=1 python experiments/results/rewrite_2026-11-30/cost.py RECORD...

Prints per record the mean, median, 95th percentile and largest, and the slowest cells.
"""
import json
import sys
import time

import numpy as np

sys.path.insert(0, "experiments")
import parsimony_replay  # noqa: E402

from lee_jax import final_refit  # noqa: E402
from lee_jax import rewrite  # noqa: E402

for path in sys.argv[1:]:
  times = []
  for line in open(path):
    cell = json.loads(line)
    if not cell.get("found") or not cell.get("prefix"):
      continue
    _, _, data = parsimony_replay._folds(cell)
    found, guard, _ = parsimony_replay._answer(cell, data)
    X, _, _ = final_refit.every_row(data)
    t = time.thread_time()
    rewrite.shortest_tree(found.node, X, guard)
    times.append((time.thread_time() - t, cell["dataset"], cell["complexity"]))
  s = np.array([t for t, _, _ in times])
  print(f"{path}: {len(s)} answers, mean {s.mean():.3f} s, median {np.median(s):.3f}, "
        f"p95 {np.percentile(s, 95):.3f}, max {s.max():.3f}")
  for t, name, c in sorted(times, reverse=True)[:3]:
    print(f"  {name} (C {c}): {t:.2f} s")
