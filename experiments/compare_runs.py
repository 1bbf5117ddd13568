"""Paired comparison of two srbench.py result sets on the cells both hold.

    python experiments/compare_runs.py BEFORE.jsonl AFTER.jsonl   # or their folders

Cells are matched by (dataset, noise, trial). Prints, over the shared cells: mean, median
and clipped mean test R2 (R2 clipped to [0, 1], so one catastrophic extrapolation does not
decide the comparison), mean complexity and wall time of each side; the paired difference
of clipped R2 with how many cells got better or worse by more than --tie; and, with
--cells, every cell that changed.
"""

from __future__ import annotations

import json
import math
import pathlib

import numpy as np
from absl import flags

from lee_jax import cli
from lee_jax import datasets
from lee_jax import jsonl


def _define_flags() -> None:
  flags.DEFINE_float("tie", 1e-3, "Changes of clipped R2 up to this count as ties.")
  # A negative or NaN tie would count every cell (or none) as changed.
  flags.register_validator("tie", lambda v: math.isfinite(v) and v >= 0,
                           "--tie must be a finite number >= 0")
  flags.DEFINE_bool("cells", False, "List every cell whose clipped R2 changed.")


def read_cells(path: str | pathlib.Path) -> dict[tuple, dict]:
  """(dataset, noise, trial) -> the cell's record, from results.jsonl or its folder (a line
  cut short by a kill is skipped, as the sweep that wrote it does: `jsonl.numbered`)."""
  p = pathlib.Path(path)
  p = p / "results.jsonl" if p.is_dir() else p
  if not p.is_file():
    raise FileNotFoundError(f"{p}: no such results file")
  try:
    numbered = jsonl.numbered(p)  # (its JsonlError, a line that is not JSON, is a ValueError)
  except UnicodeDecodeError:
    raise ValueError(f"{p}: not a text file (a results.jsonl holds one JSON object a line)") from None
  except OSError as e:
    raise ValueError(f"{p}: cannot read it ({e.strerror or e})") from None
  out = {}
  for n, r in numbered:
    r, key = _cell(r, f"{p} line {n}")
    out[key] = r
  if not out:
    raise ValueError(f"{p} holds no cells")
  return out


def _cell(r, where: str) -> tuple[dict, tuple]:
  """(record, key) of one parsed results line; anything else is one ValueError naming where
  it is."""
  if not isinstance(r, dict):
    raise ValueError(f"{where}: not a JSON object")
  if not isinstance(r.get("dataset"), str):
    raise ValueError(f"{where}: no dataset name")
  if not datasets.is_number(r.get("noise")) or not math.isfinite(r["noise"]):
    raise ValueError(f"{where}: noise {r.get('noise')!r} is not a finite number")
  if not datasets.is_integer(r.get("trial")):
    raise ValueError(f"{where}: trial {r.get('trial')!r} is not an integer")
  # the fields the comparison averages: a number or null (a failed cell)
  for k in ("r2_test", "complexity", "wall_time_s"):
    if r.get(k) is not None and not datasets.is_number(r[k]):
      raise ValueError(f"{where}: {k} {r[k]!r} is not a number")
  return r, (r["dataset"], float(r["noise"]), r["trial"])


def _r2(cell: dict) -> float:
  v = cell.get("r2_test")
  return float(v) if v is not None and np.isfinite(v) else np.nan


