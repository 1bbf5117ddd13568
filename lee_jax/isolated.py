"""A call under a hard CPU-time limit, in a helper process the kernel can stop.

The in-process guard (`complexity._guarded`) raises from a signal handler, and Python runs
handlers between bytecodes only, so one long C call cannot be stopped: SymPy's heuristic
GCD spent over two minutes in one integer gcd of I.15.3t's symbolic-solution check under a
60 s guard (under some hash seeds; 190 s in all). Here the helper runs the call with
RLIMIT_CPU set to the limit, so the kernel ends it (SIGXCPU) where the guard could not, and
the caller's clock is a backstop for a helper that waits instead. The helper also runs with
PYTHONHASHSEED=0: SymPy's results and times depend on set order, so they repeat by run.

A plain subprocess, as `complexity._Helper` and for its reasons (it imports SymPy, not the
caller's main module); one per process, started at the first call and again after a stop.
The call runs here instead, with no limit, where no helper can (no `resource` module, or
none starts) or where the helper cannot take it (an argument that does not pickle, a
function or class defined in the caller's script).
"""

from __future__ import annotations

import atexit
import math
import os
import pickle
import selectors
import signal
import struct
import subprocess
import sys
import threading
import time
import types

try:
  import resource
except ImportError:  # (not on Windows)
  resource = None

ENABLED = resource is not None  # tests that patch a module's functions run the call here
WALL_CAP = 4.0  # a helper that spends this times its CPU limit in wall time is stopped,
WALL_SLACK = 5.0  # plus this (a new helper first imports SymPy)
READY_SECONDS = 60.0  # a helper not ready (imported) by then did not start,
RETRY_SECONDS = 600.0  # and calls run in the caller this long before the next start
# (doubled after each failed start in a row: a start that waits READY_SECONDS holds every
# caller's call, and a box where none starts would pay it each RETRY_SECONDS)
HASH_SEED = "0"  # the helper's PYTHONHASHSEED: SymPy's set order, and so its work, repeat
_HEADER = struct.Struct("<Q")


class TimedOut(Exception):
  """The call ran past its limit and was stopped."""


class Failed(Exception):
  """The helper ended while it ran the call, not by the limit (a crash, a kill)."""


