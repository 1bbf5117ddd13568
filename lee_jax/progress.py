"""A one-line search progress display on stderr (redrawn in a terminal, sparse lines in logs)."""

from __future__ import annotations

import sys
import time


class SearchProgress:
  """Callable as search.Progress: (round, iteration, iterations, best score).

  It also says, once, when the time limit stopped the search: with the worker round whose
  result says so (`round_done`), else at `close(timed_out=...)` (the trial's flag).
  `max_time` (seconds, as run_trial's) is for the wording.
  """

  def __init__(self, rounds: int, prefix: str = "", stream=None, max_time: float | None = None):
    self.rounds, self.prefix, self.max_time = rounds, prefix, max_time
    self.stream = stream or sys.stderr
    self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
    self.t0 = time.perf_counter()
    self._last_line = 0.0
    self._open = False  # a redrawn line without its newline yet
    self._said_time = False

  def __call__(self, round_index: int, iteration: int, iterations: int, best: float) -> None:
    now = time.perf_counter()
    done = iteration >= iterations
    # In a log file: one line per ~10 s and at the end of each round.
    if not self.tty and not done and now - self._last_line < 10:
      return
    self._last_line = now
    width = 20
    fill = int(width * min(iteration / max(iterations, 1), 1.0))
    line = (f"{self.prefix}round {round_index + 1}/{self.rounds} [{'#' * fill}{'.' * (width - fill)}] "
            f"iter {iteration}/{iterations}  best score {best:.4f}  {now - self.t0:6.1f}s")
    if self.tty:
      self.stream.write("\r" + line + ("\n" if done else ""))
      self._open = not done
    else:
      self.stream.write(line + "\n")
    self.stream.flush()

  def _say_time_limit(self) -> None:
    if self._said_time:
      return
    self._said_time = True
    if self._open:  # (a redrawn line left where the round stopped)
      self.stream.write("\n")
      self._open = False
    limit = "" if self.max_time is None else f" ({self.max_time:g} s)"
    self.stream.write(f"{self.prefix}time limit{limit} reached: answering from what the "
                      "search has found\n")
    self.stream.flush()

  def close(self, timed_out: bool = False) -> None:
    """End a line left open by a round that stopped early, and say that the time limit
    stopped the search if it did (timed_out: the trial's `timed_out`)."""
    if timed_out:
      self._say_time_limit()
    if self._open:
      self.stream.write("\n")
      self.stream.flush()
      self._open = False

  def round_done(self, result) -> None:
    """For rounds finished in worker processes (no per-iteration updates from them)."""
    w = result.winner
    desc = f"val R2 {w.r2_val:.4f}, complexity {w.complexity}" if w else "no valid expression"
    self.stream.write(f"{self.prefix}round {result.round_index + 1}/{self.rounds} done: {desc}  "
                      f"{time.perf_counter() - self.t0:6.1f}s\n")
    self.stream.flush()
    if result.timed_out:
      self._say_time_limit()
