"""Data parallelism: one mesh axis "data" over every device; params replicated, batch split.

The only module that asks how many devices there are. The same code runs on 1 CPU, 2
simulated CPU devices (tests), 1 GPU or many GPUs on many hosts.

Multi-host: when the usual cluster variables are set (JAX_COORDINATOR_ADDRESS +
JAX_NUM_PROCESSES + JAX_PROCESS_ID, or a SLURM/Open MPI/Kubernetes job that JAX's
auto-detection understands), `initialize_distributed()` calls `jax.distributed.initialize()`
before any device is touched; every process then runs the same command and reads its own
slice of the data stream (`pipeline.batches(shard=...)`).
"""

from __future__ import annotations

import os

import jax
import numpy as np

_CLUSTER_VARS = ("JAX_COORDINATOR_ADDRESS", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE")


def in_cluster() -> bool:
  """Whether this process is one of a multi-process job (`initialize_distributed` starts it)."""
  if not any(v in os.environ for v in _CLUSTER_VARS):
    return False
  return os.environ.get("SLURM_NTASKS", "2") != "1" and os.environ.get("OMPI_COMM_WORLD_SIZE", "2") != "1"


def initialize_distributed() -> bool:
  """jax.distributed.initialize() when a multi-process environment is detected."""
  if not in_cluster():
    return False
  if "JAX_COORDINATOR_ADDRESS" in os.environ:  # explicit launch: pass the three values on
    jax.distributed.initialize(
        coordinator_address=os.environ["JAX_COORDINATOR_ADDRESS"],
        num_processes=int(os.environ["JAX_NUM_PROCESSES"]),
        process_id=int(os.environ["JAX_PROCESS_ID"]))
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
