"""Data parallelism: one mesh axis "data" over every device; params replicated, batch split.

The only module that asks how many devices there are. The same code runs on 1 CPU, 2
simulated CPU devices (tests), 1 GPU or many GPUs on many hosts.

Multi-host: when the usual cluster variables are set (JAX_COORDINATOR_ADDRESS +
JAX_NUM_PROCESSES + JAX_PROCESS_ID, or a SLURM or Open MPI job that JAX's auto-detection
understands; elsewhere, Kubernetes included, set the three JAX_* variables),
`initialize_distributed()` calls `jax.distributed.initialize()` before any device is
touched; every process then runs the same command and reads its own slice of the data
stream (`pipeline.batches(shard=...)`).
"""

from __future__ import annotations

import os

import jax
import numpy as np

_CLUSTER_VARS = ("JAX_COORDINATOR_ADDRESS", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE")
_EXPLICIT_VARS = ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID")


class ClusterError(ValueError):
  """Cluster variables that do not describe a launch (one line, naming them)."""


def in_cluster() -> bool:
  """Whether this process is one of a multi-process job (`initialize_distributed` starts it).
  An explicit JAX_COORDINATOR_ADDRESS wins over a 1-task SLURM or Open MPI wrapper (a job
  launched by hand inside `salloc -n1` trained alone before)."""
  if "JAX_COORDINATOR_ADDRESS" in os.environ:
    return True
  if not any(v in os.environ for v in _CLUSTER_VARS):
    return False
  return os.environ.get("SLURM_NTASKS", "2") != "1" and os.environ.get("OMPI_COMM_WORLD_SIZE", "2") != "1"


def explicit_launch() -> tuple[str, int, int]:
  """(coordinator address, number of processes, this process's id) from the JAX_* variables;
  ClusterError when one is missing or not a number (a KeyError traceback before)."""
  missing = [v for v in _EXPLICIT_VARS if not os.environ.get(v)]
  if missing:
    raise ClusterError(f"JAX_COORDINATOR_ADDRESS is set, so {', '.join(_EXPLICIT_VARS)} must "
                       f"all be: {', '.join(missing)} missing")
  try:
    n, pid = int(os.environ["JAX_NUM_PROCESSES"]), int(os.environ["JAX_PROCESS_ID"])
  except ValueError:
    raise ClusterError("JAX_NUM_PROCESSES and JAX_PROCESS_ID must be integers, got "
                       f"{os.environ['JAX_NUM_PROCESSES']!r} and "
                       f"{os.environ['JAX_PROCESS_ID']!r}") from None
  if not 0 <= pid < n:
    raise ClusterError(f"JAX_PROCESS_ID must be in 0..JAX_NUM_PROCESSES-1, got {pid} of {n}")
  return os.environ["JAX_COORDINATOR_ADDRESS"], n, pid


def initialize_distributed() -> bool:
  """jax.distributed.initialize() when a multi-process environment is detected."""
  if not in_cluster():
    return False
  if "JAX_COORDINATOR_ADDRESS" in os.environ:  # explicit launch: pass the three values on
    address, n, pid = explicit_launch()
    jax.distributed.initialize(coordinator_address=address, num_processes=n, process_id=pid)
  else:  # SLURM / Open MPI: JAX's cluster auto-detection
    jax.distributed.initialize()
  return True


def mesh() -> jax.sharding.Mesh:
  devices = np.asarray(jax.devices())
  return jax.sharding.Mesh(devices, ("data",))  # Auto axis types: the compiler propagates


def replicated(m: jax.sharding.Mesh) -> jax.sharding.NamedSharding:
  return jax.sharding.NamedSharding(m, jax.sharding.PartitionSpec())


def batch_sharded(m: jax.sharding.Mesh) -> jax.sharding.NamedSharding:
  return jax.sharding.NamedSharding(m, jax.sharding.PartitionSpec("data"))


def shard_batch(batch: dict, m: jax.sharding.Mesh) -> dict:
  """Host-local NumPy batch -> global arrays split on the leading axis."""
  sharding = batch_sharded(m)
  return {k: jax.make_array_from_process_local_data(sharding, np.asarray(v))
          for k, v in batch.items()}


def host_shard() -> tuple[int, int]:
  """(process_index, process_count): which slice of the data stream this host reads."""
  return jax.process_index(), jax.process_count()
