"""lee_jax/isolated.py: a call under a hard CPU-time limit, in a helper process."""

import math
import random
import time

import helpers
import pytest

from lee_jax import complexity
from lee_jax import isolated


def _big_pair(bits: int) -> tuple[int, int]:
  rng = random.Random(0)
  return rng.getrandbits(bits) | 1, rng.getrandbits(bits - 1000) | 1


def test_one_long_c_call_is_stopped_at_the_limit():
  """SymPy's heuristic GCD once spent 171 s in one math.gcd of two 12M-bit integers, which
  the in-process guard waits out (this pair takes ~10 s); the kernel stops the helper."""
  t0 = time.monotonic()
  with pytest.raises(isolated.TimedOut):
    isolated.call(math.gcd, _big_pair(3_000_000), 0.5)
  assert time.monotonic() - t0 < 6
  t0 = time.monotonic()
  assert isolated.call(math.gcd, (12, 18), 1.0) == 6  # a new helper after the stop
  assert time.monotonic() - t0 < 6


def test_the_in_process_guard_cannot_stop_it():
  # what the helper is for: the guard's 0.02 s limit stops this ~1 s call only at its end
  a, b = _big_pair(1_000_000)
  t0 = time.process_time()
  assert complexity.within(lambda: math.gcd(a, b), 0.02) is None
  assert time.process_time() - t0 > 0.5


def test_a_helper_that_waits_is_stopped_by_the_wall_clock(monkeypatch):
  monkeypatch.setattr(isolated, "WALL_SLACK", 1.0)
  t0 = time.monotonic()
  with pytest.raises(isolated.TimedOut):
    isolated.call(time.sleep, (60,), 0.2)
  assert time.monotonic() - t0 < isolated.WALL_CAP * 0.2 + 5


def test_values_and_exceptions_come_back_as_they_are():
  assert isolated.call(divmod, (17, 5), 1.0) == (3, 2)
  with pytest.raises(ValueError, match="invalid literal"):
    isolated.call(int, ("x",), 1.0)
  # the helper's hash seed is fixed, so SymPy's set order (and its answers' form) repeat
  assert isolated.call(isolated.os.getenv, ("PYTHONHASHSEED",), 1.0) == "0"


def test_without_a_helper_the_call_runs_here_until_the_next_try(monkeypatch):
  isolated.shutdown()
  monkeypatch.setitem(isolated._state, "retry_at", 0.0)
  monkeypatch.setitem(isolated._state, "failures", 0)
  with monkeypatch.context() as m:
    m.setattr(isolated.sys, "executable", "/nonexistent/python")
    assert isolated.call(divmod, (17, 5), 1.0) == (3, 2)
  assert isolated._state["helper"] is None
  assert isolated._state["retry_at"] > time.monotonic() + isolated.RETRY_SECONDS - 60
  assert isolated.call(divmod, (9, 4), 1.0) == (2, 1)  # here: no start before that time
  assert isolated._state["helper"] is None
  # found in review: each failed start holds every call for up to READY_SECONDS, so a
  # second failure in a row waits twice as long for the next
  with monkeypatch.context() as m:
    m.setattr(isolated.sys, "executable", "/nonexistent/python")
    isolated._state["retry_at"] = time.monotonic()
    assert isolated.call(divmod, (9, 4), 1.0) == (2, 1)
  assert isolated._state["retry_at"] > time.monotonic() + 2 * isolated.RETRY_SECONDS - 60
  isolated._state["retry_at"] = time.monotonic()  # the time has come: a helper starts
  assert isolated.call(divmod, (9, 4), 1.0) == (2, 1) and isolated._state["helper"] is not None
  assert isolated._state["failures"] == 0
  monkeypatch.setattr(isolated, "ENABLED", False)
  assert isolated.call(divmod, (9, 4), 1.0) == (2, 1)


def test_an_interrupted_call_leaves_no_late_reply_for_the_next(raising_alarm):
  isolated.call(divmod, (1, 1), 1.0)  # a helper running
  isolated.signal.setitimer(isolated.signal.ITIMER_REAL, 0.3)
  with pytest.raises(raising_alarm):  # (the reply, 1.0 s later, would be None)
    isolated.call(time.sleep, (1.0,), 5.0)
  assert isolated.call(divmod, (17, 5), 1.0) == (3, 2)


def _square(x):  # in a module the helper cannot import (tests/ is not on its path)
  return x * x


