import subprocess
import sys

import pytest


def _infer(*args):
  return subprocess.run([sys.executable, "-m", "lee_jax.infer", *args],
                        capture_output=True, text=True, timeout=120)


def test_quick_start_command_prints_summary_and_split():
  r = _infer("--dataset", "strogatz_shearflow1")
  assert r.returncode == 0, r.stderr
  assert "cot(y) * cos(x)" in r.stdout
  assert "train 240, val 60, test 100 rows" in r.stdout
  assert "no trained checkpoint" in r.stdout


def test_user_table_with_noise(tmp_path):
  path = tmp_path / "t.csv"
  path.write_text("a,b,out\n" + "".join(f"{i},{i % 3},{2 * i}\n" for i in range(40)))
  r = _infer("--data", str(path), "--target", "out", "--noise", "0.1", "--seed", "3")
  assert r.returncode == 0, r.stderr
  assert "train 24, val 6, test 10 rows" in r.stdout
  assert "noise sigma 0;" not in r.stdout and "noise sigma 0\n" not in r.stdout


@pytest.mark.parametrize("args,needle", [
    (["--dataset", "strogatz_shearflw1"], "strogatz_shearflow1"),
    (["--dataset", "strogatz_lv1", "--data", "x.csv"], "exactly one"),
    ([], "exactly one"),
    (["--data", "nope.csv"], "no such file"),
    (["--seed", "abc", "--dataset", "strogatz_lv1"], "seed"),
])
def test_bad_input_is_one_line_and_exit_2(args, needle):
  r = _infer(*args)
  assert r.returncode == 2
  assert r.stderr.count("\n") == 1 and needle in r.stderr and "Traceback" not in r.stderr
