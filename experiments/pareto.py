"""Paper Fig. 2 (and App. Figs. pareto-clean, pareto-bb): test R2 vs complexity, log-x.

    python experiments/pareto.py --runs "LEE (ours)=experiments/results/srbench_fast_combined"

One point per method and (group, noise): mean test R2 and mean simplified complexity over its
cells (sweep_results.aggregate, the numbers aggregate.py tabulates), for each --runs folder and for
the paper's Table 1 rows (experiments/data/paper_table1.csv). The frontier is the set of
points no other point beats on both axes (lower complexity and higher R2).

Writes to --out_dir: points.csv (label, family, group, noise, r2, complexity, cells,
on_front) and fig2_<group>_<noise>.png for every (group, noise) with a point.
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np
from absl import flags

from lee_jax import cli

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import sweep_results  # noqa: E402  (experiments/sweep_results.py, beside this script)


def define_flags() -> None:
  """Defined when run as a script, so tests can import this beside other experiment scripts."""
  flags.DEFINE_list("runs", [], "LABEL=FOLDER pairs of srbench.py result folders.")
  flags.DEFINE_string("out_dir", "experiments/results/pareto", "Where to write.")
  flags.DEFINE_bool("paper_rows", True, "Include the paper's Table 1 methods.")

FAMILY_COLORS = {"GP": "C0", "hybrid": "C2", "neural": "C1", "ours": "C3"}
GROUP_TITLES = {"strogatz": "Strogatz", "feynman": "Feynman", "blackbox": "black-box"}


def points(rows: list[dict]) -> list[dict]:
  """Table rows ({'label', 'family', 'cells'}) -> one point per (row, cell), finite ones only."""
  out = []
  for row in rows:
    for (group, noise), (r2, c, n, _) in sorted(row["cells"].items()):
      if np.isfinite(r2) and np.isfinite(c) and c > 0:
        out.append({"label": row["label"], "family": row["family"], "group": group,
                    "noise": noise, "r2": r2, "complexity": c, "cells": n or ""})
  return out


def on_front(pts: list[dict]) -> list[bool]:
  """For each point: True if no other point has complexity <= and R2 >= with one strict."""
  out = []
  for p in pts:
    out.append(not any(q["complexity"] <= p["complexity"] and q["r2"] >= p["r2"]
                       and (q["complexity"] < p["complexity"] or q["r2"] > p["r2"]) for q in pts))
  return out


def plot(path, pts: list[dict], front: list[bool], group: str, noise: float) -> None:
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  fig, ax = plt.subplots(figsize=(6, 4.5))
  for family, color in FAMILY_COLORS.items():
    fam = [p for p in pts if p["family"] == family]
    if fam:
      ax.scatter([p["complexity"] for p in fam], [p["r2"] for p in fam], color=color,
                 marker="*" if family == "ours" else "o", s=120 if family == "ours" else 36,
                 label=family, zorder=3, edgecolor="k", linewidth=0.4)
  for p in pts:
    ax.annotate(p["label"].replace(" [paper]", ""), (p["complexity"], p["r2"]), fontsize=6,
                xytext=(3, 3), textcoords="offset points")
  fr = sorted((p["complexity"], p["r2"]) for p, f in zip(pts, front) if f)
  ax.step([c for c, _ in fr], [r for _, r in fr], where="post", color="k", ls="--", lw=0.8,
          label="frontier", zorder=2)
  ax.set_xscale("log")
  ax.set(xlabel="complexity (log)", ylabel="test $R^2$",
         title=f"{GROUP_TITLES.get(group, group)}, $\\epsilon$={noise:g}")
  ax.grid(alpha=0.3, which="both")
  ax.legend(fontsize=7, loc="lower right")
  fig.tight_layout()
  fig.savefig(path, dpi=150)
  plt.close(fig)


def main(argv):
  del argv
  f = flags.FLAGS
  try:
    rows = sweep_results.method_rows(f.runs, f.paper_rows)
  except sweep_results.SweepError as e:
    cli.fail(str(e))
  pts = points(rows)
  if not pts:
    cli.fail("no points to plot (give --runs, or keep --paper_rows)")
  out = pathlib.Path(f.out_dir)
  cli.output_dir(out)  # (a file in its place: one line, not FileExistsError)
  table, written = [], []
  for group, noise in sorted({(p["group"], p["noise"]) for p in pts}):
    cell = [p for p in pts if (p["group"], p["noise"]) == (group, noise)]
    front = on_front(cell)
    table += [dict(p, on_front=f) for p, f in zip(cell, front)]
    name = f"fig2_{group}_{noise:g}.png"
    plot(out / name, cell, front, group, noise)
    written.append(name)
  sweep_results.write_csv(out / "points.csv", table)
  print(f"wrote points.csv ({len(table)} points), {', '.join(written)} to {out}")


if __name__ == "__main__":
  define_flags()
  cli.run(main, ValueError)
