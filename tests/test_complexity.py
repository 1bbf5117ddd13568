import helpers
import numpy as np
import pytest
import sympy

from lee_jax import complexity as C
from lee_jax import expr as E
from lee_jax import grammar


@pytest.fixture
def empty_cache():
  C.cache.data.clear()
  C.light_cache.data.clear()
  yield C.cache
  C.shutdown_helpers()


def test_complexity_counts_simplified_nodes_and_caches():
  # x0 + x0 simplifies to 2*x0: Mul(2, x0) = 3 nodes.
  assert C.complexity(E.from_prefix("add x0 x0".split())) == 3
  # sin(x0)**2 + cos(x0)**2 -> 1
  t = E.from_prefix("add sq sin x0 sq cos x0".split())
  assert C.complexity(t) == 1
  before = C.cache.hits
  C.complexity(t)
  assert C.cache.hits == before + 1


def test_light_simplification_leaves_out_only_the_trig_passes(empty_cache):
  identity = E.from_prefix("add sq sin x0 sq cos x0".split())
  assert C.complexity(identity) == 1
  assert C.complexity(identity, light=True) == 9  # sin(x0)**2 + cos(x0)**2, as built
  # The rest of SymPy's simplify still runs, down into function arguments.
  assert C.complexity(E.from_prefix("add x0 x0".split()), light=True) == 3
  one = "+ 1 . 0 0 e + 0 0"
  assert C.complexity(E.from_prefix(f"sin div sub sq x0 {one} sub x0 {one}".split()), light=True) == 4
  key = tuple(E.to_prefix(identity))
  assert C.cache.get(key) == 1 and C.light_cache.get(key) == 9  # one cache per mode
  # SymPy itself is untouched: the light function is a copy.
  x = sympy.Symbol("x")
  assert sympy.simplify(sympy.sin(x) ** 2 + sympy.cos(x) ** 2) == 1
  # Helper processes count in the mode they are asked for.
  C.light_cache.data.clear()
  trees = [identity, E.from_prefix("mul x1 sq x1".split()), E.from_prefix("add sq cos x1 sq sin x1".split())]
  assert C.complexities(trees, helpers=1, light=True) == [9, 3, 9]
  assert C.complexities(trees, helpers=1) == [1, 3, 1]


def test_cache_drops_the_least_recently_used():
  cache = C.Cache(2)
  cache.put(("a",), 1)
  cache.put(("b",), 2)
  assert cache.get(("a",)) == 1  # now b is the oldest
  cache.put(("c",), 3)
  assert cache.get(("b",)) is None and cache.get(("a",)) == 1 and cache.get(("c",)) == 3


def test_constant_pattern_keeps_what_simplification_sees():
  t = E.from_prefix("add add mul + 2 . 5 0 e + 0 0 x0 mul - 2 . 5 0 e + 0 0 x1 "
                    "add + 3 . 0 0 e + 0 0 mul + 7 . 1 0 e - 0 1 x0".split())
  got = E.constants(C.constant_pattern(t))
  assert got[0] == -got[1] and got[0] != 2.5  # equal magnitudes share a stand-in, sign kept
  assert got[2] == 3.0  # integers stay
  assert abs(got[3]) not in (abs(got[0]), 0.71)
  # c*x0 - c*x0 still cancels; a refit of the same skeleton shares the cached simplification.
  assert C.complexity(E.from_prefix("sub mul + 1 . 2 3 e + 0 0 x0 mul + 1 . 2 3 e + 0 0 x0".split())) == 1
  assert C.complexity(t) == C.complexity(t, exact=True)
  refit = E.with_constants(t, [4.5, -4.5, 3.0, 0.123])
  before = C.cache.hits
  assert C.complexity(refit) == C.complexity(t)
  assert C.cache.hits == before + 2


