"""Time of one dataset's SRBench verdict on a record, in process or in the helper at a hash seed.

    PYTHONHASHSEED=H python verdict_time.py RECORD DATASET here   # the in-process guard only
    python verdict_time.py RECORD DATASET helper H                # lee_jax.isolated's helper at seed H
"""
import json
import os
import sys
import time

from lee_jax import isolated, solution

record, dataset, where = sys.argv[1:4]
if where == "here":
  isolated.ENABLED = False
else:
  seed = isolated.HASH_SEED = sys.argv[4]  # the helper at another hash seed
for line in open(record):
  row = json.loads(line)
  if row["dataset"] == dataset:
    t0 = time.monotonic()
    verdict = solution.of_record(row)
    print(dataset, where, os.environ.get("PYTHONHASHSEED") if where == "here" else seed,
          verdict["reason"], f"{time.monotonic() - t0:.1f} s wall", flush=True)
