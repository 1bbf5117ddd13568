"""Test-wide setup: 2 simulated CPU devices, fast CPU compiles, absl flags parsed."""

import atexit
import os
import shutil
import tempfile

# One compilation cache per test run, deleted at exit: the user's cache is left alone, and
# the many tests (and the CLI subprocesses they start) that build the same tiny model load
# its compiled programs instead of compiling them again (CI runs on 2 cores). pytest-xdist's
# workers inherit the variable from the process that made the folder, so they share it;
# only that process deletes it.
_SHARED = "LEE_JAX_TEST_XLA_CACHE"
if not os.environ.get(_SHARED):
  os.environ[_SHARED] = tempfile.mkdtemp(prefix="lee_jax_test_xla_")
  atexit.register(shutil.rmtree, os.environ[_SHARED], ignore_errors=True)
os.environ["LEE_JAX_COMPILATION_CACHE"] = os.environ[_SHARED]

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", 2)  # sharding code runs as on a 2-GPU box
jax.config.update("jax_numpy_rank_promotion", "raise")

from lee_jax import compile_cache  # noqa: E402

compile_cache.enable()
# Every program, however quick to compile: the CLI subprocesses rebuild the same models.
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"

from absl import flags  # noqa: E402

flags.FLAGS.mark_as_parsed()  # grain's worker processes read absl flags

from hypothesis import settings  # noqa: E402

# Same examples on every run: CI must not turn red on a newly drawn example.
settings.register_profile("lee", derandomize=True, deadline=None)
settings.load_profile("lee")


import signal  # noqa: E402

import pytest  # noqa: E402


class AlarmRaised(Exception):
  """What the `raising_alarm` fixture's SIGALRM handler raises."""


@pytest.fixture
def raising_alarm():
  """A caller's SIGALRM handler that raises AlarmRaised; handler and timer put back after."""
  def handler(*_):
    raise AlarmRaised

  old = signal.signal(signal.SIGALRM, handler)
  yield AlarmRaised
  signal.setitimer(signal.ITIMER_REAL, 0)
  signal.signal(signal.SIGALRM, old)