def test_fitted_constants_near_a_whole_number_or_each_other_do_not_cancel():
  # c * (x0 * k + x0): the search fitted k = -0.99993 (its tokens say -1.00). As a function
  # it is a line, C = 3; only k = -1 exactly makes it the constant 0 (C = 1).
  skeleton = E.from_prefix("mul + 2 . 0 0 e + 0 0 add mul x0 - 1 . 0 0 e + 0 0 x0".split())
  assert C.complexity(E.with_constants(skeleton, [-98.3, -0.99993])) == 3
  assert C.complexity(E.with_constants(skeleton, [-98.3, -1.0])) == 1
  # 250.3 x0 - 250.4 x0 (both 2.50e2 as tokens) is -0.1 x0, not 0.
  pair = E.from_prefix("add mul + 1 . 0 0 e + 0 0 x0 mul x0 + 1 . 0 0 e + 0 0".split())
  assert C.complexity(E.with_constants(pair, [250.3, -250.4])) == 3
  assert C.complexity(E.with_constants(pair, [250.3, -250.3])) == 1


def test_constant_pattern_complexity_equals_the_exact_one_on_grammar_samples():
  rng = np.random.default_rng(1)
  trees = [grammar.sample(rng, n_vars=int(rng.integers(1, 3)))[0] for _ in range(40)]
  assert [C.complexity(t) for t in trees] == [C.complexity(t, exact=True) for t in trees]


def test_helper_processes_give_the_in_process_counts(empty_cache, monkeypatch):
  rng = np.random.default_rng(7)
  trees = [grammar.sample(rng, n_vars=2)[0] for _ in range(24)]
  trees += trees[:3]  # repeats inside one call are simplified once
  reference = [C.count_simplified(tuple(E.to_prefix(C.constant_pattern(t)))) for t in trees]
  here = []
  monkeypatch.setattr(C, "count_simplified", lambda p, light=False: here.append(p) or reference_of[p])
  reference_of = {tuple(E.to_prefix(C.constant_pattern(t))): c for t, c in zip(trees, reference)}
  misses = C.cache.misses
  assert C.complexities(trees, helpers=1) == reference
  assert 0 < len(here) < len(reference_of)  # both this process and the helper did some
  assert C.cache.misses - misses == len({tuple(E.to_prefix(C.constant_pattern(t))) for t in trees})
  C.cache.data.clear()
  monkeypatch.undo()
  assert C.complexities(trees, helpers=2) == reference


def test_a_background_job_runs_in_the_helpers_while_this_process_works(empty_cache, monkeypatch):
  import time

  rng = np.random.default_rng(11)
  trees = [grammar.sample(rng, n_vars=2)[0] for _ in range(6)]
  reference = [C.count_simplified(tuple(E.to_prefix(C.constant_pattern(t)))) for t in trees]
  here = []
  real = C.count_simplified
  monkeypatch.setattr(C, "count_simplified", lambda p, light=False: here.append(p) or real(p, light))
  job = C.submit(trees, helpers=1, background=True)
  deadline = time.time() + 60  # this process does something else meanwhile
  while (job.todo or any(h.sent for h in job.live)) and time.time() < deadline:
    time.sleep(0.05)
  assert job.result() == reference
  assert here == []  # the helper, fed by the thread, did all of it
  assert [C.cache.get(tuple(E.to_prefix(C.constant_pattern(t)))) for t in trees] == reference
  # One job at a time: starting the next finishes the one before.
  first = C.submit([E.from_prefix("add x0 x0".split()), E.from_prefix("mul x1 sq x1".split())],
                   helpers=1, background=True)
  second = C.submit([E.from_prefix("sub x0 x0".split())], helpers=1, background=True)
  assert first.counts == [3, 3] and second.result() == [1]


def test_a_background_job_whose_helper_dies_finishes_here(empty_cache):
  C.complexities([E.from_prefix("sq x0".split()), E.from_prefix("sq x1".split())], helpers=1)
  trees = [E.from_prefix(p.split()) for p in ("sub x0 x0", "mul x1 sq x1", "add x1 x1", "x0")]
  C._helpers[0].proc.kill()
  job = C.submit(trees, helpers=1, background=True)
  assert job.result() == [1, 3, 3, 1]
  assert not job._thread.is_alive()


