"""experiments/pareto.py: R2 vs complexity points, the non-dominated frontier, Fig. 2 files."""

import csv
import json
import pathlib
import re
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "experiments"))
import pareto  # noqa: E402
import sweep_results  # noqa: E402


def _pt(label, r2, c):
  return {"label": label, "r2": r2, "complexity": c}


def test_the_frontier_keeps_exactly_the_non_dominated_points():
  pts = [_pt("simple", 0.80, 8), _pt("accurate", 0.99, 50), _pt("middle", 0.90, 20),
         _pt("dominated", 0.85, 30), _pt("tie", 0.90, 20), _pt("worse_same_c", 0.70, 8)]
  assert pareto.on_front(pts) == [True, True, True, False, True, False]


def test_points_skip_cells_without_a_finite_r2_or_complexity():
  rows = [{"label": "m", "family": "ours",
           "cells": {("strogatz", 0.0): (0.9, 10.0, 3, 0), ("strogatz", 0.1): (0.0, float("nan"), 2, 2)}}]
  assert [(p["group"], p["noise"], p["cells"]) for p in pareto.points(rows)] == [("strogatz", 0.0, 3)]


def test_runs_must_name_a_folder_with_results(tmp_path):
  with pytest.raises(sweep_results.SweepError, match="not LABEL=FOLDER"):
    sweep_results.parse_runs(["just_a_path"])
  with pytest.raises(sweep_results.SweepError, match="no results.jsonl"):
    sweep_results.parse_runs([f"x={tmp_path}"])


def test_folders_joined_by_plus_make_one_row(tmp_path):
  for name, group, r2 in (("a", "strogatz", 0.5), ("b", "feynman", 0.9)):
    (tmp_path / name).mkdir()
    row = {"group": group, "noise": 0.0, "r2_test": r2, "complexity": 4}
    (tmp_path / name / "results.jsonl").write_text(json.dumps(row) + "\n")
  ((label, folders),) = sweep_results.parse_runs([f"m={tmp_path / 'a'}+{tmp_path / 'b'}"])
  assert label == "m" and len(folders) == 2
  assert sweep_results.aggregate(folders) == {("strogatz", 0.0): (0.5, 4.0, 1, 0),
                                              ("feynman", 0.0): (0.9, 4.0, 1, 0)}
  with pytest.raises(sweep_results.SweepError, match="no results.jsonl"):
    sweep_results.parse_runs([f"m={tmp_path / 'a'}+{tmp_path / 'c'}"])


def test_a_cell_recorded_twice_counts_once_as_its_last_record(tmp_path):
  # the original folder and a rerun of one of its cells, joined: d1 counted twice before
  def cell(name, r2):
    return json.dumps({"key": f"{name}|0|0", "dataset": name, "group": "strogatz", "noise": 0.0,
                       "trial": 0, "r2_test": r2, "complexity": 4}) + "\n"
  (tmp_path / "a").mkdir()
  (tmp_path / "b").mkdir()
  (tmp_path / "a" / "results.jsonl").write_text(cell("d1", 0.2) + cell("d2", 0.8) + cell("d3", None))
  (tmp_path / "b" / "results.jsonl").write_text(cell("d1", 0.9))
  ((_, folders),) = sweep_results.parse_runs([f"m={tmp_path / 'a'}+{tmp_path / 'b'}"])
  mean, _, cells, failed = sweep_results.aggregate(folders)[("strogatz", 0.0)]
  assert cells == 3 and failed == 1 and mean == pytest.approx((0.9 + 0.8 + 0.0) / 3)
  # the sweep's own summary counts the failed cell as 0 too (it left it out: 0.5 here)
  import sweep  # (experiments/, on the path above)
  line = sweep.summary(sweep_results.read_rows(folders)).splitlines()[1]
  assert f"{(0.9 + 0.8) / 3:.4f}" in line
  # another model's cell is another experiment, not a rerun: it showed the last one's only
  (tmp_path / "a" / "results.jsonl").write_text(cell("d1", 0.2).replace('"trial"', '"model": "A", "trial"'))
  (tmp_path / "b" / "results.jsonl").write_text(cell("d1", 0.9).replace('"trial"', '"model": "B", "trial"'))
  # (escaped: the key's bars are regex alternation, which matched any message naming d1)
  with pytest.raises(sweep_results.SweepError, match=re.escape(
      "cell d1|0|0 ran with model 'B', an earlier folder's with 'A'")):
    sweep_results.read_rows(folders)


