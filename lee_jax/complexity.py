"""Complexity C(e): the node count of the SymPy-simplified expression (SRBench's rule).

SymPy's simplify is most of a search's host time on a CPU, so it is guarded by a time limit
(CPU time of the calling thread, so a busy machine does not change the answer), cached by
constant pattern (a refit of a skeleton already seen costs nothing), and a batch of
candidates can be simplified in helper processes while this one takes its share, or while
this one does other work (`submit(..., background=True)`). `light=True` counts SymPy's
simplify without its trigonometric passes, a third of the time (what a search ranks by);
reported complexities are always the full simplification.
"""

from __future__ import annotations

import atexit
import collections
import gc
import importlib
import math
import os
import signal
import sys
import threading
import time
import types
from typing import Sequence

import sympy

from lee_jax import expr as E
from lee_jax import isolated
from lee_jax import vocab

SIMPLIFY_SECONDS = 2.0
# The limit is CPU time of the thread that simplifies: under a wall-clock limit the same search
# can count a candidate's complexity differently on a loaded machine (a simplification that
# takes 1.5 s alone can take 3 s beside a second search), and so choose other answers. A
# thread that gets no CPU at all still stops at WALL_CAP times the limit.
# LEE_JAX_SIMPLIFY_CLOCK=wall restores the wall-clock limit (for comparisons).
WALL_CAP = 4.0
CPU_CLOCK = os.environ.get("LEE_JAX_SIMPLIFY_CLOCK", "cpu") != "wall"
CACHE_SIZE = 65536


# --- the guarded simplification --------------------------------------------------------------

class _Timeout(Exception):
  pass


_guard = {"active": False, "cpu_deadline": 0.0, "wall_deadline": 0.0, "caller": None,
          "delivering": False}


class _CallerAlarm:
  """The SIGALRM a caller had set when the outermost guard began (`signal.alarm`, a test
  runner's timeout): its handler, the monotonic time it is due (inf: none) and its interval.
  The guard borrows the one real-time timer, so it delivers the caller's alarm when due and
  sets the timer back for the rest of it after."""

  def __init__(self, handler, left: float, interval: float):
    self.handler, self.interval = handler, interval
    self.due = time.monotonic() + left if left > 0 else math.inf

  def deliver(self, signum, frame) -> None:
    """Runs the caller's handler (its exception, if any, ends the guarded work) with the
    timer as the kernel would leave it, the interval re-armed (or off for a one-shot), and
    takes what the handler left there as its alarm: set again, or cancelled."""
    signal.setitimer(signal.ITIMER_REAL, self.interval, self.interval)
    _guard["delivering"] = True  # the guard keeps off the timer meanwhile
    try:
      if self.handler is signal.SIG_DFL:  # SIGALRM's default: the process ends, as it would
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGALRM)
      elif callable(self.handler):  # (SIG_IGN: nothing to run)
        self.handler(signum, frame)
    finally:
      _guard["delivering"] = False
      left, self.interval = signal.getitimer(signal.ITIMER_REAL)
      self.due = time.monotonic() + left if left > 0 else math.inf

  def restore(self) -> None:
    """Sets the timer back for what is left of the caller's alarm (at once if it is due)."""
    if self.due < math.inf:
      signal.setitimer(signal.ITIMER_REAL, max(self.due - time.monotonic(), 1e-6), self.interval)


def _in_gc_callback(frame) -> bool:
  codes = {getattr(cb, "__code__", None) for cb in gc.callbacks}
  while frame is not None:
    if frame.f_code in codes:
      return True
    frame = frame.f_back
  return False


def _alarm(signum, frame):
  # Python runs signal handlers in the main thread, the one the guard watches, so
  # time.thread_time() here is the guarded work's CPU time. Raising inside a gc callback would
  # be swallowed (and printed); the repeating timer fires again 50 ms later, outside it.
  if not _guard["active"] or _guard["delivering"] or _in_gc_callback(frame):
    return
  caller = _guard["caller"]
  if caller is not None and time.monotonic() >= caller.due - 1e-3:
    try:
      caller.deliver(signum, frame)
    finally:  # (work that swallows the caller's exception is still guarded)
      _arm()
  if (time.thread_time() >= _guard["cpu_deadline"]
      or time.monotonic() >= _guard["wall_deadline"]):
    raise _Timeout


