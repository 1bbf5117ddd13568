"""experiments/long_sums_replay.py: the long sums' rule applied to a finished sweep."""

import json
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "experiments"))
import long_sums_replay  # noqa: E402


def _cell(dataset, r2_val, complexity, r2_test):
  return {"dataset": dataset, "noise": 0.0, "trial": 0, "seed": 0, "found": True,
          "search": {"alpha": 0.002, "probe_points": 1024}, "expression": "x", "r2_train": r2_val,
          "r2_val": r2_val, "r2_test": r2_test, "complexity": complexity, "origin": "poly"}


def test_the_long_sum_answers_only_where_it_pays():
  # a recorded 0.5 at complexity 5 is beaten (the long sum: 0.96 on validation, C 7)
  weak = long_sums_replay.replay(_cell("210_cloud", 0.5, 5, 0.5), 6)
  assert weak["origin"] == "long" and weak["r2_val"] > 0.9 and weak["complexity"] > 5
  assert weak["rounds_answer"] == {"expression": "x", "complexity": 5, "r2_val": 0.5, "r2_test": 0.5,
                                  "origin": "poly"}
  # the answer's prefix is the sum's (a parsimony replay refits from it), and the record's
  # fields of the answer it replaced are gone
  from lee_jax import expr as E
  assert weak["prefix"] == " ".join(E.to_prefix(E.from_prefix(weak["long_sum"]["prefix"].split())))
  assert "r2_train" not in weak and "as_found" not in weak
  stale = _cell("210_cloud", 0.5, 5, 0.5) | {"prefix": "x0", "as_found": {"expression": "y"},
                                             "before_refit": {"expression": "x"}}
  again = long_sums_replay.replay(stale, 6)
  assert again["prefix"] == weak["prefix"] and not {"as_found", "before_refit"} & set(again)
  # a record whose rounds' answer kept no prefix gives none
  kept = _cell("210_cloud", 0.99, 5, 0.9) | {"prefix": "x0", "rounds_answer": {
      "expression": "x", "complexity": 5, "r2_val": 0.99, "r2_test": 0.9, "origin": "poly"},
      "origin": "long", "r2_val": 0.5, "long_sum": {"expression": "z", "complexity": 40,
                                                    "r2_val": 0.5, "r2_test": 0.5, "origin": "long"}}
  back = long_sums_replay.replay(kept, 6)
  assert back["origin"] == "poly" and "prefix" not in back
  # a long sum that still answers keeps its own prefix, not the rounds' answer's
  still = kept | {"r2_val": 0.999, "complexity": 7, "prefix": "add x0 x1",
                  "long_sum": {"expression": "z", "complexity": 7, "r2_val": 0.999,
                               "r2_test": 0.9, "origin": "long", "prefix": "add x0 x1"}}
  still["rounds_answer"] = dict(kept["rounds_answer"], prefix="x0")
  assert long_sums_replay.replay(still, 6)["prefix"] == "add x0 x1"
  # shear flow's exact law at complexity 6 stays; the sum it was measured against is kept
  exact = long_sums_replay.replay(_cell("strogatz_shearflow1", 1.0, 6, 1.0), 6)
  assert exact["origin"] == "poly" and "rounds_answer" not in exact and exact["long_sum"]["r2_val"] <= 1


def test_cli_prints_both_and_writes_the_replayed_cells(tmp_path):
  src = tmp_path / "results.jsonl"
  src.write_text(json.dumps(_cell("strogatz_shearflow1", 0.2, 3, 0.2)) + "\n")
  out = tmp_path / "replayed.jsonl"
  run = lambda: subprocess.run([sys.executable, str(REPO / "experiments" / "long_sums_replay.py"),
                                str(src), "--long_terms=3", f"--out={out}"],
                               capture_output=True, text=True, cwd=REPO, timeout=300)
  r = run()
  assert r.returncode == 0, r.stderr
  assert "recorded: mean 0.200" in r.stdout and "strogatz_shearflow1: 0.200 (C 3, poly) ->" in r.stdout
  assert json.loads(out.read_text())["origin"] == "long"
  again = run()  # an existing --out is never replaced
  assert again.returncode != 0 and "exists" in again.stderr and again.stderr.count("\n") == 1
