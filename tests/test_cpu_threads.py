import os
import subprocess
import sys
import textwrap

import pytest

from lee_jax import cpu_threads

linux_only = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="Linux affinity")


def _fresh_process(code: str, setting: str | None) -> list[str]:
  """The words a new Python process running `code` prints, with $LEE_JAX_CPU_THREADS at
  `setting` (None: unset); JAX's backends start there, not in this test process."""
  env = {k: v for k, v in os.environ.items() if k != cpu_threads.ENV}
  if setting is not None:
    env[cpu_threads.ENV] = setting
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=300)
  assert out.returncode == 0, out.stderr[-2000:]
  return out.stdout.split()


@linux_only
@pytest.mark.skipif(cpu_threads.available_cores() < 2, reason="needs 2 cores to narrow")
def test_limit_starts_the_backend_with_n_pool_threads_that_run_on_every_core():
  # A fresh process: importing the search's modules must not start JAX's backends (the
  # workers call limit after those imports), and after limit(1) XLA's pool has one thread,
  # yet every thread may run on every core.
  code = textwrap.dedent("""
      import os
      import lee_jax.trial, lee_jax.engine, lee_jax.fit, lee_jax.regressor
      from lee_jax import cpu_threads
      assert cpu_threads.pool_threads() == 0, "imports started the backends"
      cores = os.sched_getaffinity(0)
      cpu_threads.limit(1)
      import jax.numpy as jnp
      assert float((jnp.arange(1000.0) ** 2).sum()) > 0
      spread = all(os.sched_getaffinity(int(t)) == cores for t in os.listdir("/proc/self/task"))
      print(cpu_threads.pool_threads(), spread)
      """)
  assert _fresh_process(code, None) == ["1", "True"]


def test_requested_reads_the_environment(monkeypatch):
  monkeypatch.delenv(cpu_threads.ENV, raising=False)
  assert cpu_threads.requested(3) == 3 and cpu_threads.requested(None) is None
  monkeypatch.setenv(cpu_threads.ENV, "2")
  assert cpu_threads.requested(5) == 2
  monkeypatch.setenv(cpu_threads.ENV, "0")  # XLA's own pool
  assert cpu_threads.requested(5) is None
  for bad in ("-1", "two", "1.5"):
    monkeypatch.setenv(cpu_threads.ENV, bad)
    with pytest.raises(ValueError, match=cpu_threads.ENV):
      cpu_threads.requested(1)


def test_per_worker_shares_the_cores(monkeypatch):
  monkeypatch.setattr(cpu_threads, "available_cores", lambda: 16)
  assert [cpu_threads.per_worker(n) for n in (1, 2, 10, 16, 40)] == [16, 8, 1, 1, 1]
  monkeypatch.setattr(cpu_threads, "available_cores", lambda: 2)
  assert cpu_threads.per_worker(8) == 1 and cpu_threads.per_worker(1) == 2


def test_limit_none_or_all_cores_changes_nothing():
  # Neither narrows this process's affinity (its backends may have started already).
  before = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
  cpu_threads.limit(None)
  cpu_threads.limit(cpu_threads.available_cores())
  if before is not None:
    assert os.sched_getaffinity(0) == before


@linux_only
@pytest.mark.skipif(cpu_threads.available_cores() < 2, reason="needs 2 cores to narrow")
def test_every_entry_point_sizes_its_own_pool_from_the_environment():
  # cli.run applies $LEE_JAX_CPU_THREADS before main: several shards of a sweep side by
  # side can each run on one pool thread.
  code = textwrap.dedent("""
      import jax.numpy as jnp
      from lee_jax import cli, cpu_threads
      def main(argv):
        assert float(jnp.ones(4).sum()) == 4.0
        print("pool", cpu_threads.pool_threads())
      cli.run(main)
      """)
  for setting, want in (("1", "1"), ("0", str(cpu_threads.available_cores()))):
    assert _fresh_process(code, setting) == ["pool", want]