def _arm() -> None:
  """The timer set for the guard's first possible limit or the caller's alarm, whichever
  comes first, then every 50 ms (not while the caller's handler runs: the timer is its)."""
  if _guard["delivering"] or not _guard["active"]:
    return
  first = _first_alarm()
  if _guard["caller"] is not None:
    first = max(min(first, _guard["caller"].due - time.monotonic()), 1e-3)
  signal.setitimer(signal.ITIMER_REAL, first, 0.05)


def _guarded(fn, seconds: float):
  """fn() under a time limit (main thread only: elsewhere it just runs); raises _Timeout
  once the thread has spent `seconds` of CPU time on it (or WALL_CAP * seconds have passed;
  with CPU_CLOCK off, once `seconds` have passed).

  A wall-clock timer fires at `seconds` and then every 50 ms, and its handler checks the CPU
  time: the timer cannot fire earlier than the CPU time could run out. Repeating also matters
  because an exception raised from a signal handler is swallowed when it lands inside a
  garbage-collection callback (JAX installs one), and a one-shot alarm would never stop SymPy.
  A caller's own alarm (`_CallerAlarm`) still fires when due, during the work or after it.
  """
  if not guards_here():
    return fn()
  cpu = time.thread_time() + seconds if CPU_CLOCK else math.inf
  wall = time.monotonic() + (WALL_CAP if CPU_CLOCK else 1.0) * seconds
  if _guard["active"]:  # inside another guard (solution.py's check builds and simplifies
    # under its own): the sooner limit holds here, and the outer one again after (this
    # once disarmed it, and the outer work ran unguarded)
    outer = (_guard["cpu_deadline"], _guard["wall_deadline"])
    _guard["cpu_deadline"], _guard["wall_deadline"] = min(cpu, outer[0]), min(wall, outer[1])
    _arm()
    try:
      return fn()
    finally:
      _guard["cpu_deadline"], _guard["wall_deadline"] = outer
      _arm()
  left, interval = signal.getitimer(signal.ITIMER_REAL)
  _guard["cpu_deadline"], _guard["wall_deadline"] = cpu, wall
  _guard["caller"] = _CallerAlarm(signal.getsignal(signal.SIGALRM), left, interval)
  _guard["active"] = True
  old = signal.signal(signal.SIGALRM, _alarm)
  try:
    _arm()
    return fn()
  finally:
    _guard["active"] = False
    caller, _guard["caller"] = _guard["caller"], None
    signal.setitimer(signal.ITIMER_REAL, 0)
    try:
      signal.signal(signal.SIGALRM, old)
    finally:
      caller.restore()


def guards_here() -> bool:
  """Whether the time guard can stop work on this thread: Python runs signal handlers on
  the main thread only (elsewhere guarded work just runs), and a SIGALRM handler set
  outside Python (getsignal None) could not be put back after."""
  return (threading.current_thread() is threading.main_thread()
          and (_guard["active"] or signal.getsignal(signal.SIGALRM) is not None))


def _first_alarm() -> float:
  """Seconds until the guard's limit could first be reached (CPU time runs no faster than
  the clock), at least 1 ms."""
  left = _guard["wall_deadline"] - time.monotonic()
  if CPU_CLOCK:
    left = min(left, _guard["cpu_deadline"] - time.thread_time())
  return max(left, 1e-3)


def _global_names(code: types.CodeType) -> set[str]:
  """The names a function's code (its lambdas included) may look up in its globals."""
  names = set(code.co_names)
  for const in code.co_consts:
    if isinstance(const, types.CodeType):
      names |= _global_names(const)
  return names


def _without_trig_passes():
  """SymPy's own simplify with its trigsimp and exptrigsimp steps left out.

  Those two passes (Fu et al.'s rule search) are ~60% of a search's SymPy time and rarely
  change a node count: on 3,590 simplifications recorded in five Strogatz searches 97% of
  the counts were equal and the rest within -4..+7, both ways (trigsimp shortens by operation
  count, not nodes), at 0.29-0.36 of the time (BUILD_NOTES "A light simplification").
  Built as a copy of `sympy.simplify.simplify.simplify` with those two names rebound in its
  globals (its recursion into function arguments rebound to the copy too), so SymPy itself
  is untouched; a SymPy whose simplify does not call them by those names gets the full one.
  """
  module = importlib.import_module("sympy.simplify.simplify")
  full = module.simplify
  if not {"trigsimp", "exptrigsimp", "simplify"} <= _global_names(full.__code__):
    return full
  same = lambda expr, *args, **kwargs: expr
  scope = dict(module.__dict__, trigsimp=same, exptrigsimp=same)
  light = types.FunctionType(full.__code__, scope, "simplify", full.__defaults__, full.__closure__)
  light.__kwdefaults__ = full.__kwdefaults__
  scope["simplify"] = light
  return light


