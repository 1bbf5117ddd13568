"""Table 1 layout: our sweeps (experiments/srbench.py folders) next to the paper's rows.

    python experiments/aggregate.py --runs "Operon (ours)=experiments/results/srbench_operon"
    python experiments/aggregate.py --runs "LEE (ours)=DIR_STROGATZ+DIR_FEYNMAN"   # one row from two folders

For each run folder: mean test R2 and mean simplified complexity per (group, noise) over
its cells. A cell without a finite test R2 (no expression, NaN predictions) counts as R2 = 0
and is reported in the `failed` column. The paper's rows come from experiments/data/
paper_table1.csv (LEE paper, Table 1). Writes table1.md and table1.csv to --out_dir.
"""

from __future__ import annotations

import csv
import pathlib
import sys

from absl import flags

from lee_jax import cli

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import sweep_results  # noqa: E402  (experiments/sweep_results.py, beside this script)

_RUNS = flags.DEFINE_list("runs", [], "LABEL=FOLDER pairs of srbench.py result folders.")
_OUT = flags.DEFINE_string("out_dir", "experiments/results/table1", "Where to write the tables.")
_PAPER = flags.DEFINE_bool("paper_rows", True, "Include the paper's Table 1 rows.")


def main(argv):
  del argv
  try:
    rows = sweep_results.method_rows(_RUNS.value, _PAPER.value)
  except sweep_results.SweepError as e:
    cli.fail(str(e))
  out = pathlib.Path(_OUT.value)
  cli.output_dir(out)  # (a file in its place: one line, not FileExistsError)
  head = "| method | " + " | ".join(f"{g} eps={n:g} R2 / C" for g, n in sweep_results.COLUMNS) + " |"
  md = [head, "|" + "---|" * (len(sweep_results.COLUMNS) + 1)]
  with (out / "table1.csv").open("w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["method"] + [f"{g}_{n:g}_{k}" for g, n in sweep_results.COLUMNS for k in ("r2", "c", "cells", "failed")])
    for row in rows:
      cells = [row["cells"].get(col) for col in sweep_results.COLUMNS]
      md.append(f"| {row['label']} | " + " | ".join(
          "-" if c is None else f"{c[0]:.3f} / {c[1]:.1f}" + (f" ({c[2]} cells)" if c[2] else "")
          for c in cells) + " |")
      w.writerow([row["label"]] + [v for c in cells for v in (c if c else ("", "", "", ""))])
  (out / "table1.md").write_text("\n".join(md) + "\n")
  print("\n".join(md))


if __name__ == "__main__":
  cli.run(main, ValueError)
