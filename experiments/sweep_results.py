"""Reading finished sweeps (srbench.py result folders) and the paper's Table 1 rows.

Shared by aggregate.py (Table 1), pareto.py (Fig. 2) and timing.py (Table 11); no flags here.
"""

from __future__ import annotations

import csv
import pathlib

import numpy as np

COLUMNS = [("strogatz", 0.0), ("strogatz", 0.01), ("strogatz", 0.1), ("feynman", 0.0),
           ("feynman", 0.01), ("feynman", 0.1), ("blackbox", 0.0)]
HERE = pathlib.Path(__file__).resolve().parent


class SweepError(ValueError):
  """A --runs entry that is malformed or names a folder without results (one-line message)."""


def parse_runs(specs: list[str]) -> list[tuple[str, tuple[pathlib.Path, ...]]]:
  """["LABEL=FOLDER", "LABEL=FOLDER+FOLDER", ...] -> [(label, folders)], each folder holding
  a results.jsonl. Folders joined by + make one row (e.g. one model's sweeps of each group)."""
  out = []
  for spec in specs:
    label, eq, folders = spec.partition("=")
    if not eq or not label or not folders:
      raise SweepError(f"--runs entry {spec!r} is not LABEL=FOLDER")
    paths = tuple(pathlib.Path(f) for f in folders.split("+"))
    for path in paths:
      if not (path / "results.jsonl").is_file():
        raise SweepError(f"no results.jsonl in {path} (run experiments/srbench.py --out_dir={path})")
    out.append((label, paths))
  return out


def read_rows(folders: tuple[pathlib.Path, ...]) -> list[dict]:
  """Every complete line of each folder's results.jsonl (a line cut short by a kill is
  skipped: `jsonl.numbered`); a line that is not a cell record is a SweepError naming it.
  A cell recorded twice (its `key`, else dataset, noise and trial: a rerun folder joined to
  the original, overlapping shards) counts once, as its last record, in the first one's
  place: both had counted, which weighted that dataset twice in every mean."""
  from lee_jax import jsonl

  rows = {}
  for folder in folders:
    path = pathlib.Path(folder) / "results.jsonl"
    try:
      numbered = jsonl.numbered(path)
    except (jsonl.JsonlError, UnicodeDecodeError, OSError) as e:
      raise SweepError(f"{path}: cannot read it ({str(e).splitlines()[0]})") from None
    for n, r in numbered:
      where = f"{path} line {n}"
      if not isinstance(r, dict) or not isinstance(r.get("group"), str):
        raise SweepError(f"{where}: not a cell record (no group)")
      try:
        float(r.get("noise"))
      except (TypeError, ValueError):
        raise SweepError(f"{where}: noise {r.get('noise')!r} is not a number") from None
      for k in ("r2_test", "complexity"):
        if r.get(k) is not None and not isinstance(r[k], (int, float)):
          raise SweepError(f"{where}: {k} {r[k]!r} is not a number")
      key = str(r.get("key") or (repr((r["dataset"], r.get("noise"), r.get("trial")))
                                 if r.get("dataset") is not None else f"{where}"))  # (no name)
      before = rows.get(key)
      # a rerun replaces its cell; another model's or another seed's cell is another
      # experiment (joined folders of two models showed the last one's numbers only)
      for field in ("model", "seed"):
        if before is not None and field in before and field in r and before[field] != r[field]:
          raise SweepError(f"{where}: cell {key} ran with {field} {r[field]!r}, an earlier "
                           f"folder's with {before[field]!r}; join folders of one {field}")
      rows[key] = r
  return list(rows.values())


def load_paper() -> list[dict]:
  """The paper's Table 1: [{'label', 'family', 'cells': {(group, noise): (R2, C, None, None)}}]."""
  lines = [l for l in (HERE / "data" / "paper_table1.csv").read_text().splitlines()
           if not l.startswith("#")]
  rows = []
  for r in csv.DictReader(lines):
    cells = {}
    for g, n in COLUMNS:
      r2, c = r[f"{g}_{n:g}_r2"], r[f"{g}_{n:g}_c"]
      if r2:
        cells[(g, n)] = (float(r2), float(c), None, None)
    rows.append({"label": r["method"] + " [paper]", "family": r["family"], "cells": cells})
  return rows


def method_rows(specs: list[str], paper_rows: bool) -> list[dict]:
  """The paper's rows (if paper_rows), then one row (family 'ours') per LABEL=FOLDER spec."""
  runs = parse_runs(specs)  # checks every folder before reading any
  rows = load_paper() if paper_rows else []
  return rows + [{"label": label, "family": "ours", "cells": aggregate(folders)}
                 for label, folders in runs]


def aggregate(folders: tuple[pathlib.Path, ...]) -> dict:
  """{(group, noise): (mean R2, mean complexity, cells, failed)} over the folders' cells.

  A cell without a finite test R2 (no expression, NaN predictions) counts as R2 = 0.
  """
  by: dict = {}
  for r in read_rows(folders):
    by.setdefault((r["group"], float(r["noise"])), []).append(r)
  out = {}
  for key, rs in by.items():
    r2 = [r["r2_test"] if r.get("r2_test") is not None else 0.0 for r in rs]
    c = [r["complexity"] for r in rs if r.get("complexity") is not None]
    failed = sum(r.get("r2_test") is None for r in rs)
    out[key] = (float(np.mean(r2)), float(np.mean(c)) if c else float("nan"), len(rs), failed)
  return out


def write_csv(path, rows: list[dict]) -> None:
  """rows (dicts with the same keys, in column order) -> a CSV file with a header."""
  with open(path, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else [])
    w.writeheader()
    w.writerows(rows)