_light_simplify = _without_trig_passes()


def simplify(expr: sympy.Expr, seconds: float = SIMPLIFY_SECONDS, light: bool = False) -> sympy.Expr:
  """sympy.simplify with a time guard (main thread only); the input if it runs over.
  light=True: without its trigonometric passes (`_without_trig_passes`).

  Random decoder output can make SymPy's simplify run for minutes; a search calls this
  thousands of times, so an over-long simplification counts the unsimplified form instead.
  """
  fn = _light_simplify if light else sympy.simplify
  try:
    return _guarded(lambda: fn(expr), seconds)
  except _Timeout:
    return expr
  except (TypeError, ValueError, ZeroDivisionError, RecursionError, MemoryError):
    return expr  # SymPy gives up on some decoder output in these ways too


def within(fn, seconds: float | None = None):
  """fn() under the simplification's time guard (SIMPLIFY_SECONDS unless given; main thread
  only: elsewhere it just runs); None if it runs over (SymPy's factor of a long sum can take
  minutes too)."""
  try:
    return _guarded(fn, SIMPLIFY_SECONDS if seconds is None else seconds)
  except _Timeout:
    return None


def build(node: E.Node, names=None, seconds: float | None = None) -> sympy.Expr:
  """E.to_sympy under the guard; if SymPy's construction-time evaluation runs over, the
  same tree built unevaluated (instant; printing and LaTeX still work)."""
  try:
    return _guarded(lambda: E.to_sympy(node, names),
                    SIMPLIFY_SECONDS if seconds is None else seconds)
  except _Timeout:
    with sympy.evaluate(False):
      return E.to_sympy(node, names)


def node_count(expr: sympy.Expr) -> int:
  """SRBench's complexity: the number of nodes in sympy.preorder_traversal."""
  return sum(1 for _ in sympy.preorder_traversal(expr))


def count_simplified(prefix: tuple[str, ...], light: bool = False) -> int:
  """C of a prefix token tuple, uncached (what helper processes run)."""
  tree = E.from_prefix(prefix)
  try:
    # Building can hang too: SymPy evaluates on construction (seen: tanh of a nested sum
    # asking whether it is real, through Mod and a polynomial gcd, for over 10 minutes).
    expr = _guarded(lambda: E.to_sympy(tree), SIMPLIFY_SECONDS)
  except (_Timeout, RecursionError, MemoryError, OverflowError, ValueError, TypeError):
    return len(tree)  # SymPy cannot build it (in time): count the tree's own nodes
  try:
    return node_count(simplify(expr, light=light))
  except (_Timeout, RecursionError, MemoryError):
    # _Timeout: the deadline landed between simplify's return and its clean-up.
    return node_count(expr)


# --- constant patterns -----------------------------------------------------------------------

# Stand-ins for fitted constants (see `constant_pattern`): far from integers and simple
# fractions, and no sum or product of a few of them lands on one.
_GENERIC = tuple(1.0 + math.sqrt(2.0 + i) / 7.0 for i in range(64))


def constant_pattern(node: E.Node) -> E.Node:
  """The tree with each fitted constant replaced by a stand-in of the same sign.

  What SymPy's simplification does with a float constant does not depend on its value,
  except for integers (which can cancel), the sign, and constants that are equal to one
  another. Those are kept; every other value becomes a fixed stand-in, equal magnitudes
  sharing one. Two candidates that differ only in their fitted values then share one
  simplification: in a search most candidates are a refit of a skeleton already seen.
  Both tests read the full-precision values, not their 3-digit tokens: a fitted -0.99993
  (token -1.00) or a pair 250.3 / -250.4 (both 2.50e2) would otherwise cancel in SymPy,
  and c * (x - 0.99993 x) would count as the constant 0, C = 1.
  """
  slots: dict[float, float] = {}
  out = []
  for v in E.constants(node):
    if float(v).is_integer() and abs(v) < 1e15:
      out.append(vocab.round_constant(v))  # as its tokens hold it (1234 -> 1230: still whole)
    else:
      g = slots.setdefault(abs(v), _GENERIC[len(slots) % len(_GENERIC)])
      out.append(math.copysign(g, v))
  return E.with_constants(node, out)


