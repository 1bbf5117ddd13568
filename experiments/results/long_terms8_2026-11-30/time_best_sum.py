"""Seconds of `long_sums.best_sum` at 6 and 8 terms on seven sets (seed 0, eps 0), each
twice in alternating order.

    LEE_JAX_CPU_THREADS=1 python experiments/results/long_terms8_2026-11-30/time_best_sum.py
"""
import time

import numpy as np

from lee_jax import datasets, long_sums, search

SETS = ("feynman_I_6_2b", "feynman_II_6_15a", "537_houses", "564_fried", "229_pwLinear",
        "strogatz_glider1", "557_analcatdata_apnea1")
total = {6: 0.0, 8: 0.0}
for name in SETS:
  ds = datasets.load_dataset(name)
  data = search.SearchData.from_split(datasets.split(ds.X, ds.y, seed=0, noise=0))
  times = {6: [], 8: []}
  for order in ((6, 8), (8, 6)):
    for terms in order:
      t = time.time()
      long_sums.best_sum(data, terms, 0.002, 1024, 0)
      times[terms].append(time.time() - t)
  for terms in times:
    total[terms] += np.mean(times[terms])
  print(name, {k: round(float(np.mean(v)), 2) for k, v in times.items()}, flush=True)
print({k: round(v, 1) for k, v in total.items()})
