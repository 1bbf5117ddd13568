"""experiments/bench_infer.py: --json is checked before the benchmark, never silently replaced."""

import json
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = str(REPO / "experiments" / "bench_infer.py")
# One dataset, the smallest search: seconds once the model is built.
TINY = ["--random_model=tiny", "--datasets=strogatz_glider1", "--rounds=1", "--iters=2",
        "--workers=1", "--nowarmup"]


def _run(*args):
  return subprocess.run([sys.executable, SCRIPT, *TINY, *args], capture_output=True, text=True,
                        cwd=REPO, timeout=600)


def test_a_bad_json_path_is_one_line_before_the_benchmark(tmp_path):
  old = tmp_path / "old.json"
  old.write_text("keep")
  for path, needle in [(old, "exists; pass --overwrite to replace it"),
                       (old / "rows.json", "does not exist"),  # once a traceback after the run
                       (tmp_path, "is a directory")]:
    r = _run(f"--json={path}")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("error: --json ") and needle in r.stderr, r.stderr
    assert "model:" not in r.stdout  # nothing ran
  assert old.read_text() == "keep"


def test_a_checkpoint_beside_a_random_model_is_refused(tmp_path):
  r = _run(f"--checkpoint={tmp_path}")  # (TINY passes --random_model: once it won, silently)
  assert r.returncode == 2 and "pass --checkpoint or --random_model, not both" in r.stderr


@pytest.mark.slow
def test_overwrite_replaces_the_json(tmp_path):
  old = tmp_path / "old.json"
  old.write_text("keep")
  r = _run(f"--json={old}", "--overwrite")
  assert r.returncode == 0, r.stderr
  rows = json.loads(old.read_text())["rows"]
  assert [row["dataset"] for row in rows] == ["strogatz_glider1"]
