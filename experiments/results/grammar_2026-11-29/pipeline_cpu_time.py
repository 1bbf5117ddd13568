"""CPU time per training example of the data pipeline (run in a checkout at each commit).

  LEE_JAX_CPU_THREADS=1 python experiments/results/grammar_2026-11-29/pipeline_cpu_time.py
"""
import time
from lee_jax import pipeline
import lee_jax
ds = pipeline.examples(pipeline.DataConfig(), 0)
for i in range(50): ds[i]
t = time.process_time()
for i in range(50, 2050): ds[i]
print(lee_jax.__file__.split("/")[2], "cpu ms/example", round((time.process_time() - t) / 2000 * 1e3, 3))