# --- the cache and the helper processes ------------------------------------------------------

class Cache:
  """Prefix -> C, least recently used out first. (functools.lru_cache cannot say what it
  holds, and the batched path must know which prefixes still need SymPy.)"""

  def __init__(self, size: int):
    self.size = size
    self.data: collections.OrderedDict[tuple[str, ...], int] = collections.OrderedDict()
    self.hits = 0
    self.misses = 0

  def get(self, key: tuple[str, ...]) -> int | None:
    value = self.data.get(key)
    if value is not None:
      self.data.move_to_end(key)
    return value

  def put(self, key: tuple[str, ...], value: int) -> None:
    self.data[key] = value
    self.data.move_to_end(key)
    while len(self.data) > self.size:
      self.data.popitem(last=False)


cache = Cache(CACHE_SIZE)  # full simplifications
light_cache = Cache(CACHE_SIZE)  # light ones (a search's ranking)


class _Helper:
  """A `python -m lee_jax.complexity` process: a prefix per line in, its C per line out.

  A plain subprocess rather than a multiprocessing pool: a spawned pool worker first
  re-imports the parent's main module (4 s of JAX and Flax for `lee_jax.infer`), while
  this imports SymPy only (~0.8 s); and it ends on its own when its stdin closes.
  """

  def __init__(self):
    self.proc = isolated.start("lee_jax.complexity")
    self.sent: collections.deque[int] = collections.deque()  # indices in flight, in order
    self.buffer = b""

  def fileno(self) -> int:
    return self.proc.stdout.fileno()

  def send(self, index: int, prefix: tuple[str, ...], light: bool) -> None:
    self.proc.stdin.write((" ".join((str(int(light)),) + prefix) + "\n").encode())
    self.proc.stdin.flush()
    self.sent.append(index)

  def receive(self) -> list[tuple[int, int]]:
    """(index, C) of the answers that have arrived; raises EOFError if the helper is gone."""
    data = os.read(self.fileno(), 1 << 16)
    if not data:
      raise EOFError
    *lines, self.buffer = (self.buffer + data).split(b"\n")
    counts = [int(line) for line in lines]
    return [(self.sent.popleft(), c) for c in counts]

  def close(self) -> None:
    isolated.stop(self.proc, 5.0)


_helpers: list[_Helper] = []
HELPER_PATIENCE = 60.0  # seconds without an answer before a busy helper is given up


def shutdown_helpers() -> None:
  while _helpers:
    _helpers.pop().close()


atexit.register(shutdown_helpers)


