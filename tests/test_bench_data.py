"""experiments/bench_data.py: its counts are checked before any batch is drawn."""

import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("args, needle", [
    (["--workers=-1"], "--workers takes counts >= 0"),  # once measured as if it were 0
    (["--workers="], "--workers takes counts >= 0"),  # once no output at all, exit 0
    (["--workers=abc"], "--workers and --buffers take integers, got abc"),
    (["--workers=2", "--buffers=0"], "--buffers counts >= 1"),
    (["--warmup=-3"], "--warmup must be >= 0"),
    (["--seed=-1"], "flag --seed=-1"),
])
def test_bad_counts_are_one_line(args, needle):
  r = subprocess.run([sys.executable, str(REPO / "experiments" / "bench_data.py"), *args],
                     capture_output=True, text=True, timeout=120, cwd=REPO)
  assert r.returncode == 2 and needle in r.stderr and r.stderr.count("\n") == 1, r.stderr
