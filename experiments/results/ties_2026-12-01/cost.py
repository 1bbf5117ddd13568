"""CPU seconds of the parsimony step (`parsimony.answer`) on each recorded answer, with the
ties (parsimony.TIES as shipped) and without (TIES = 0), taking turns per cell, each from
cold caches (the complexity counts and SymPy's own: a second run would find the first's).

    LEE_JAX_CPU_THREADS=1 python experiments/results/ties_2026-12-01/cost.py RECORD.jsonl...

Each answer starts from its prefix refitted on the step's rows (as tie_screen.py does).
"""

import json
import sys
import time

import numpy as np
import sympy

sys.path.insert(0, "experiments")
import parsimony_replay  # noqa: E402

from lee_jax import complexity  # noqa: E402
from lee_jax import configs  # noqa: E402
from lee_jax import expr as E  # noqa: E402
from lee_jax import fit  # noqa: E402
from lee_jax import parsimony  # noqa: E402

SHIPPED = parsimony.TIES


def seconds(cell, ties):
  _, _, data = parsimony_replay._folds(cell)
  X, y, _ = parsimony.rows(data.X_train, data.y_train, None, cell["seed"])
  node = fit.fit_constants(E.from_prefix(cell["prefix"].split()), X, y, 200).node
  found = parsimony_replay._candidate(cell, node)
  parsimony.TIES = ties
  complexity.cache.data.clear()
  complexity.light_cache.data.clear()
  sympy.core.cache.clear_cache()
  t0 = time.thread_time()
  parsimony.answer(found, data, cell["search"].get("alpha", configs.SearchConfig.alpha),
                   cell["search"].get("probe_points", configs.SearchConfig.probe_points),
                   cell["seed"])
  return time.thread_time() - t0


for path in sys.argv[1:]:
  rows = []
  for line in open(path):
    cell = json.loads(line)
    if cell.get("found") and cell.get("prefix"):
      rows.append((cell["dataset"], cell["complexity"], seconds(cell, 0), seconds(cell, SHIPPED)))
  off, on = np.array([r[2] for r in rows]), np.array([r[3] for r in rows])
  worst = max(rows, key=lambda r: r[3] - r[2])
  print(f"{path}: {len(rows)} answers; without ties mean {off.mean():.3f} s, median "
        f"{np.median(off):.3f}, largest {off.max():.3f}; with ties mean {on.mean():.3f} s, "
        f"median {np.median(on):.3f}, largest {on.max():.3f}; most added: {worst[0]} "
        f"(C {worst[1]}) {worst[2]:.3f} -> {worst[3]:.3f} s", flush=True)