def start(module: str, **env: str) -> subprocess.Popen:
  """`python -m module` with this lee_jax importable (and `env` set), pipes on its stdin
  and stdout, in its own session: Ctrl-C in the terminal stops the caller, which closes it."""
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # this lee_jax
  env = dict(os.environ, **env, PYTHONPATH=os.pathsep.join(
      [root] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
  return subprocess.Popen([sys.executable, "-m", module], env=env, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          start_new_session=True)


def stop(proc: subprocess.Popen, patience: float) -> None:
  """Closes a `start`ed process's stdin (it ends on its own), killing it after `patience` s."""
  try:
    proc.stdin.close()
    proc.wait(timeout=patience)
  except (OSError, subprocess.TimeoutExpired):
    proc.kill()
    proc.wait()
  proc.stdout.close()


def readable(streams: list, seconds: float) -> list:
  """Those of `streams` (objects with a fileno) that have something to read, waiting up to
  `seconds` for one (select.select cannot take file descriptors >= 1024)."""
  with selectors.DefaultSelector() as sel:
    for stream in streams:
      sel.register(stream, selectors.EVENT_READ)
    return [key.fileobj for key, _ in sel.select(seconds)]


class _Helper:
  """A `python -m lee_jax.isolated` process: pickled (fn, args, seconds) in, (status,
  value) out. It says it is ready once imported, so one that cannot start is known here."""

  def __init__(self):
    self.proc = start("lee_jax.isolated", PYTHONHASHSEED=HASH_SEED)
    if not readable([self.proc.stdout], READY_SECONDS) or self.proc.stdout.read(1) != b"R":
      stop(self.proc, 0.5)
      raise OSError("the helper process did not start")

  def call(self, payload: bytes, seconds: float) -> tuple[str, object]:
    """("ok", value), ("raised", exception) or ("unloadable", None) for a pickled call;
    TimedOut if it was stopped, EOFError or OSError if the helper ended or broke."""
    self.proc.stdin.write(_HEADER.pack(len(payload)) + payload)
    self.proc.stdin.flush()
    if not readable([self.proc.stdout], WALL_CAP * seconds + WALL_SLACK):
      raise TimedOut  # (the caller stops it)
    header = self.proc.stdout.read(_HEADER.size)
    if len(header) < _HEADER.size:
      code = self.proc.wait()
      if code in (-signal.SIGXCPU, -signal.SIGKILL):
        raise TimedOut
      raise EOFError(f"the helper process ended (exit status {code})")
    data = self.proc.stdout.read(_HEADER.unpack(header)[0])
    try:
      return pickle.loads(data)
    except Exception as err:  # noqa: BLE001 -- e.g. an exception whose class will not rebuild
      raise pickle.UnpicklingError(f"an unreadable reply: {type(err).__name__}: {err}") from None

  def alive(self) -> bool:
    return self.proc.poll() is None

  def close(self) -> None:
    stop(self.proc, 0.5)


_lock = threading.Lock()
_state: dict = {"helper": None, "retry_at": 0.0, "failures": 0}  # (time.monotonic's clock)


def call(fn, args: tuple, seconds: float):
  """fn(*args) with at most `seconds` of CPU time (rounded up to whole seconds, the
  kernel's unit); raises TimedOut past it, Failed if the helper ended otherwise, and
  what fn raises as it is. Runs here, unlimited, where no helper can start or the call
  cannot go to one (fn and its arguments must pickle, and load in a fresh process)."""
  try:
    payload = pickle.dumps((fn, args, seconds), protocol=pickle.HIGHEST_PROTOCOL)
  except Exception:  # noqa: BLE001 -- a lambda, a local class, an object that will not pickle
    payload = None
  with _lock:
    helper = _helper() if payload is not None else None
    if helper is not None:
      try:
        status, value = helper.call(payload, seconds)
      except TimedOut:  # stopped by the kernel, or by the clock: either way its pipes go
        _stop_helper()
        raise
      except (EOFError, OSError, pickle.UnpicklingError) as err:
        _stop_helper()
        raise Failed(str(err)) from None
      except BaseException:  # interrupted while waiting (Ctrl-C, a caller's alarm): the
        _stop_helper()  # helper's late reply would answer the next call
        raise
      if status == "ok":
        return value
      if status == "raised":
        raise value
  return fn(*args)  # (status "unloadable": defined in the caller's script)


def _helper() -> _Helper | None:
  """The running helper, started if need be; None where none can start (tried again
  RETRY_SECONDS after a failed start, twice that after two in a row, and so on: a box too
  loaded to start one may not stay so)."""
  if not ENABLED or time.monotonic() < _state["retry_at"]:
    return None
  if _state["helper"] is None or not _state["helper"].alive():
    _stop_helper()
    try:
      _state["helper"] = _Helper()
    except OSError:
      _state["retry_at"] = time.monotonic() + RETRY_SECONDS * 2.0 ** min(_state["failures"], 20)
      _state["failures"] += 1
      return None
    _state["failures"] = 0
  return _state["helper"]


def _stop_helper() -> None:
  helper, _state["helper"] = _state["helper"], None
  if helper is not None:
    try:
      helper.close()
    except OSError:
      pass


def shutdown() -> None:
  with _lock:
    _stop_helper()


atexit.register(shutdown)


def _forget_after_fork() -> None:
  """In a forked child: a lock of its own (another thread of the parent may have held this
  one at the fork, and would never release it here) and no helper (the parent's pipes
  carry the parent's calls; the child starts its own). The parent's helper is dropped,
  not stopped: it is not the child's."""
  global _lock
  _lock = threading.Lock()
  _state.update(helper=None, retry_at=0.0, failures=0)


if hasattr(os, "register_at_fork"):
  os.register_at_fork(after_in_child=_forget_after_fork)


def _cpu_used() -> float:
  usage = resource.getrusage(resource.RUSAGE_SELF)
  return usage.ru_utime + usage.ru_stime


def _reply(out, answer: tuple[str, object]) -> None:
  try:
    data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
  except Exception as err:  # noqa: BLE001 -- a value or exception that does not pickle
    data = pickle.dumps(("raised", RuntimeError(f"{type(err).__name__}: {err}")))
  out.write(_HEADER.pack(len(data)) + data)
  out.flush()


def _serve() -> None:
  """The helper's loop: each call with RLIMIT_CPU at its limit; ends when stdin closes."""
  out = os.fdopen(os.dup(1), "wb")
  os.dup2(2, 1)  # anything the calls print goes to stderr, not into the answers
  # The caller's script is not this one: a function of its __main__ must not load as a
  # namesake here (it is "unloadable", and runs in the caller)
  sys.modules["__main__"] = types.ModuleType("__main__")
  # SIGXCPU must end the process: its default, which an ignored or blocked SIGXCPU
  # inherited through exec would undo (and with no hard limit no SIGKILL follows)
  signal.signal(signal.SIGXCPU, signal.SIG_DFL)
  signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGXCPU})
  resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # SIGXCPU would otherwise dump core
  _, hard = resource.getrlimit(resource.RLIMIT_CPU)
  inp = sys.stdin.buffer
  out.write(b"R")
  out.flush()
  while True:
    header = inp.read(_HEADER.size)
    if len(header) < _HEADER.size:
      return
    try:
      fn, args, seconds = pickle.loads(inp.read(_HEADER.unpack(header)[0]))
    except BaseException:  # noqa: BLE001 -- e.g. a function of the caller's __main__
      _reply(out, ("unloadable", None))
      continue
    limit = math.ceil(_cpu_used() + seconds)
    resource.setrlimit(resource.RLIMIT_CPU, (limit if hard == resource.RLIM_INFINITY
                                             else min(limit, hard), hard))
    try:
      answer = ("ok", fn(*args))
    except BaseException as err:  # noqa: BLE001 -- raised again in the caller (SystemExit too)
      answer = ("raised", err)
    resource.setrlimit(resource.RLIMIT_CPU, (hard, hard))
    _reply(out, answer)


if __name__ == "__main__":
  _serve()