def compare(before: dict[tuple, dict], after: dict[tuple, dict], tie: float = 1e-3) -> dict:
  keys = sorted(set(before) & set(after))
  if not keys:
    raise ValueError("the two result sets share no cell")
  # the same (dataset, noise, trial) under two base seeds is two splits, not a pair
  seeds = [k for k in keys if None not in (before[k].get("seed"), after[k].get("seed"))
           and before[k]["seed"] != after[k]["seed"]]
  if seeds:
    raise ValueError(f"{len(seeds)} paired cells ran with other seeds ({seeds[0][0]} trial "
                     f"{seeds[0][2]}: {before[seeds[0]].get('seed')} vs "
                     f"{after[seeds[0]].get('seed')}); compare runs of one --seed")
  a = np.array([_r2(before[k]) for k in keys])
  b = np.array([_r2(after[k]) for k in keys])
  ca, cb = np.clip(np.nan_to_num(a, nan=0.0), 0, 1), np.clip(np.nan_to_num(b, nan=0.0), 0, 1)
  d = cb - ca

  def side(r2, clipped, cells):
    # A failed cell (no finite test R2) as R2 0 and out of the complexity, as the sweep's
    # summary and sweep_results count it: its mean and median left it out and its
    # complexity counted it as 0 nodes.
    sizes = [c["complexity"] for c, v in zip(cells, r2)
             if np.isfinite(v) and c.get("complexity") is not None]
    r2 = np.nan_to_num(r2, nan=0.0)
    return {"mean": float(r2.mean()), "median": float(np.median(r2)),
            "clipped": float(clipped.mean()),
            "complexity": float(np.mean(sizes)) if sizes else float("nan"),
            "wall_s": float(np.mean([c.get("wall_time_s") or 0 for c in cells]))}

  return {"cells": len(keys), "before": side(a, ca, [before[k] for k in keys]),
          "after": side(b, cb, [after[k] for k in keys]), "paired": float(d.mean()),
          "better": int((d > tie).sum()), "worse": int((d < -tie).sum()),
          "changed": [(k, float(ca[i]), float(cb[i])) for i, k in enumerate(keys)
                      if abs(d[i]) > tie]}


def side_line(side: dict, complexity_digits: int = 1) -> str:
  """One side of `compare` in words (the replay scripts' summary lines)."""
  return (f"mean {side['mean']:.3f}, median {side['median']:.3f}, clipped "
          f"{side['clipped']:.3f}, complexity {side['complexity']:.{complexity_digits}f}")


def new_file(path: str | None) -> pathlib.Path | None:
  """An --out path that does not exist yet (ValueError if it does; None stays None): a
  replay never writes over earlier results."""
  if path is None:
    return None
  p = pathlib.Path(path)
  if p.exists() and not p.is_dir():
    raise ValueError(f"--out {p} exists; name a new file")
  return cli.output_file(p, overwrite=False)  # (a folder, a missing one: before the work)


def replayed(path, cell: dict, replay):
  """replay(cell), where a record srbench.py would not write (a field missing or of another
  type: a hand-edited or foreign file) is one ValueError naming the cell, not a traceback."""
  try:
    return replay(cell)
  except (KeyError, TypeError, AttributeError, ValueError) as e:
    why = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    raise ValueError(f"{path}: cell {cell.get('dataset')!r} (noise {cell.get('noise')}, trial "
                     f"{cell.get('trial')}) is not a record srbench.py writes ({why})") from None


def write_cells(path: pathlib.Path, cells) -> None:
  """Cells as results.jsonl lines (strict JSON)."""
  from lee_jax import trial  # deferred: trial imports JAX, which compare_runs alone does not need
  path.write_text("".join(json.dumps(trial.json_safe(c)) + "\n" for c in cells))
  print(f"written to {path}")


def main(argv):
  if len(argv) != 3:
    cli.fail("usage: compare_runs.py BEFORE AFTER (results.jsonl files or folders)")
  f = flags.FLAGS
  try:
    res = compare(read_cells(argv[1]), read_cells(argv[2]), f.tie)
  except (FileNotFoundError, ValueError) as e:
    cli.fail(str(e))
  print(f"{res['cells']} shared cells")
  for name in ("before", "after"):
    s = res[name]
    print(f"  {name:<6}  mean {s['mean']:.3f}  median {s['median']:.3f}  clipped "
          f"{s['clipped']:.3f}  complexity {s['complexity']:.1f}  wall {s['wall_s']:.1f}s")
  print(f"  paired clipped {res['paired']:+.3f}: {res['better']} better, {res['worse']} worse")
  if f.cells:
    for (ds, noise, trial), x, y in res["changed"]:
      print(f"    {ds} eps {noise:g} trial {trial}: {x:.3f} -> {y:.3f}")


if __name__ == "__main__":
  _define_flags()
  cli.run(main, ValueError, positional=2)