def test_a_job_in_flight_at_a_fork_is_finished_apart(empty_cache):
  """Found in review: the parent's helpers left the list at the fork but stayed in a job
  in flight, so both processes read their answers from one pipe (5 of 40 counts wrong in
  the parent; a ValueError in the child)."""
  import os
  import time
  import warnings

  rng = np.random.default_rng(7)
  trees = [grammar.sample(rng, n_vars=3)[0] for _ in range(40)]
  expected = C.complexities(trees)  # (here)
  C.cache.data.clear()
  job = C.submit(trees, helpers=1, background=True)
  time.sleep(0.2)  # the thread has sent some
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # (JAX's and Python's: a fork of a threaded process)
    pid = os.fork()
  if pid == 0:
    ok = False
    try:
      ok = job.result() == expected and not job.live
    finally:
      os._exit(0 if ok else 1)
  assert job.result() == expected
  assert helpers.child_exit_code(pid, 120) == 0  # (-9: it hung)


def test_a_dead_helper_falls_back_to_this_process(empty_cache):
  trees = [E.from_prefix(f"add mul x0 x1 sin add x0 {v}".split()) for v in ("x0", "x1")]
  trees += [E.from_prefix(p.split()) for p in ("sub x0 x0", "mul x1 sq x1", "add sq sin x0 sq cos x0")]
  C.complexities([E.from_prefix("sq x0".split()), E.from_prefix("sq x1".split())], helpers=1)
  assert len(C._helpers) == 1  # the helper is up
  C._helpers[0].proc.kill()
  C._helpers[0].proc.wait()
  assert C.complexities(trees, helpers=1) == [8, 8, 1, 3, 1]
  assert C.complexities([E.from_prefix("add x0 x0".split()), E.from_prefix("cube x1".split())],
                        helpers=1) == [3, 3]
  assert len(C._helpers) == 1 and C._helpers[0].proc.poll() is None  # a new one serves it


def test_an_interrupted_call_leaves_no_late_answers_behind(empty_cache, monkeypatch):
  rng = np.random.default_rng(3)
  trees = [grammar.sample(rng, n_vars=2)[0] for _ in range(8)]

  def interrupted(prefix, light=False):
    raise KeyboardInterrupt

  monkeypatch.setattr(C, "count_simplified", interrupted)
  with pytest.raises(KeyboardInterrupt):
    C.complexities(trees, helpers=1)  # the helper holds two prefixes when this one stops
  monkeypatch.undo()
  others = [E.from_prefix(p.split()) for p in ("sub x0 x0", "mul x1 sq x1", "add x1 x1", "x0")]
  assert C.complexities(others, helpers=1) == [1, 3, 3, 1]


def test_a_stuck_helper_is_given_up(empty_cache, monkeypatch):
  import signal

  C.complexities([E.from_prefix("sq x0".split()), E.from_prefix("sq x1".split())], helpers=1)
  stuck = C._helpers[0].proc
  stuck.send_signal(signal.SIGSTOP)
  monkeypatch.setattr(C, "HELPER_PATIENCE", 0.5)
  trees = [E.from_prefix(p.split()) for p in ("sub x0 x0", "mul x1 sq x1", "add x1 x1")]
  assert C.complexities(trees, helpers=1) == [1, 3, 3]
  assert stuck.poll() is not None and not C._helpers  # killed and forgotten


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_simplify_guard_is_not_lost_in_gc_callbacks():
  """Unguarded, this simplification runs for minutes. With frequent garbage collections the
  alarm often lands in JAX's gc callback, where an exception would be swallowed (and the
  simplification would run on): the guard must skip that moment and fire again after."""
  import gc
  import time

  import sympy

  x = sympy.Symbol("x", real=True)
  hard = sum(sympy.sin(x + i) ** (i % 5 + 2) * sympy.cos(x * i + 1) ** 3 for i in range(1, 30))
  old = gc.get_threshold()
  gc.set_threshold(10)
  try:
    t = time.perf_counter()
    out = C.simplify(hard, seconds=0.2)
    took = time.perf_counter() - t
  finally:
    gc.set_threshold(*old)
  assert took < 5.0 and out == hard


