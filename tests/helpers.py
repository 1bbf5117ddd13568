"""Shared test fixtures' building blocks: a random tiny model, a small search budget, toy data
and Friedman's law."""

import dataclasses

import numpy as np
from flax import nnx

from lee_jax import checkpoints
from lee_jax import configs
from lee_jax import model as model_lib

TINY = configs.get_model_config("tiny", dtype="float32")
# A search small enough for CPU tests that still runs every code path.
SMALL_SEARCH = configs.get_search_config(
    "fast", rounds=1, iterations=10, n_init=8, parents=5, refresh_every=1, decode_period=5,
    fit_rows=200, score_rows=200, lbfgs_first=30, lbfgs_last=30, cmaes_popsize=8,
    long_terms=0)  # the long sums have their own tests (test_long_sums.py); CI time


def tiny_model(seed: int = 0) -> model_lib.LEE:
  return model_lib.LEE(TINY, rngs=nnx.Rngs(seed))


def export_tiny(directory, seed: int = 0):
  m = tiny_model(seed)
  return checkpoints.export_params(directory, nnx.state(m, nnx.Param),
                                   {"model": "tiny", "model_config": dataclasses.asdict(TINY)})


def toy_data(n: int = 300, seed: int = 0):
  rng = np.random.default_rng(seed)
  X = rng.uniform(-3, 3, (n, 2))
  return X, 2.0 * X[:, 0] + np.sin(X[:, 1])


def friedman(n=300, k=5, seed=0, noise=0.0):
  """Friedman's 10 sin(pi u0 u1) + 20 (u2 - 1/2)^2 + 10 u3 + 5 u4, u ~ U(0, 1), on
  standardised columns (as PMLB's fri_c* sets: here by U(0, 1)'s own mean and deviation,
  so that every sample follows one law) plus k - 5 irrelevant ones."""
  rng = np.random.default_rng(seed)
  U = rng.uniform(0, 1, (n, k))
  y = (10 * np.sin(np.pi * U[:, 0] * U[:, 1]) + 20 * (U[:, 2] - 0.5) ** 2 + 10 * U[:, 3]
       + 5 * U[:, 4] + noise * rng.normal(size=n))
  return (U - 0.5) * np.sqrt(12.0), y


def child_exit_code(pid: int, seconds: float) -> int:
  """A forked child's exit code, waited for up to `seconds`; a child that has not ended by
  then (hung) is killed, and its code is -9."""
  import os
  import time

  done, status = 0, 0
  deadline = time.monotonic() + seconds
  while not done and time.monotonic() < deadline:
    done, status = os.waitpid(pid, os.WNOHANG)
    time.sleep(0.05)
  if not done:
    os.kill(pid, 9)
    _, status = os.waitpid(pid, 0)
  return os.waitstatus_to_exitcode(status)
