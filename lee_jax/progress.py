"""A one-line search progress display on stderr (redrawn in a terminal, sparse lines in logs)."""

from __future__ import annotations

import sys
import time


class SearchProgress:
  """Callable as search.Progress: (round, iteration, iterations, best score)."""

  def __init__(self, rounds: int, prefix: str = "", stream=None):
    self.rounds, self.prefix = rounds, prefix
    self.stream = stream or sys.stderr
    self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
    self.t0 = time.perf_counter()
    self._last_line = 0.0
    self._open = False  # a redrawn line without its newline yet

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

  def close(self) -> None:
    """End a line left open by a round that stopped early (the time limit)."""
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
