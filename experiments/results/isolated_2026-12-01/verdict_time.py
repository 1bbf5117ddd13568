"""Time of one dataset's SRBench verdict on a record, in process or in the helper at a hash seed.

    PYTHONHASHSEED=H python verdict_time.py RECORD DATASET here   # the in-process guard only
    python verdict_time.py RECORD DATASET helper H                # lee_jax.isolated's helper at seed H
"""
import json
import os
import subprocess
import sys
import time

from lee_jax import isolated, solution

record, dataset, where = sys.argv[1:4]
if where == "here":
  isolated.ENABLED = False
else:
  seed = sys.argv[4]

  def start(self):  # the helper as isolated._Helper starts it, at another hash seed
    env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=os.getcwd())
    self.proc = subprocess.Popen([sys.executable, "-m", "lee_jax.isolated"], env=env,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, start_new_session=True)

  isolated._Helper.__init__ = start
for line in open(record):
  row = json.loads(line)
  if row["dataset"] == dataset:
    t0 = time.monotonic()
    verdict = solution.of_record(row)
    print(dataset, where, os.environ.get("PYTHONHASHSEED") if where == "here" else seed,
          verdict["reason"], f"{time.monotonic() - t0:.1f} s wall", flush=True)
