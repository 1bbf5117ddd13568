"""What the parsimony step changes in a finished sweep, without running its search again.

    python experiments/parsimony_replay.py RESULTS.jsonl [--out=REPLAYED.jsonl] [--final_refit]

The parsimony step (lee_jax/parsimony.py) runs on the trial's answer after every round and
the long sum have run, and nothing before it depends on it. For a cell of a sweep run
without it (--noparsimony, or before it existed) this rebuilds the cell's split (dataset,
noise, trial seed as srbench.py), refits the recorded answer's constants on the step's rows
(the record holds them to 3 significant figures) and takes the step. A cell run with it is
kept as it is (--again takes the step on its answer too: a later version of the step on a
sweep run with an earlier one). Prints the mean, median and clipped test R2 and complexity before and after
(`compare_runs.compare`) and each cell whose answer changes; --out writes the cells with the
replayed answer ("as_found" holds the recorded one; `compare_runs.py` reads them).

--final_refit replays the step after it instead, `final_refit.refit` (the answer's free
constants fitted on the training and validation rows), on each cell whose record holds no
refit ("before_refit"; a replay of the step or of the long sums that changes an answer drops
it): from the record's full-precision constants where they are the prefix's, else from the
prefix's refitted on the training fold, its integers and halves held ("before_refit" holds
the answer before it). For both, replay the parsimony step first and then the refit on its
output.

--rewrite replays the trial's last step instead, `rewrite.shortest` (the answer in the form
of fewest SymPy nodes with its values on the training and validation rows), on each cell's
answer with the record's full-precision constants ("rewritten_from" holds the answer before
it).
"""

from __future__ import annotations

import numpy as np
from absl import flags

from lee_jax import cli
from lee_jax import complexity
from lee_jax import configs
from lee_jax import datasets
from lee_jax import final_refit
from lee_jax import expr as E
from lee_jax import fit
from lee_jax import parsimony
from lee_jax import pool as pool_lib
from lee_jax import rewrite
from lee_jax import score
from lee_jax import search
from lee_jax import trial

import compare_runs  # experiments/ is on sys.path when this runs as a script

FLAGS = flags.FLAGS


def _define_flags() -> None:  # here, not at import: the tests import this beside lee_jax.infer
  flags.DEFINE_string("out", None, "Write the replayed cells here (JSONL; not over an existing "
                      "file).")
  flags.DEFINE_bool("again", False, "Also take the step on cells run with it (a later version "
                    "of the step on their answers; their `as_found` stays the search's).")
  flags.DEFINE_bool("final_refit", False, "Instead of the parsimony step, refit each answer's "
                    "constants on the training and validation rows (final_refit.py), in cells "
                    "whose record holds no refit.")
  flags.DEFINE_bool("rewrite", False, "Instead, write each answer in its shortest form "
                    "(rewrite.py, the trial's last step).")


def replay(cell: dict, again: bool = False) -> dict:
  """The cell's record with the answer the parsimony step gives now ("as_found" holds the
  recorded one where it changes, or the search's where the record has one). again=False
  keeps cells that were run with the step."""
  ran = cell["search"].get("parsimony") or "as_found" in cell
  # (no prefix: a long_sums_replay.py answer from a record that kept none; the step cannot
  # start from its rounded printout)
  if not cell.get("found") or (ran and not again) or not cell.get("prefix"):
    return cell
  alpha = cell["search"].get("alpha", configs.SearchConfig.alpha)
  probe_points = cell["search"].get("probe_points", configs.SearchConfig.probe_points)
  ds, p, data = _folds(cell)
  X, y, _ = parsimony.rows(data.X_train, data.y_train, None, cell["seed"])
  # The record's 3 digits make a fitted 1.002 an exact 1 (which the step holds): every
  # constant is fitted again. A whole one that `fit.snap` set in the trial comes back to it;
  # a cell whose formula and complexity stay counts as unchanged.
  node = fit.fit_constants(E.from_prefix(cell["prefix"].split()), X, y, 200).node
  found = _candidate(cell, node)
  simpler = parsimony.answer(found, data, alpha, probe_points, cell["seed"])
  now = trial.candidate_summary(simpler, p.X_test, p.y_test, E.formula_names(ds.feature_names))
  if simpler is found or (now["expression"] == cell["expression"]
                          and now["complexity"] == cell["complexity"]):
    return cell
  out = dict(cell)
  out["as_found"] = cell.get("as_found") or {k: cell.get(k) for k in ANSWER}
  out.update(now, r2_train=simpler.r2_train,
             constants=[float(v) for v in E.constants(simpler.node)])
  out.pop("before_refit", None)  # the final refit's start was the old answer: replay it after
  return out


def refit(cell: dict) -> dict:
  """The cell's record with its answer's constants refitted by `final_refit.refit` (on the
  training and validation rows), "before_refit" holding the answer before; cells whose
  record holds a refit, or whose refit is not taken, as they are. (A search run with the
  refit that did not take it recorded the answer it would start from: the same refit
  declines again. A replay that changes an answer drops its "before_refit".)"""
  if not cell.get("found") or not cell.get("prefix") or "before_refit" in cell:
    return cell
  ds, p, data = _folds(cell)
  found, guard, alpha = _answer(cell, data)
  refitted, _ = final_refit.refit(found, data, alpha, cell["seed"], guard)
  if refitted is found:
    return cell
  names = E.formula_names(ds.feature_names)
  out = dict(cell)
  out["before_refit"] = trial.candidate_summary(found, p.X_test, p.y_test, names)
  out.update(trial.candidate_summary(refitted, p.X_test, p.y_test, names),
             r2_val=cell["r2_val"], r2_train=refitted.r2_train,
             constants=[float(v) for v in E.constants(refitted.node)])
  return out


