"""experiments/compare_runs.py: paired comparison of two sweeps."""

import json
import pathlib
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
