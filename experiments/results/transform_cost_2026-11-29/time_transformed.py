"""Seconds of one `transformed.transformed_fits` call (the search makes one per round) on the
first 200 rows of each 10-column black-box set, and the share of it in `factored_fits`.

  LEE_JAX_CPU_THREADS=1 python experiments/results/transform_cost_2026-11-29/time_transformed.py
"""
import time

import numpy as np

from lee_jax import datasets
from lee_jax import factored
from lee_jax import transformed

for info in datasets.list_datasets():
  if info.group != "blackbox" or info.features != 10:
    continue
  ds = datasets.load_dataset(info.name)
  X, y = ds.X[:200].astype(float), ds.y[:200].astype(float)
  w = np.ones(len(y))
  t0 = time.perf_counter()
  seeds = transformed.transformed_fits(X, y, w)
  total = time.perf_counter() - t0
  in_factored = 0.0
  for name, _, rows, t, wt in transformed.targets(y, w):
    if name == "log":  # no factored seeds under the exponential
      continue
    for wi in (w[rows], wt / wt.mean()):  # both weightings, as transformed_fits
      t0 = time.perf_counter()
      factored.factored_fits(X[rows], t, wi)
      in_factored += time.perf_counter() - t0
  print(f"{info.name}: {total:.1f} s, factored {in_factored:.1f} s, {len(seeds)} seeds",
        flush=True)
