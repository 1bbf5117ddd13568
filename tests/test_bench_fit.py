"""experiments/bench_fit.py: both fitters timed on the same candidates, a second backend in the
same passes, a compile-only warm-up, and a backend this machine lacks as a one-line error."""

import pathlib
import re
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = str(REPO / "experiments" / "bench_fit.py")


def _run(*args):
  return subprocess.run([sys.executable, SCRIPT, "--n=16", "--repeats=1", *args],
                        capture_output=True, text=True, cwd=REPO, timeout=600)


@pytest.mark.slow
def test_compare_backend_times_the_same_fits_in_the_same_passes():
  out = _run("--backend=cpu", "--compare_backend=cpu")
  assert out.returncode == 0, out.stderr[-2000:]
  line = re.search(r"jax on cpu \(branch layout\) in the same passes: ([\d.]+) ms, .*"
                   r"train R2 within 1e-6 of it on ([\d.]+)% of candidates", out.stdout)
  assert line and float(line.group(1)) > 0
  assert float(line.group(2)) == 100.0  # one backend twice: the same constants
  assert "speed-up vs finite-difference scipy" in out.stdout
  # each fitter's median over all 16 candidates, failed fits as the worst, never above the
  # median of its finished fits
  for name in ("scipy-fd", "scipy", "jax"):
    row = re.search(rf"^\s*{name} R2: failed (\d+), median ([-\d.]+),.* median of all 16, a failed "
                    rf"fit as the worst: ([-\d.inf]+)$", out.stdout, re.M)
    assert row, out.stdout
    assert float(row.group(3)) <= float(row.group(2))


@pytest.mark.slow
def test_compile_only_and_a_missing_backend():
  out = _run("--compile_only")
  assert out.returncode == 0 and "compiled the jax fitter's shapes (branch layout on cpu)" in out.stdout
  assert "time per candidate" not in out.stdout
  bad = _run("--compare_backend=gpu")  # this CPU-only JAX has no GPU
  assert bad.returncode == 2 and "backend 'gpu' is not available" in bad.stderr
  assert "Traceback" not in bad.stderr
  for flag in ("--n=0", "--repeats=0", "--candidates=search --datasets=strogatz_lv"):
    bad = _run(*flag.split())
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr
