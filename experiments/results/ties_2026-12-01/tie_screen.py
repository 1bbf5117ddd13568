"""Which recorded answers the parsimony step's ties (`parsimony.tied`) would change.

    LEE_JAX_CPU_THREADS=1 python experiments/results/ties_2026-12-01/tie_screen.py RECORD.jsonl [--out=CHANGED.jsonl]

(from the repository root).

For each cell, the recorded answer (its prefix) and, where the record holds one, the answer
before the final refit ("before_refit": what the step saw in the trial) have their
constants fitted again on the step's rows, and the step (`parsimony.answer`) is taken with
ties and without (TIES = 0). Prints each cell where the two differ, with the complexity and
test R2 either way: the cells whose whole search is worth running again.
"""

from __future__ import annotations

import json
import sys
import time

from absl import app
from absl import flags

from lee_jax import configs
from lee_jax import expr as E
from lee_jax import fit
from lee_jax import parsimony
from lee_jax import trial

sys.path.insert(0, "experiments")
import parsimony_replay  # noqa: E402

flags.DEFINE_string("out", None, "Write the cells whose step changes with ties here (JSONL).")
FLAGS = flags.FLAGS


def _step(cell, prefix: str, ties: int):
  ds, p, data = parsimony_replay._folds(cell)
  X, y, _ = parsimony.rows(data.X_train, data.y_train, None, cell["seed"])
  node = fit.fit_constants(E.from_prefix(prefix.split()), X, y, 200).node
  found = parsimony_replay._candidate(cell, node)
  alpha = cell["search"].get("alpha", configs.SearchConfig.alpha)
  probe_points = cell["search"].get("probe_points", configs.SearchConfig.probe_points)
  old = parsimony.TIES
  parsimony.TIES = ties
  try:
    out = parsimony.answer(found, data, alpha, probe_points, cell["seed"])
  finally:
    parsimony.TIES = old
  return trial.candidate_summary(out, p.X_test, p.y_test, E.formula_names(ds.feature_names))


def main(argv):
  if len(argv) != 2:
    raise app.UsageError("usage: tie_screen.py RECORD.jsonl [--out=CHANGED.jsonl]")
  changed = []
  t0 = time.time()
  for line in open(argv[1]):
    cell = json.loads(line)
    if not cell.get("found") or not cell.get("prefix"):
      continue
    starts = [("answer", cell["prefix"])]
    if (cell.get("before_refit") or {}).get("prefix"):
      starts.append(("before_refit", cell["before_refit"]["prefix"]))
    for name, prefix in starts:
      without = _step(cell, prefix, 0)
      with_ties = _step(cell, prefix, parsimony.TIES)
      if with_ties["expression"] != without["expression"]:
        print(f"{cell['dataset']} noise {cell['noise']} from {name}: "
              f"{without['complexity']} {without['r2_test']:.6f} {without['expression']}  ->  "
              f"{with_ties['complexity']} {with_ties['r2_test']:.6f} {with_ties['expression']}",
              flush=True)
        changed.append({"key": cell["key"], "from": name, "without": without, "with": with_ties})
  print(f"{len(changed)} changed, {time.time() - t0:.0f} s")
  if FLAGS.out:
    with open(FLAGS.out, "x") as f:
      for c in changed:
        f.write(json.dumps(c) + "\n")


if __name__ == "__main__":
  app.run(main)
