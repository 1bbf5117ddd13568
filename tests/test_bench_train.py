"""experiments/bench_train.py: the FLOP count behind the MFU, and --gflop where a backend has none."""

import pathlib
import re
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = str(REPO / "experiments" / "bench_train.py")
TINY = ["--model=tiny", "--batch_size=4", "--dtype=float32", "--attention=xla"]


def _run(*args):
  out = subprocess.run([sys.executable, SCRIPT, *TINY, *args], capture_output=True, text=True,
                       cwd=REPO, timeout=600)
  assert out.returncode == 0, out.stderr[-2000:]
  return out.stdout


def _gflop(text):
  return float(re.search(r"([\d.]+) GFLOP/step", text).group(1))


@pytest.mark.slow
def test_lower_only_counts_more_work_in_phase_3_than_phase_1():
  # phase 3 adds the scatter-only encode and the refine pass to phase 1's losses
  p1, p3 = _gflop(_run("--phase=1", "--lower_only")), _gflop(_run("--phase=3", "--lower_only"))
  assert 0 < p1 < p3
  # the one-hot tables (--dense_tables=on): their matmuls are extra FLOPs
  dense = _run("--phase=1", "--lower_only", "--dense_tables=on")
  assert "dense_tables=True" in dense and _gflop(dense) > p1


@pytest.mark.slow
def test_gflop_flag_sets_the_mfu():
  text = _run("--phase=1", "--steps=2", "--gflop=500", "--peak=1e12", "--profile_steps=1",
              "--fusion_sources=2")
  ms = float(re.search(r"step ([\d.]+) ms", text).group(1))
  mfu = float(re.search(r"MFU ([\d.]+)%", text).group(1))
  assert _gflop(text) == 500.0
  assert abs(mfu - 100 * 500e9 / (ms / 1e3) / 1e12) < 0.05 * mfu + 0.1
  # the trace's two costliest fusions, each with its shape and the source lines fused into it
  # (which two varies from run to run: the model's attention, flax's LayerNorm, ...)
  # (a fusion's first line may be a transpose with no source line: CI once had one first)
  found = re.findall(r"^(\S*fusion\S*): \w+\[.*\n((?:[ \t]+x\d+ .*(?:\n|$))+)", text, re.M)
  assert len(found) == 2, text[-3000:]
  assert any(re.search(r" \w+\.py:\d+ \(", lines) for _, lines in found), text[-3000:]


@pytest.mark.parametrize("arg,needle", [
    ("--steps=-1", "not a positive integer"),  # once exit 0 with a negative step time and MFU
    ("--steps=0", "not a positive integer"),  # once ZeroDivisionError
    ("--peak=0", "--peak must be a finite FLOP/s > 0"),
    ("--peak=nan", "--peak must be a finite FLOP/s > 0"),
    ("--phase=0", "not an integer in the range [1, 5]"),  # once KeyError
    ("--phase=9", "not an integer in the range [1, 5]"),
    ("--profile_steps=-1", "not a non-negative integer"),  # once silently no trace
    ("--fusion_sources=-1", "not a non-negative integer"),
    ("--batch_size=0", "not a positive integer"),
])
def test_a_bad_setting_is_one_line_before_any_step(arg, needle):
  out = subprocess.run([sys.executable, SCRIPT, *TINY, arg], capture_output=True, text=True,
                       cwd=REPO, timeout=600)
  assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr[-2000:]
  assert needle in out.stderr and not out.stdout
