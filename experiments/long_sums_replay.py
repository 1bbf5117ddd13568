"""What the long sums change in a finished sweep, without running its search again.

    python experiments/long_sums_replay.py RESULTS.jsonl [--long_terms=8] [--out=REPLAYED.jsonl]

A trial's long sum (lee_jax/long_sums.py) depends on the cell's data alone, and the rounds
do not see it. For a cell of a sweep run without long sums (--long_terms=0, or before they
existed) this rebuilds the cell's split (dataset, noise, trial seed as srbench.py) and finds
the long sum; a cell run with them already records it (and, where it answered, the rounds'
answer). Either way the trial's rule (`long_sums.pays`, as it is now) then decides between
the rounds' answer and the long sum from their validation R2 and complexity. Prints the mean,
median and clipped test R2 and complexity as recorded, as replayed and of the rounds' answers
alone (no long sum anywhere; `compare_runs.compare`), and each cell whose answer changes.
--out writes the cells with the replayed answer (`compare_runs.py` reads them).
"""

from __future__ import annotations

import types

from absl import flags

from lee_jax import cli
from lee_jax import configs
from lee_jax import datasets
from lee_jax import expr as E
from lee_jax import long_sums
from lee_jax import search
from lee_jax import trial

import compare_runs  # experiments/ is on sys.path when this runs as a script

FLAGS = flags.FLAGS


def _define_flags() -> None:  # here, not at import: the tests import this beside lee_jax.infer
  flags.DEFINE_integer("long_terms", configs.PRESETS["fast"].long_terms,
                       "Terms of the long sums (the presets' value by default).",
                       lower_bound=1)
  flags.DEFINE_string("out", None, "Write the replayed cells here (JSONL; not over an existing "
                      "file).")


def replay(cell: dict, long_terms: int) -> dict:
  """The cell's record with the answer the long sums rule gives now ("long_sum" holds the
  sum, "rounds_answer" the rounds' answer where the sum answers)."""
  alpha = cell["search"].get("alpha", configs.SearchConfig.alpha)
  rounds = cell.get("rounds_answer") or (cell if cell.get("found") else None)
  rounds = None if rounds is None else {
      **{k: rounds.get(k, "rounds") if k == "origin" else rounds[k] for k in ANSWER},
      **({"prefix": rounds["prefix"]} if rounds.get("prefix") else {})}
  long = cell.get("long_sum") or _long_sum(cell, long_terms, alpha)
  out = {k: v for k, v in cell.items() if k != "rounds_answer"}
  if rounds is not None:
    out.update(rounds)
  if long is None:
    return out
  out["long_sum"] = long
  as_cand = lambda r: None if r is None else types.SimpleNamespace(r2_val=r["r2_val"],
                                                                   complexity=r["complexity"])
  if long_sums.pays(as_cand(long), as_cand(rounds), alpha):
    out.update({k: long.get(k) for k in ANSWER}, found=True, origin="long", rounds_answer=rounds)
  same = _answer(out) == _answer(cell)
  if not same:
    # The recorded answer's own fields would describe the other answer: its r2_train, its
    # LaTeX, the parsimony step's start, the final refit's (parsimony_replay.py --final_refit
    # takes it again on the new answer).
    for key in ("r2_train", "latex", "constants", "as_found", "before_refit"):
      out.pop(key, None)
  # The prefix (a parsimony_replay.py refits from it) is the answer's own: the record's, the
  # sum's or the rounds' answer's, where recorded (records before 2026-11-30 lack the
  # last); `out.update(rounds)` above wrote the rounds' answer's in any case.
  now = cell if same else long if out.get("origin") == "long" else rounds
  out.pop("prefix", None)
  if now is not None and now.get("prefix"):
    out["prefix"] = now["prefix"]
  return out


ANSWER = ("expression", "complexity", "r2_val", "r2_test", "origin")


def _answer(cell: dict) -> tuple:
  """What identifies a cell's answer (SymPy may print one formula two ways)."""
  return cell.get("r2_test"), cell.get("r2_val"), cell.get("complexity")


def _long_sum(cell: dict, long_terms: int, alpha: float) -> dict | None:
  """The long sum of the cell's data, as the sweep would record it (None if there is none)."""
  probe_points = cell["search"].get("probe_points", configs.SearchConfig.probe_points)
  ds = datasets.load_dataset(cell["dataset"])
  p = datasets.split(ds.X, ds.y, seed=cell["seed"], noise=cell["noise"])
  long = long_sums.best_sum(search.SearchData.from_split(p), long_terms, alpha, probe_points,
                            cell["seed"])
  if long is None:
    return None
  # (the prefix set here too: this script replays old commits' lee_jax, whose summaries
  # lack it, from a worktree on PYTHONPATH)
  return {**trial.candidate_summary(long, p.X_test, p.y_test, E.formula_names(ds.feature_names)),
          "prefix": " ".join(E.to_prefix(long.node))}


def main(argv):
  if len(argv) != 2:
    raise ValueError("usage: long_sums_replay.py RESULTS.jsonl [--long_terms=T] [--out=FILE]")
  out_path = compare_runs.new_file(FLAGS.out)
  recorded = compare_runs.read_cells(argv[1])
  replayed = {k: compare_runs.replayed(argv[1], c, lambda c: replay(c, FLAGS.long_terms))
              for k, c in recorded.items()}
  alone = {k: c.get("rounds_answer") or c for k, c in replayed.items()}  # no long sum anywhere
  now, gain = compare_runs.compare(recorded, replayed), compare_runs.compare(alone, replayed)
  print(f"{len(recorded)} cells, long sums of up to {FLAGS.long_terms} terms")
  print(f"  recorded: {compare_runs.side_line(now['before'])}")
  print(f"  replayed: {compare_runs.side_line(now['after'])}")
  answered = sum(c.get("origin") == "long" for c in replayed.values())
  print(f"  rounds alone: {compare_runs.side_line(gain['before'])}; the long sums answer {answered} cells, "
        f"{gain['better']} better, {gain['worse']} worse (clipped test R2, by > 0.001)")
  for key, before in recorded.items():
    after = replayed[key]
    if _answer(after) != _answer(before):
      print(f"  {after['dataset']}: {before['r2_test']:.3f} (C {before['complexity']}, "
            f"{before.get('origin')}) -> {after['r2_test']:.3f} (C {after['complexity']}, "
            f"{after['origin']})")
  if out_path is not None:
    compare_runs.write_cells(out_path, replayed.values())


if __name__ == "__main__":
  _define_flags()
  cli.run(main, ValueError, FileNotFoundError, positional=1)