class Job:
  """Complexities of a batch of prefixes being computed.

  Uncached prefixes go to the helper processes, two in flight each, from the front of the
  queue. With background=True a thread keeps the helpers fed while the caller does other
  work (the search decodes its next batch); `result()` finishes the job, this process taking
  prefixes from the back of the queue, and caches the counts. One job at a time: starting
  one finishes the one before.
  """

  def __init__(self, prefixes: list[tuple[str, ...]], helpers: int, background: bool = False,
               light: bool = False):
    global _active
    if _active is not None:
      _active.result()
    self.prefixes = prefixes
    self.light = light
    self.cache = light_cache if light else cache
    self.todo_prefixes = [p for p in dict.fromkeys(prefixes) if self.cache.get(p) is None]
    self.cache.hits += len(prefixes) - len(self.todo_prefixes)
    self.cache.misses += len(self.todo_prefixes)
    self.todo = collections.deque(range(len(self.todo_prefixes)))
    self.out: dict[int, int] = {}
    self.counts: list[int] | None = None
    self.live: list[_Helper] = []
    self._stop = threading.Event()
    self._thread: threading.Thread | None = None
    if helpers > 0 and self.todo and (background or len(self.todo) > 1):
      try:
        while len(_helpers) < helpers:
          _helpers.append(_Helper())
        self.live = list(_helpers[:helpers])
      except OSError:  # cannot start a process here: do it all in this one
        self.live = []
    _active = self
    if background and self.live:
      self._thread = threading.Thread(target=self._feed, daemon=True)
      self._thread.start()

  def _drop(self, h: _Helper) -> None:
    """A dead or stuck helper: its work comes back to the queue."""
    self.todo.extend(h.sent)
    self.live.remove(h)
    if h in _helpers:  # (not after a fork)
      _helpers.remove(h)
    h.proc.kill()
    h.close()

  def _refill(self) -> None:
    for h in list(self.live):
      try:
        while self.todo and len(h.sent) < 2:
          h.send(self.todo[0], self.todo_prefixes[self.todo[0]], self.light)
          self.todo.popleft()
      except OSError:
        self._drop(h)

  def _exchange(self, timeout: float) -> bool:
    """Refill the helpers, wait up to `timeout` for answers and take them. False when busy
    helpers sent nothing in time."""
    self._refill()
    busy = [h for h in self.live if h.sent]
    if not busy:
      return True
    ready = isolated.readable(busy, timeout)
    for h in ready:
      try:
        self.out.update(h.receive())
      except (EOFError, OSError, ValueError, IndexError):
        self._drop(h)
    return bool(ready)

  def _feed(self) -> None:
    """The background thread: keep the helpers busy until result() takes over."""
    try:
      while not self._stop.is_set() and self.live and (self.todo or any(h.sent for h in self.live)):
        self._exchange(0.05)  # (no live helper left: result() does the rest here)
    except Exception:  # pylint: disable=broad-except
      pass  # e.g. helpers closed at exit; result() recovers whatever is left

  def result(self) -> list[int]:
    """C of each prefix (blocks until all are counted)."""
    global _active
    if self.counts is not None:
      return self.counts
    if self._thread is not None:
      self._stop.set()
      self._thread.join()
    try:
      while self.todo or any(h.sent for h in self.live):
        self._refill()
        if self.todo:
          i = self.todo.pop()
          self.out[i] = count_simplified(self.todo_prefixes[i], self.light)
        if not self._exchange(0 if self.todo else HELPER_PATIENCE) and not self.todo:
          for h in [h for h in self.live if h.sent]:  # no answer for HELPER_PATIENCE: stuck
            self._drop(h)
    finally:
      for h in [h for h in self.live if h.sent]:  # interrupted: late answers must not reach the next job
        self._drop(h)
      if _active is self:
        _active = None
    counts = {p: self.out[i] for i, p in enumerate(self.todo_prefixes)}
    for p, c in counts.items():
      self.cache.put(p, c)
    self.counts = [counts[p] if p in counts else self.cache.get(p) for p in self.prefixes]
    return self.counts


_active: Job | None = None


def _forget_after_fork() -> None:
  """In a forked child: none of the parent's helpers, in the list or in a job in flight.
  Their pipes carry the parent's prefixes, so the child's would be answered crosswise;
  the job's prefixes they held go back to its queue (the child counts them itself), and
  later jobs start helpers of the child's own (`isolated._forget_after_fork`, likewise)."""
  _helpers.clear()
  if _active is not None:
    for h in _active.live:
      _active.todo.extend(h.sent)
    _active.live = []


if hasattr(os, "register_at_fork"):
  os.register_at_fork(after_in_child=_forget_after_fork)


def submit(nodes: Sequence[E.Node], helpers: int = 0, background: bool = False,
           exact: bool = False, light: bool = False) -> Job:
  """Start computing C(e) of each node (see `complexities`); `.result()` returns them."""
  return Job([tuple(E.to_prefix(n if exact else constant_pattern(n))) for n in nodes], helpers,
             background, light)


def complexities(nodes: Sequence[E.Node], helpers: int = 0, exact: bool = False,
                 light: bool = False) -> list[int]:
  """C(e) of each node: the node count of SymPy's simplification of it (cached).

  By default it is computed on `constant_pattern(node)`; exact=True simplifies the node's
  own constants (the reference the pattern path is tested against). helpers > 0 spreads the
  uncached ones over that many helper processes plus this one; the counts are the same.
  light=True: the simplification without its trigonometric passes (`_without_trig_passes`).
  """
  return submit(nodes, helpers, exact=exact, light=light).result()


def complexity(node: E.Node, exact: bool = False, light: bool = False) -> int:
  """C(e) of one node (see `complexities`)."""
  return complexities([node], exact=exact, light=light)[0]


def _serve() -> None:
  """A helper's loop: reads a mode (1: light) and a prefix (space-separated tokens) per line
  and answers their C."""
  for line in sys.stdin.buffer:
    light, *prefix = line.decode().split()
    sys.stdout.write(f"{count_simplified(tuple(prefix), light == '1')}\n")
    sys.stdout.flush()


if __name__ == "__main__":
  _serve()
