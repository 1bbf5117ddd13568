"""SRBench's symbolic solution rate of sweeps' answers, beside the published methods'.

    python experiments/solution_rate.py RESULTS.jsonl [MORE.jsonl ...] [--out=CHECKED.jsonl] \
        [--published=groundtruth.csv] [--digits=3] [--nofloor]

Checks each ground-truth cell's answer against its dataset's law as SRBench does
(`lee_jax/solution.py`: the difference or the ratio a constant, floats rounded to 3 decimals,
only answers with test R2 > 0.5); a cell whose record already holds the sweep's verdict
(`symbolic_solution`) keeps it unless --again or another rounding is asked for. Prints per
(group, noise): the cells that are symbolic solutions, beside those exact by test R2
(>= 1 - 1e-9, BUILD_NOTES' "exact"), the verdicts' reasons, and the cells where the two
disagree. --published (SRBench's `groundtruth.csv`, its per-dataset rates over 10 trials)
adds each published method's mean rate at the same noise level over the datasets both hold,
with ours on those datasets. --out writes the cells with their verdicts.
"""

from __future__ import annotations

import collections
import math
import pathlib
import sys

import numpy as np
from absl import flags

from lee_jax import cli
from lee_jax import datasets
from lee_jax import solution

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import compare_runs  # noqa: E402  (experiments/, beside this script)

FLAGS = flags.FLAGS
EXACT_R2 = 1 - 1e-9


def _define_flags() -> None:  # here, not at import: the tests import this beside other CLIs
  flags.DEFINE_string("out", None, "Write the cells with their verdicts here (JSONL; not over "
                      "an existing file).")
  flags.DEFINE_string("published", None, "SRBench's groundtruth.csv (cavalab/srbench "
                      "docs/csv): the published methods' rates beside ours.")
  flags.DEFINE_integer("digits", solution.DIGITS, "Decimals the floats are rounded to.",
                       lower_bound=0)
  flags.DEFINE_bool("floor", True, "Round floats smaller than 1e-4 in size to 0 (SRBench's "
                    "later rounding; --nofloor: its earlier one, with --digits=6).")
  flags.DEFINE_bool("again", False, "Check cells whose record holds a verdict again.")
  flags.DEFINE_float("seconds", solution.SECONDS, "CPU seconds for one check's SymPy work.",
                     lower_bound=0.1)
  flags.DEFINE_integer("show", 6, "Published methods listed per noise level.", lower_bound=0)


def verdict(cell: dict, digits: int = solution.DIGITS, floor: bool = True, again: bool = False,
            seconds: float = solution.SECONDS) -> dict | None:
  """The cell's verdict: the one its record holds (a sweep's, at SRBench's rounding) unless
  `again` or another rounding; None for a cell without a law or an answer."""
  recorded = cell.get("symbolic_solution")
  if recorded is not None and not again and digits == solution.DIGITS and floor:
    return recorded
  return solution.of_record(cell, digits, solution.FLOOR if floor else None, seconds)


def _exact(cell: dict) -> bool:
  r2 = cell.get("r2_test")
  return r2 is not None and math.isfinite(r2) and r2 >= EXACT_R2


def published_rates(path: str, noise: float, names: set[str]) -> tuple[dict[str, float], list[str]]:
  """(method -> mean published rate in % over the datasets both hold, those datasets)."""
  import pandas as pd  # (only here: the check itself needs no pandas)
  df = pd.read_csv(path)
  need = {"algorithm", "dataset", "target_noise", "symbolic_solution_rate_(%)"}
  if not need <= set(df.columns):
    raise ValueError(f"{path}: not SRBench's groundtruth.csv (needs columns {sorted(need)})")
  at = df[np.isclose(df.target_noise, noise) & df.dataset.isin(names)]
  shared = sorted(set(at.dataset))
  rates = at.groupby("algorithm")["symbolic_solution_rate_(%)"].mean()
  return rates.sort_values(ascending=False).to_dict(), shared


def main(argv):
  if len(argv) < 2:
    raise ValueError("usage: solution_rate.py RESULTS.jsonl [MORE.jsonl ...] [--out=FILE]")
  out_path = compare_runs.new_file(FLAGS.out)
  cells: dict[tuple, dict] = {}
  for path in argv[1:]:
    for key, c in compare_runs.read_cells(path).items():
      if key in cells:
        raise ValueError(f"{path}: cell {key} is also in an earlier file")
      cells[key] = c
  checked = {}
  for key, c in cells.items():
    v = verdict(c, FLAGS.digits, FLAGS.floor, FLAGS.again, FLAGS.seconds)
    checked[key] = c if v is None else {**c, "symbolic_solution": v}
  by = collections.defaultdict(list)
  for (name, noise, _), c in checked.items():
    if "symbolic_solution" in c:
      by[(datasets.group_of(name), noise)].append(c)
  if not by:
    raise ValueError("no cell of a dataset with a known law holds an answer (black-box only?)")
  rounding = f"{FLAGS.digits} decimals" + (", below 1e-4 to 0" if FLAGS.floor else "")
  print(f"SRBench symbolic solutions (floats to {rounding}; test R2 > {solution.MIN_R2}):")
  for (group, noise), rs in sorted(by.items()):
    solved = [c for c in rs if c["symbolic_solution"]["solution"]]
    exact = [c for c in rs if _exact(c)]
    reasons = collections.Counter(c["symbolic_solution"]["reason"] for c in rs)
    print(f"{group} noise {noise:g}: {len(solved)} of {len(rs)} cells "
          f"({100 * len(solved) / len(rs):.1f}%); exact by test R2: {len(exact)}")
    print("  reasons: " + ", ".join(f"{k} {n}" for k, n in reasons.most_common()))
    for c in rs:
      if c["symbolic_solution"]["solution"] != _exact(c):
        print(f"  {'solution, not exact' if not _exact(c) else 'exact, no solution'}: "
              f"{c['dataset']} ({c['symbolic_solution']['reason']}): {c['expression']}")
    if FLAGS.published:
      names = {c["dataset"] for c in rs}
      rates, shared = published_rates(FLAGS.published, noise, names)
      if not shared:
        print(f"  published: no {group} dataset at noise {noise:g}")
        continue
      ours = [c for c in rs if c["dataset"] in shared]
      mine = 100 * np.mean([c["symbolic_solution"]["solution"] for c in ours])
      top = list(rates.items())[:FLAGS.show]
      print(f"  published (SRBench, mean over {len(shared)} sets both hold): ours {mine:.1f}%; "
            + ", ".join(f"{k} {v:.1f}%" for k, v in top))
  if out_path is not None:
    compare_runs.write_cells(out_path, checked.values())


if __name__ == "__main__":
  _define_flags()
  cli.run(main, ValueError, FileNotFoundError, positional=None)