def test_the_limit_is_cpu_time_of_the_simplifying_thread(monkeypatch):
  """A loaded machine must not change which candidates run over: time spent waiting (here
  sleeping, on a busy machine waiting for a core) does not count, the thread's own CPU does.
  A thread that never gets the CPU still stops at WALL_CAP times the limit."""
  import time

  monkeypatch.setattr(C, "CPU_CLOCK", True)
  seen = {}

  def wait_then_work():
    time.sleep(0.6)  # past the 0.3 s limit on a wall clock
    seen["working"] = time.thread_time()
    while True:
      pass

  t = time.perf_counter()
  with pytest.raises(C._Timeout):
    C._guarded(wait_then_work, 0.3)
  took = time.perf_counter() - t
  assert "working" in seen  # not stopped while it waited
  assert time.thread_time() - seen["working"] >= 0.25 and took < 0.6 + 1.2

  def only_wait():
    while True:
      time.sleep(0.01)

  t = time.perf_counter()
  with pytest.raises(C._Timeout):
    C._guarded(only_wait, 0.1)
  assert 0.1 * C.WALL_CAP - 0.05 <= time.perf_counter() - t < 2.0

  monkeypatch.setattr(C, "CPU_CLOCK", False)  # LEE_JAX_SIMPLIFY_CLOCK=wall
  seen.clear()
  with pytest.raises(C._Timeout):
    C._guarded(wait_then_work, 0.3)
  assert "working" not in seen


def test_building_the_sympy_expression_is_guarded_too(monkeypatch):
  """SymPy evaluates while it builds: a search once spent over 10 minutes in to_sympy of a
  decoded candidate (tanh asking whether its argument is real), `mul div mul x1 sq x1 neg
  mul x0 sub x1 1.2 tanh tanh cube tanh tanh tanh tanh cube tanh cube tanh tanh log tanh
  cube tanh cube x0` (its constant pattern). A build that runs over the limit counts the
  tree's own nodes. (That tree itself would hang this test without the guard.)"""
  import time

  import sympy

  def endless(_):  # stands in for SymPy's construction-time evaluation
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 3.0:  # unguarded, the test fails rather than hangs
      time.sleep(0.01)
    return sympy.Integer(1)

  monkeypatch.setattr(C, "SIMPLIFY_SECONDS", 0.2)
  monkeypatch.setattr(C.E, "to_sympy", endless)
  tree = E.from_prefix("mul x0 tanh add x1 x0".split())
  t = time.perf_counter()
  assert C.count_simplified(tuple(E.to_prefix(tree))) == len(tree) == 6
  assert time.perf_counter() - t < 5.0


def test_build_falls_back_to_the_unevaluated_tree(monkeypatch):
  """What a report prints (sympy_form.sympy_of, the per-round and Pareto expressions) goes through
  complexity.build: a construction that runs over the limit is redone unevaluated."""
  import time

  import sympy
  from sympy.core.parameters import global_parameters

  real = E.to_sympy

  def slow_when_evaluating(node, names=None):
    t0 = time.perf_counter()
    while global_parameters.evaluate and time.perf_counter() - t0 < 3.0:
      time.sleep(0.01)
    return real(node, names)

  tree = E.from_prefix("mul x0 tanh add x1 x0".split())
  assert str(C.build(tree, ["a", "b"])) == "a*tanh(a + b)"  # quick builds are evaluated
  monkeypatch.setattr(C.E, "to_sympy", slow_when_evaluating)
  t = time.perf_counter()
  expr = C.build(tree, ["a", "b"], seconds=0.2)
  assert time.perf_counter() - t < 2.0
  assert isinstance(expr, sympy.Expr) and str(expr) in ("a*tanh(b + a)", "a*tanh(a + b)")


def test_a_guard_inside_another_keeps_the_outer_limit():
  """solution.py checks an answer under one guard while building and simplifying it under
  their own: the inner guard's end once disarmed the outer one, and the work after it ran
  with no limit (a SymPy evaluation that never ended)."""
  import signal
  import time

  import sympy

  def spin(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
      pass
    return "done"

  def inner_then_spin():
    C.simplify(sympy.Symbol("x") + 1)  # an inner guard that finishes in time
    return spin(10)

  t0 = time.monotonic()
  assert C.within(inner_then_spin, 0.3) is None  # the outer limit still held after it
  # an inner limit sooner than the outer one holds; one later is cut to the outer's
  assert C.within(lambda: C.within(lambda: spin(10), 0.2), 5) is None
  assert C.within(lambda: C.within(lambda: spin(10), 5), 0.2) is None
  assert C.within(lambda: C.within(lambda: spin(0.05), 5), 5) == "done"
  assert time.monotonic() - t0 < 6
  assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0) and not C._guard["active"]