def rewritten(cell: dict) -> dict:
  """The cell's record with its answer in its shortest form (`rewrite.shortest`, the trial's
  last step), "rewritten_from" holding the answer before; cells it does not make shorter
  than recorded as they are (a record without its constants starts from their printed
  digits: a form its own count says is shorter may be the recorded count)."""
  if not cell.get("found") or not cell.get("prefix"):
    return cell
  ds, p, data = _folds(cell)
  names = E.formula_names(ds.feature_names)
  found, guard, alpha = _answer(cell, data, names)
  shorter = rewrite.shortest(found, data, alpha, guard)
  if shorter is found or shorter.complexity >= cell["complexity"]:
    return cell
  out = dict(cell)
  out["rewritten_from"] = {k: cell.get(k) for k in ANSWER}
  out.update(trial.candidate_summary(shorter, p.X_test, p.y_test, names),
             r2_val=cell["r2_val"], constants=[float(v) for v in E.constants(shorter.node)])
  return out


def _answer(cell: dict, data, names=None):
  """(the cell's answer as a Candidate, the trial's pole guard, alpha): the record's
  full-precision constants where they are the prefix's, else (a replay's answer, or a record
  older than them) refitted on the training fold from 3 or 4 digits, integers and halves held
  (1.00 is a law's 1 far more often than a fitted 1.002): from the prefix's, or with `names`
  (the columns' formula names) from the printed expression's where SymPy counts it as the
  record does (it tells a noisy 2.001 from a law's 2, which the prefix's 2.00 does not)."""
  tokens = cell["prefix"].split()
  node = E.from_record(tokens, cell.get("constants"))  # the answer's own constants
  if node is None:
    node = E.from_prefix(tokens)
    if names is not None:
      try:
        printed = E.from_sympy(E.parse_formula(cell["expression"], names), names)
        if complexity.complexity(printed) == cell["complexity"]:
          node = printed
      except (ValueError, TypeError, SyntaxError):  # (beyond LEE's operators)
        pass
    X, y, _ = parsimony.rows(data.X_train, data.y_train, None, cell["seed"])
    node = fit.fit_constants(node, X, y, 200, free=parsimony.free_mask(node)).node
  probe_points = cell["search"].get("probe_points", configs.SearchConfig.probe_points)
  guard = parsimony.pole_guard(data, probe_points, cell["seed"])
  return _candidate(cell, node), guard, cell["search"].get("alpha", configs.SearchConfig.alpha)


def _folds(cell: dict):
  """(dataset, split, SearchData) of a cell, as srbench.py built them."""
  ds = datasets.load_dataset(cell["dataset"])
  p = datasets.split(ds.X, ds.y, seed=cell["seed"], noise=cell["noise"])
  return ds, p, search.SearchData.from_split(p)


def _candidate(cell: dict, node: E.Node) -> pool_lib.Candidate:
  return pool_lib.Candidate(node, *score.ids_and_consts(node, None), cell.get("r2_train", np.nan),
                            cell["r2_val"], cell["complexity"], np.nan, cell.get("origin", ""))


ANSWER = ("expression", "complexity", "r2_val", "r2_test", "origin")


def _r2(cell: dict) -> str:
  """A cell's test R2 in the log (null where the predictions were not finite: a TypeError)."""
  v = cell.get("r2_test")
  return "-" if v is None else f"{v:.4f}"


def main(argv):
  if len(argv) != 2:
    raise ValueError("usage: parsimony_replay.py RESULTS.jsonl [--out=FILE]")
  if FLAGS.final_refit and FLAGS.rewrite:
    raise ValueError("--final_refit and --rewrite replay different steps: pass one")
  out_path = compare_runs.new_file(FLAGS.out)
  recorded = compare_runs.read_cells(argv[1])
  replayed = {}
  step = (refit if FLAGS.final_refit else rewritten if FLAGS.rewrite
          else (lambda c: replay(c, FLAGS.again)))
  for key, c in recorded.items():
    replayed[key] = after = compare_runs.replayed(argv[1], c, step)
    if after is not c:
      print(f"  {c['dataset']} (noise {c['noise']}): {_r2(c)} C {c['complexity']} "
            f"{c['expression']}  ->  {_r2(after)} C {after['complexity']} "
            f"{after['expression']}", flush=True)
  d = compare_runs.compare(recorded, replayed)
  print(f"{len(recorded)} cells, {sum(r is not c for r, c in zip(replayed.values(), recorded.values()))} "
        f"answers changed")
  print(f"  recorded: {compare_runs.side_line(d['before'], 2)}")
  print(f"  replayed: {compare_runs.side_line(d['after'], 2)}")
  print(f"  {d['better']} better, {d['worse']} worse (clipped test R2, by > 0.001)")
  if out_path is not None:
    compare_runs.write_cells(out_path, replayed.values())


if __name__ == "__main__":
  _define_flags()
  cli.run(main, ValueError, FileNotFoundError, positional=1)