def _pareto(*args):
  return subprocess.run([sys.executable, str(REPO / "experiments" / "pareto.py"), *args],
                        capture_output=True, text=True, timeout=120, cwd=REPO)


def test_end_to_end_with_a_sweep_folder_and_the_paper_rows(tmp_path):
  run = tmp_path / "run"
  run.mkdir()
  cells = [{"group": "strogatz", "noise": 0.1, "r2_test": 0.95, "complexity": 6},
           {"group": "strogatz", "noise": 0.1, "r2_test": 0.85, "complexity": 8},
           {"group": "feynman", "noise": 0.0, "r2_test": None, "complexity": None}]  # failed
  (run / "results.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cells) + '{"cut')
  out = tmp_path / "out"
  r = _pareto(f"--runs=mine={run}", f"--out_dir={out}")
  assert r.returncode == 0, r.stderr
  with open(out / "points.csv") as f:
    pts = list(csv.DictReader(f))
  assert list(pts[0]) == ["label", "family", "group", "noise", "r2", "complexity", "cells",
                          "on_front"]
  paper = sweep_results.load_paper()
  expect = sum(len(row["cells"]) for row in paper) + 1  # + our strogatz 0.1 point
  assert len(pts) == expect
  (mine,) = [p for p in pts if p["label"] == "mine"]
  assert (mine["group"], float(mine["noise"]), mine["cells"]) == ("strogatz", 0.1, "2")
  assert float(mine["r2"]) == pytest.approx(0.9) and float(mine["complexity"]) == 7.0
  assert mine["on_front"] == "True"  # simpler than every paper method at eps=0.1
  for p in pts:
    assert 0 <= float(p["r2"]) <= 1 and float(p["complexity"]) > 0
  for group, noise in {(p["group"], float(p["noise"])) for p in pts}:
    png = out / f"fig2_{group}_{noise:g}.png"
    assert png.read_bytes()[:4] == b"\x89PNG"
    cell = [p for p in pts if (p["group"], float(p["noise"])) == (group, noise)]
    best = max(cell, key=lambda p: float(p["r2"]))
    assert best["on_front"] == "True"
  assert len(list(out.glob("fig2_*.png"))) == len(sweep_results.COLUMNS)


def test_a_missing_results_folder_is_a_one_line_error(tmp_path):
  r = _pareto(f"--runs=mine={tmp_path / 'nowhere'}", f"--out_dir={tmp_path / 'out'}")
  assert r.returncode == 2 and r.stderr.strip().startswith("error: no results.jsonl in")
  assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("line, needle", [
    ('{"dataset": "strogatz_lv1"}', "line 2: not a cell record (no group)"),  # a KeyError once
    ('{"group": "strogatz", "noise": "abc"}', "line 2: noise 'abc' is not a number"),
    ('{"group": "strogatz", "noise": 0, "r2_test": "high"}', "line 2: r2_test 'high' is not"),
    ("garbage", "line 2: not JSON"),  # skipped silently once: a row of fewer cells
])
def test_a_line_that_is_no_cell_is_an_error_naming_it(tmp_path, line, needle):
  good = json.dumps({"group": "strogatz", "noise": 0.0, "r2_test": 0.5, "complexity": 4})
  (tmp_path / "results.jsonl").write_text(good + "\n" + line + "\n")
  with pytest.raises(sweep_results.SweepError, match=re.escape(needle)):
    sweep_results.read_rows((tmp_path,))
  (tmp_path / "results.jsonl").write_text(good + '\n{"group": "strog')  # a torn last line
  assert len(sweep_results.read_rows((tmp_path,))) == 1


def test_an_out_dir_that_is_a_file_is_a_one_line_error(tmp_path):
  (tmp_path / "a").mkdir()
  row = {"group": "strogatz", "noise": 0.0, "r2_test": 0.5, "complexity": 4}
  (tmp_path / "a" / "results.jsonl").write_text(json.dumps(row) + "\n")
  (tmp_path / "f").write_text("keep")
  r = _pareto(f"--runs=mine={tmp_path / 'a'}", f"--out_dir={tmp_path / 'f'}")
  assert r.returncode == 2 and "exists and is not a directory" in r.stderr, r.stderr
  assert "Traceback" not in r.stderr and (tmp_path / "f").read_text() == "keep"
