"""Benchmark: training-data pipeline throughput (examples/s) with 0 and N grain workers.

  python experiments/bench_data.py --workers=0,2 --batches=20

Prints one line per worker count. The training target is >= 10,000 examples/s on the
16-core GPU host (paper batch 256 at several steps/s).

Workers build batches ahead while the first ones are awaited, so timing right after two
batches counts that head start as throughput (12 workers on the 2-core box "made" 5,749
examples/s that way). The default warm-up therefore drains two batches per worker and
buffer slot first, and the rate is taken over the later half of the timed batches.
"""

import time

from absl import flags

from lee_jax import cli
from lee_jax import pipeline

_WORKERS = flags.DEFINE_list("workers", ["0", "2"], "Worker-process counts to measure.")
_BUFFERS = flags.DEFINE_list("buffers", ["1"], "Finished batches each worker may hold (grain's "
                             "per_worker_buffer_size) to measure.")
_BATCH = flags.DEFINE_integer("batch_size", 256, "Examples per batch.")
_BATCHES = flags.DEFINE_integer("batches", 40, "Batches after the warm-up; the rate is taken "
                                 "over the later half of them.", lower_bound=4)
_WARMUP = flags.DEFINE_integer("warmup", None, "Untimed batches (worker start-up, imports, the "
                                "workers' head start); default 2 + 2 per worker.")
_SEED = flags.DEFINE_integer("seed", 0, "Data seed.", lower_bound=0)


def measure(workers: int, buffer: int = 1) -> float:
  it = iter(pipeline.batches(pipeline.DataConfig(), _SEED.value, _BATCH.value, workers=workers,
                             buffer=buffer))
  try:
    warmup = 2 + 2 * workers * buffer if _WARMUP.value is None else _WARMUP.value
    for _ in range(warmup):
      next(it)
    stamps = []
    for _ in range(_BATCHES.value):
      next(it)
      stamps.append(time.perf_counter())
    half = len(stamps) // 2  # what the buffers still held is spent by now
    return (len(stamps) - 1 - half) * _BATCH.value / (stamps[-1] - stamps[half])
  finally:
    if hasattr(it, "close"):
      it.close()


def main(argv):
  del argv
  try:
    counts = [(int(w), [int(b) for b in (_BUFFERS.value if int(w) else ["1"])])
              for w in _WORKERS.value]
  except ValueError:
    raise ValueError(f"--workers and --buffers take integers, got {','.join(_WORKERS.value)} "
                     f"and {','.join(_BUFFERS.value)}") from None
  if not counts or any(w < 0 or not bs or min(bs) < 1 for w, bs in counts):
    raise ValueError("--workers takes counts >= 0 and --buffers counts >= 1")
  if _WARMUP.value is not None and _WARMUP.value < 0:
    raise ValueError(f"--warmup must be >= 0, got {_WARMUP.value}")
  for w, bs in counts:
    for b in bs:
      rate = measure(w, b)
      print(f"workers={w:3d}  buffer={b}  batch={_BATCH.value}  examples/s={rate:,.0f}",
            flush=True)


if __name__ == "__main__":
  cli.run(main, ValueError)
