"""Append-only JSON-lines files (training metrics, sweep results) that a kill at any moment
leaves readable: one JSON object a line, appended whole.

A kill during a write can leave the last line cut short. The next append starts on a new
line (otherwise the next record would be glued onto the torn one and both lost), and a
reader skips a torn line: one that begins a JSON object and does not parse. Any other line
that does not parse is not a torn record but a foreign or hand-edited file, and is one
error naming its line.
"""

from __future__ import annotations

import json
import os
import pathlib


class JsonlError(ValueError):
  pass


def append(path: str | pathlib.Path, record, sync: bool = False) -> None:
  """Append `record` (JSON-ready) as one line; sync: flushed to disk before returning."""
  path = pathlib.Path(path)
  with path.open("a+b") as f:
    f.seek(0, os.SEEK_END)
    torn = False
    if f.tell() > 0:
      f.seek(-1, os.SEEK_END)
      torn = f.read(1) != b"\n"
    f.write((("\n" if torn else "") + json.dumps(record) + "\n").encode())
    f.flush()
    if sync:
      os.fsync(f.fileno())


def numbered(path: str | pathlib.Path) -> list[tuple[int, object]]:
  """(line number from 1, parsed JSON) of every line; blank and torn lines skipped, any other
  line that is not JSON a JsonlError naming it. OSError and UnicodeDecodeError pass."""
  path = pathlib.Path(path)
  out = []
  for n, line in enumerate(path.read_text().splitlines(), 1):
    if not line.strip():
      continue
    try:
      out.append((n, json.loads(line)))
    except ValueError as e:
      if line.lstrip().startswith("{"):
        continue  # a record cut short by a kill
      raise JsonlError(f"{path} line {n}: not JSON ({e}); fix or remove that line") from None
  return out


def read(path: str | pathlib.Path) -> list:
  """Every record of the file (`numbered` without the line numbers)."""
  return [r for _, r in numbered(path)]
