"""A million rows through LEERegressor with max_time (the probe's case): wall time, answer.

    LEE_JAX_CPU_THREADS=1 /usr/bin/time -v python experiments/results/rows_cap_2026-11-29/million.py N MAX_TIME
"""
import sys
import time

import numpy as np

from lee_jax import LEERegressor

n, max_time = int(sys.argv[1]), float(sys.argv[2])
rng = np.random.default_rng(0)
X = rng.uniform(-3, 3, (n, 3))
y = X[:, 0] * np.sin(X[:, 1]) + X[:, 2]
t = time.time()
est = LEERegressor(max_time=max_time, seed=0).fit(X, y)
print(f"rows {n}: fit {time.time() - t:.1f} s (max_time {max_time}), timed_out "
      f"{est.timed_out_}: {est.sympy()}")
