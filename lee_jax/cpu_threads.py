"""How many threads XLA's CPU backend runs on, chosen before JAX starts its backends.

XLA's CPU client makes its thread pool (Eigen's, the one every CPU computation runs on) one
thread per core the process may run on, read once when the backends start; JAX has no
setting for it, and XLA_FLAGS' --xla_cpu_multi_thread_eigen=false and
intra_op_parallelism_threads=1 left both threads of a 2-core box busy (measured). Worker
processes that share the cores each made a pool the size of the machine (8 workers on 2
cores: 16 threads). `limit(n)` starts the backends with n pool threads: the process's CPU
affinity is narrowed to n cores while they start, then every thread of the process (the
pool's included) gets the whole set back, so the n threads still run on any core.

Search workers get cores // workers threads each (`trial.worker_pool`); the process that
starts them keeps XLA's own pool. $LEE_JAX_CPU_THREADS (a count; 0: XLA's own, a thread
per core) sets both: the workers', and every entry point's own (`cli.run`; not in a
multi-process job, where jax.distributed.initialize() must start JAX), e.g. for several
sweep shards side by side on one machine. Linux only (elsewhere `limit` does
nothing).
"""

from __future__ import annotations

import os

ENV = "LEE_JAX_CPU_THREADS"


def available_cores() -> int:
  """Cores this process may run on."""
  try:
    return len(os.sched_getaffinity(0))
  except AttributeError:  # (not Linux)
    return os.cpu_count() or 1


def per_worker(workers: int) -> int:
  """A fair share of the cores for each of `workers` processes (at least 1)."""
  return max(1, available_cores() // max(1, workers))


def requested(default: int | None) -> int | None:
  """The pool size to use: $LEE_JAX_CPU_THREADS if set (0: XLA's own, None), else default.
  A malformed value is a ValueError that names the variable."""
  raw = os.environ.get(ENV, "").strip()
  if not raw:
    return default
  try:
    n = int(raw)
  except ValueError:
    n = -1
  if n < 0:
    raise ValueError(f"{ENV} must be a thread count >= 1, or 0 for XLA's default, got {raw!r}")
  return n or None


def pool_threads() -> int | None:
  """Threads of XLA's CPU pool in this process so far (0 before the backends start; None
  where /proc cannot tell)."""
  if not os.path.isdir("/proc/self/task"):
    return None
  count = 0
  for tid in os.listdir("/proc/self/task"):
    try:
      with open(f"/proc/self/task/{tid}/comm") as f:
        count += "XLAEigen" in f.read()
    except OSError:  # the thread ended meanwhile
      pass
  return count


def limit(n: int | None) -> None:
  """Start JAX's backends with an n-thread CPU pool (None: XLA's default). Must run before
  anything in this process uses JAX's backends (an array, a jitted call, jax.devices()):
  after that the pool exists and this changes nothing."""
  if n is None or not hasattr(os, "sched_setaffinity"):
    return
  import jax

  cores = sorted(os.sched_getaffinity(0))
  if n >= len(cores):
    return
  os.sched_setaffinity(0, cores[:n])
  try:
    jax.devices()  # starts every backend; the CPU pool sizes itself to the n cores
  finally:
    for tid in os.listdir("/proc/self/task"):  # the pool's threads inherited the narrow set
      try:
        os.sched_setaffinity(int(tid), cores)
      except OSError:  # the thread ended meanwhile
        pass
