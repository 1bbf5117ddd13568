"""Benchmark: training-data pipeline throughput (examples/s) with 0 and N grain workers.

  python experiments/bench_data.py --workers=0,2 --batches=20

Prints one line per worker count. The training target is >= 10,000 examples/s on the
16-core GPU host (paper batch 256 at several steps/s).
"""

import time

from absl import app, flags

from lee_jax import pipeline

_WORKERS = flags.DEFINE_list("workers", ["0", "2"], "Worker-process counts to measure.")
_BATCH = flags.DEFINE_integer("batch_size", 256, "Examples per batch.")
_BATCHES = flags.DEFINE_integer("batches", 20, "Batches timed after the warm-up batches.")
_WARMUP = flags.DEFINE_integer("warmup", 2, "Untimed batches (worker start-up, imports).")
_SEED = flags.DEFINE_integer("seed", 0, "Data seed.")


def measure(workers: int) -> float:
  it = iter(pipeline.batches(pipeline.DataConfig(), _SEED.value, _BATCH.value, workers=workers))
  try:
    for _ in range(_WARMUP.value):
      next(it)
    start = time.perf_counter()
    for _ in range(_BATCHES.value):
      next(it)
    return _BATCHES.value * _BATCH.value / (time.perf_counter() - start)
  finally:
    if hasattr(it, "close"):
      it.close()


def main(argv):
  del argv
  for w in _WORKERS.value:
    rate = measure(int(w))
    print(f"workers={int(w):3d}  batch={_BATCH.value}  examples/s={rate:,.0f}", flush=True)


if __name__ == "__main__":
  app.run(main)