def test_a_callers_alarm_still_fires_during_and_after_the_guarded_work():
  """The guard borrows the one real-time timer; it once cancelled an alarm its caller had
  set (signal.alarm, a test runner's timeout), which then never came. The caller's alarm
  now interrupts guarded work when due, and one due later is set back for what is left."""
  import signal
  import time

  class CallerTimeout(Exception):
    pass

  fired = []

  def handler(signum, frame):
    fired.append(time.monotonic())
    raise CallerTimeout

  def spin(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
      pass
    return "done"

  old = signal.signal(signal.SIGALRM, handler)
  try:
    t0 = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, 0.3)  # due in the middle of the guarded work
    with pytest.raises(CallerTimeout):
      C.within(lambda: C.within(lambda: spin(10), 5), 5)
    assert 0.25 <= fired[-1] - t0 < 1.5  # when due, not at the guard's 5 s
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)

    t0 = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, 0.6)  # due after it
    assert C.within(lambda: spin(0.05), 5) == "done"
    left, _ = signal.getitimer(signal.ITIMER_REAL)
    assert 0.0 < left <= 0.6
    with pytest.raises(CallerTimeout):
      time.sleep(3)
    assert 0.55 <= fired[-1] - t0 < 2.0
    assert len(fired) == 2 and signal.getsignal(signal.SIGALRM) is handler
  finally:
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, old)
  assert not C._guard["active"] and C._guard["caller"] is None


def test_a_callers_repeating_alarm_keeps_its_interval():
  import signal
  import time

  ticks = []
  old = signal.signal(signal.SIGALRM, lambda *_: ticks.append(time.monotonic()))
  try:
    signal.setitimer(signal.ITIMER_REAL, 0.1, 0.1)
    end = time.monotonic() + 0.55

    def wait():
      while time.monotonic() < end:
        time.sleep(0.01)
      return "done"

    assert C.within(wait, 5) == "done"
    assert 4 <= len(ticks) <= 6  # every 0.1 s while guarded, not the guard's 50 ms
    assert signal.getitimer(signal.ITIMER_REAL)[1] == pytest.approx(0.1)
  finally:
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, old)


def _spin_swallowing(seconds, swallow):
  """CPU work for `seconds` that swallows `swallow` as SymPy's broad excepts would. The
  whole loop sits inside the try: Python runs signal handlers at a loop's backward jump,
  which a try inside the loop leaves out (the handler's exception escaped there in ~1 run
  of 6, a flake of this test since the fifty-eighth session)."""
  import time

  end = time.thread_time() + seconds
  while True:
    try:
      while time.thread_time() < end:
        sum(range(1000))
      return "done"
    except swallow:
      pass


def test_the_guard_holds_after_a_callers_alarm_and_keeps_off_its_timer(raising_alarm):
  """Found in review: a caller's handler that raised left the guard's timer off (work that
  swallowed the exception then ran unguarded); one that cancelled its repeating timer
  was taken for one that set nothing; one that did guarded work itself had the guard's
  timer taken for its own."""
  import signal
  import time

  signal.setitimer(signal.ITIMER_REAL, 0.1)
  t0 = time.monotonic()
  assert C.within(lambda: _spin_swallowing(4, raising_alarm), 0.5) is None
  assert time.monotonic() - t0 < 2  # the guard's 0.5 s, not the work's 4 s

  ticks = []

  def cancel_at_three(*_):
    ticks.append(1)
    if len(ticks) == 3:
      signal.setitimer(signal.ITIMER_REAL, 0)

  signal.signal(signal.SIGALRM, cancel_at_three)
  signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05)
  assert C.within(lambda: _spin_swallowing(0.6, ()), 5) == "done"
  time.sleep(0.3)
  assert len(ticks) == 3 and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)

  calls = []

  def guarded_handler(*_):  # a handler that simplifies under the guard itself
    calls.append(1)
    C.simplify(sympy.Symbol("x") + 1)

  signal.signal(signal.SIGALRM, guarded_handler)
  signal.setitimer(signal.ITIMER_REAL, 0.05)  # one-shot
  assert C.within(lambda: _spin_swallowing(0.5, ()), 5) == "done"
  time.sleep(0.3)
  assert len(calls) == 1 and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
  assert not C._guard["active"] and not C._guard["delivering"]