def test_calls_the_helper_cannot_take_run_here_and_keep_it():
  """A call that does not pickle (a lambda among the arguments) or does not load in a fresh
  process (a function of the caller's own script) runs here; the helper stays, limits on."""
  assert isolated.call(divmod, (17, 5), 1.0) == (3, 2)
  pid = isolated._state["helper"].proc.pid
  assert isolated.call(len, ([lambda: 0],), 1.0) == 1
  assert isolated.call(_square, (7,), 1.0) == 49
  with pytest.raises(SystemExit):  # raised in the helper, raised again here
    isolated.call(isolated.sys.exit, (3,), 1.0)
  assert isolated._state["helper"].proc.pid == pid
  with pytest.raises(isolated.TimedOut):
    isolated.call(math.gcd, _big_pair(3_000_000), 0.5)


def test_an_ignored_sigxcpu_does_not_lift_the_limit():
  # an ignored or blocked signal passes through exec; the helper sets SIGXCPU back
  import signal

  isolated.shutdown()
  old = signal.signal(signal.SIGXCPU, signal.SIG_IGN)
  signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGXCPU})
  try:
    t0 = time.monotonic()
    with pytest.raises(isolated.TimedOut):
      isolated.call(math.gcd, _big_pair(3_000_000), 0.5)
    assert time.monotonic() - t0 < 6
  finally:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGXCPU})
    signal.signal(signal.SIGXCPU, old)
    isolated.shutdown()


def test_a_helper_that_dies_under_a_call_is_a_failure_not_a_rerun_here():
  import os
  import signal
  import threading

  isolated.call(divmod, (1, 1), 1.0)
  pid = isolated._state["helper"].proc.pid
  threading.Timer(0.3, os.kill, (pid, signal.SIGTERM)).start()
  with pytest.raises(isolated.Failed, match="exit status"):
    isolated.call(time.sleep, (3,), 5.0)
  assert isolated.call(divmod, (17, 5), 1.0) == (3, 2)


def test_a_reply_that_does_not_load_here_is_a_failure():
  """The helper's lee_jax is given a class the caller's lacks: its instance pickles there
  and does not unpickle here."""
  code = ("setattr(__import__('lee_jax'), 'Only', type('Only', (), {'__module__': 'lee_jax'}))"
          " or __import__('lee_jax').Only()")
  with pytest.raises(isolated.Failed, match="unreadable reply"):
    isolated.call(eval, (code,), 1.0)
  assert isolated.call(divmod, (17, 5), 1.0) == (3, 2)


def test_a_forked_child_has_a_lock_and_helpers_of_its_own():
  """A fork while another thread held the lock left it held in the child for good, and
  the child used the parent's complexity helpers, whose pipes carry the
  parent's prefixes (two processes' answers crosswise)."""
  import os
  import warnings

  import numpy as np

  from lee_jax import grammar

  rng = np.random.default_rng(5)
  trees = [grammar.sample(rng, n_vars=2)[0] for _ in range(8)]
  complexity.cache.data.clear()
  expected = complexity.complexities(trees, helpers=1)  # the parent's helper, started
  assert isolated.call(divmod, (1, 1), 1.0) == (1, 0)
  parents = {isolated._state["helper"].proc.pid} | {h.proc.pid for h in complexity._helpers}
  with isolated._lock, warnings.catch_warnings():  # held, as by another of its threads
    warnings.simplefilter("ignore")  # (JAX's and Python's: a fork of a threaded process)
    pid = os.fork()
    if pid == 0:
      ok = False
      try:
        complexity.cache.data.clear()
        ok = (isolated.call(divmod, (17, 5), 1.0) == (3, 2)
              and complexity.complexities(trees, helpers=1) == expected
              and not parents & ({isolated._state["helper"].proc.pid}
                                 | {h.proc.pid for h in complexity._helpers}))
      finally:
        os._exit(0 if ok else 1)
  assert helpers.child_exit_code(pid, 60) == 0  # (-9: it hung)


def test_helpers_whose_pipes_are_past_fd_1024():
  """Found in review: select.select refuses file descriptors >= 1024 (a process holding
  many files); this helper and complexity's wait with selectors (`isolated.readable`)."""
  import os
  import resource

  import numpy as np

  from lee_jax import expr as E
  from lee_jax import grammar

  soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
  if hard != resource.RLIM_INFINITY and hard < 1200:
    pytest.skip(f"this machine allows {hard} open files")
  resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
  fds = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
  try:
    isolated.shutdown()
    assert isolated.call(divmod, (17, 5), 1.0) == (3, 2)
    assert isolated._state["helper"].proc.stdout.fileno() >= 1024
    rng = np.random.default_rng(3)
    trees = [grammar.sample(rng, n_vars=2)[0] for _ in range(12)]
    complexity.cache.data.clear()
    here = [complexity.count_simplified(tuple(E.to_prefix(complexity.constant_pattern(t))))
            for t in trees]
    complexity.cache.data.clear()
    assert complexity.complexities(trees, helpers=1) == here
  finally:
    isolated.shutdown()
    complexity.shutdown_helpers()
    for fd in fds:
      os.close(fd)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
