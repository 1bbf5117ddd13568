"""Table 1 layout: our sweeps (experiments/srbench.py folders) next to the paper's rows.

    python experiments/aggregate.py --runs "Operon (ours)=experiments/results/srbench_operon"

For each run folder: mean test R2 and mean simplified complexity per (group, noise) over
its cells. A cell without a finite test R2 (no expression, NaN predictions) counts as R2 = 0
and is reported in the `failed` column. The paper's rows come from experiments/data/
paper_table1.csv (LEE paper, Table 1). Writes table1.md and table1.csv to --out_dir.
"""

from __future__ import annotations

import csv
import pathlib

import numpy as np
from absl import app
from absl import flags

_RUNS = flags.DEFINE_list("runs", [], "LABEL=FOLDER pairs of srbench.py result folders.")
_OUT = flags.DEFINE_string("out_dir", "experiments/results/table1", "Where to write the tables.")
_PAPER = flags.DEFINE_bool("paper_rows", True, "Include the paper's Table 1 rows.")

COLUMNS = [("strogatz", 0.0), ("strogatz", 0.01), ("strogatz", 0.1), ("feynman", 0.0),
           ("feynman", 0.01), ("feynman", 0.1), ("blackbox", 0.0)]
HERE = pathlib.Path(__file__).resolve().parent


def load_paper() -> list[dict]:
  lines = [l for l in (HERE / "data" / "paper_table1.csv").read_text().splitlines()
           if not l.startswith("#")]
  rows = []
  for r in csv.DictReader(lines):
    cells = {}
    for g, n in COLUMNS:
      r2, c = r[f"{g}_{n:g}_r2"], r[f"{g}_{n:g}_c"]
      if r2:
        cells[(g, n)] = (float(r2), float(c), None, None)
    rows.append({"label": r["method"] + " [paper]", "cells": cells})
  return rows


def aggregate(folder: pathlib.Path) -> dict:
  """{(group, noise): (mean R2, mean complexity, cells, failed)} over a results.jsonl."""
  import json
  by: dict = {}
  for line in (folder / "results.jsonl").read_text().splitlines():
    try:
      r = json.loads(line)
    except ValueError:
      continue
    by.setdefault((r["group"], float(r["noise"])), []).append(r)
  out = {}
  for key, rs in by.items():
    r2 = [r["r2_test"] if r.get("r2_test") is not None else 0.0 for r in rs]
    c = [r["complexity"] for r in rs if r.get("complexity") is not None]
    failed = sum(r.get("r2_test") is None for r in rs)
    out[key] = (float(np.mean(r2)), float(np.mean(c)) if c else float("nan"), len(rs), failed)
  return out


def main(argv):
  del argv
  rows = load_paper() if _PAPER.value else []
  for spec in _RUNS.value:
    label, _, folder = spec.partition("=")
    rows.append({"label": label, "cells": aggregate(pathlib.Path(folder))})
  out = pathlib.Path(_OUT.value)
  out.mkdir(parents=True, exist_ok=True)
  head = "| method | " + " | ".join(f"{g} eps={n:g} R2 / C" for g, n in COLUMNS) + " |"
  md = [head, "|" + "---|" * (len(COLUMNS) + 1)]
  with (out / "table1.csv").open("w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["method"] + [f"{g}_{n:g}_{k}" for g, n in COLUMNS for k in ("r2", "c", "cells", "failed")])
    for row in rows:
      cells = [row["cells"].get(col) for col in COLUMNS]
      md.append(f"| {row['label']} | " + " | ".join(
          "-" if c is None else f"{c[0]:.3f} / {c[1]:.1f}" + (f" ({c[2]} cells)" if c[2] else "")
          for c in cells) + " |")
      w.writerow([row["label"]] + [v for c in cells for v in (c if c else ("", "", "", ""))])
  (out / "table1.md").write_text("\n".join(md) + "\n")
  print("\n".join(md))


if __name__ == "__main__":
  app.run(main)
