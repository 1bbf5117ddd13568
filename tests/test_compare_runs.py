"""experiments/compare_runs.py: paired comparison of two sweeps."""

import json
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "experiments"))
import compare_runs  # noqa: E402


def _write(path, cells):
  path.write_text("".join(json.dumps(dict(zip(("dataset", "trial", "r2_test", "complexity"), c),
                                          noise=0.0, wall_time_s=10.0)) + "\n" for c in cells))
  return path


def test_pairs_only_shared_cells_and_clips(tmp_path):
  a = _write(tmp_path / "a.jsonl", [("d1", 0, 0.5, 5), ("d2", 0, -40.0, 7), ("d3", 0, 0.9, 3),
                                    ("only_a", 0, 1.0, 1)])
  b = _write(tmp_path / "b.jsonl", [("d1", 0, 1.0, 9), ("d2", 0, 0.2, 9), ("d3", 0, 0.9, 3)])
  res = compare_runs.compare(compare_runs.read_cells(a), compare_runs.read_cells(b))
  assert res["cells"] == 3 and res["better"] == 2 and res["worse"] == 0
  assert res["before"]["clipped"] == pytest.approx((0.5 + 0 + 0.9) / 3)  # -40 counts as 0
  assert res["paired"] == pytest.approx((0.5 + 0.2) / 3)
  assert res["after"]["complexity"] == 7 and res["before"]["mean"] == pytest.approx(-38.6 / 3)
  assert {k[0] for k, _, _ in res["changed"]} == {"d1", "d2"}
  with pytest.raises(ValueError, match="share no cell"):
    compare_runs.compare(compare_runs.read_cells(a), {})
  with pytest.raises(FileNotFoundError):
    compare_runs.read_cells(tmp_path / "missing")


def test_failed_cells_count_as_the_sweeps_count_them_and_seeds_must_match(tmp_path):
  # a failed cell: mean and median left it out, clipped counted 0, complexity counted 0 nodes
  a = _write(tmp_path / "a.jsonl", [("d1", 0, 0.5, 5), ("d2", 0, 0.9, 10)])
  b = _write(tmp_path / "b.jsonl", [("d1", 0, None, None), ("d2", 0, 0.9, 10)])
  side = compare_runs.compare(compare_runs.read_cells(a), compare_runs.read_cells(b))["after"]
  assert side["mean"] == side["clipped"] == pytest.approx(0.45) and side["complexity"] == 10
  assert side["median"] == pytest.approx(0.45)
  # the same (dataset, noise, trial) under another --seed is another split: it paired them
  cells = {k: dict(c, seed=0) for k, c in compare_runs.read_cells(a).items()}
  other = {k: dict(c, seed=7) for k, c in cells.items()}
  assert compare_runs.compare(cells, cells)["cells"] == 2  # (a cell without one: a replay)
  with pytest.raises(ValueError, match="2 paired cells ran with other seeds"):
    compare_runs.compare(cells, other)


def _main(*args):
  return subprocess.run([sys.executable, str(REPO / "experiments" / "compare_runs.py"), *map(str, args)],
                        capture_output=True, text=True, cwd=REPO, timeout=120)


@pytest.mark.parametrize("tie", ["nan", "-1", "inf"])
def test_tie_must_be_a_finite_number_at_least_0(tmp_path, tie):
  a = _write(tmp_path / "a.jsonl", [("d1", 0, 0.5, 5)])
  r = _main(f"--tie={tie}", a, a)
  assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
  assert "--tie must be a finite number >= 0" in r.stderr and not r.stdout


def test_a_line_torn_by_a_kill_is_skipped_as_the_sweep_does(tmp_path):
  a = _write(tmp_path / "a.jsonl", [("d1", 0, 0.5, 5), ("d2", 0, 0.7, 6)])
  b = tmp_path / "b.jsonl"
  b.write_text(a.read_text()[:-9])  # the second cell's line cut short
  assert list(compare_runs.read_cells(b)) == [("d1", 0.0, 0)]


@pytest.mark.parametrize("line,needle", [
    ("[1, 2]", "not a JSON object"),
    ('{"dataset": "d2", "noise": 0, "trial": 0, "r2_test": "high"}', "r2_test 'high' is not a number"),
    ('{"dataset": "d2", "noise": null, "trial": 0}', "noise None is not a finite number"),
    ('{"dataset": "d2", "noise": 0, "trial": "x"}', "trial 'x' is not an integer"),
    ('{"noise": 0, "trial": 0}', "no dataset name"),
    ('dataset d2', "not JSON"),
])
def test_a_malformed_line_is_one_line_naming_file_and_line(tmp_path, line, needle):
  a = _write(tmp_path / "a.jsonl", [("d1", 0, 0.5, 5)])
  b = tmp_path / "b.jsonl"
  b.write_text(a.read_text() + "\n" + line + "\n")  # a blank line is skipped, still counted
  with pytest.raises(ValueError, match=f"b.jsonl line 3: {needle}"):
    compare_runs.read_cells(b)
  r = _main(a, b)
  assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
  assert r.stderr.startswith(f"error: {b} line 3: ") and needle in r.stderr
