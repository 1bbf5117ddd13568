"""experiments/solution_rate.py: SRBench's symbolic solution rate of a sweep's answers."""

import json
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "experiments"))
import solution_rate  # noqa: E402


def _cell(dataset, prefix, expression, r2_test, noise=0.0, **extra):
  return {"dataset": dataset, "noise": noise, "trial": 0, "seed": 0, "found": True,
          "prefix": prefix, "expression": expression, "r2_test": r2_test, **extra}


# Feynman I.12.2 (q1 q2 / (4 pi epsilon r^2)) found with its constant to 3 figures (the
# prefix's: a record older than the constants' field), and I.12.1 (mu Nn) found as mu + Nn
CELLS = [
    _cell("feynman_I_12_2", "div mul + 7 . 9 6 e - 0 2 mul x0 x1 mul x2 sq x3",
          "0.0796*q1*q2/(epsilon*r**2)", 0.99999),
    _cell("feynman_I_12_1", "add x0 x1", "Nn + mu", 0.7),
    _cell("feynman_I_12_2", "mul x0 x1", "q1*q2", 0.2, noise=0.01),  # below R2 0.5
    _cell("192_vineyard", "add x0 x1", "lugs_1989 + lugs_1990", 0.4),  # no law
    {"dataset": "feynman_I_12_1", "noise": 0.01, "trial": 0, "seed": 0, "found": False,
     "error": "DataError: ..."},  # a failed cell: no solution, as SRBench counts it
]


def _write(path, cells):
  path.write_text("".join(json.dumps(c) + "\n" for c in cells))
  return path


def _run(*args):
  return subprocess.run([sys.executable, str(REPO / "experiments" / "solution_rate.py"), *args],
                        capture_output=True, text=True, timeout=300, cwd=REPO)


def test_rates_per_noise_level_beside_the_published_ones(tmp_path):
  rec = _write(tmp_path / "r.jsonl", CELLS)
  csv = tmp_path / "groundtruth.csv"
  csv.write_text("algorithm,dataset,target_noise,data_group,symbolic_solution_rate_(%)\n"
                 "A,feynman_I_12_2,0.0,Feynman,100.0\nA,feynman_I_12_1,0.0,Feynman,0.0\n"
                 "B,feynman_I_12_2,0.0,Feynman,30.0\nA,feynman_I_12_2,0.001,Feynman,90.0\n")
  out = tmp_path / "checked.jsonl"
  r = _run(str(rec), f"--published={csv}", f"--out={out}")
  assert r.returncode == 0, r.stderr
  assert "feynman noise 0: 1 of 2 cells (50.0%); exact by test R2: 0" in r.stdout
  assert "solution, not exact: feynman_I_12_2 (difference 0)" in r.stdout
  assert "feynman noise 0.01: 0 of 2 cells (0.0%)" in r.stdout
  assert "reasons: test R2 <= 0.5 1, no answer 1" in r.stdout
  assert "published (SRBench, mean over 2 sets both hold): ours 50.0%; A 50.0%, B 30.0%" in r.stdout
  assert "published: no feynman dataset at noise 0.01" in r.stdout
  checked = [json.loads(l) for l in out.read_text().splitlines()]
  assert [c.get("symbolic_solution", {}).get("solution") for c in checked] == [
      True, False, False, None, False]
  # a verdict the record holds stands (the sweep's); --again checks it anew
  again = _write(tmp_path / "again.jsonl", [dict(CELLS[1], symbolic_solution={
      "solution": True, "reason": "difference 0", "difference": "0", "ratio": "1"})])
  assert "1 of 1 cells" in _run(str(again)).stdout
  assert "0 of 1 cells" in _run(str(again), "--again").stdout


def test_bad_input_is_one_line():
  for args, needle in [(["missing.jsonl"], "no such results file"),
                       ([], "usage: solution_rate.py")]:
    r = _run(*args)
    assert r.returncode != 0 and needle in r.stderr and "Traceback" not in r.stderr


def test_records_without_a_law_or_the_published_files_columns(tmp_path):
  rec = _write(tmp_path / "bb.jsonl", CELLS[3:4])
  r = _run(str(rec))
  assert r.returncode != 0 and "no cell of a dataset with a known law" in r.stderr
  rec = _write(tmp_path / "r.jsonl", CELLS[:1])
  bad = tmp_path / "other.csv"
  bad.write_text("algorithm,dataset,r2_test\nA,feynman_I_12_2,0.9\n")
  r = _run(str(rec), f"--published={bad}")
  assert r.returncode != 0 and "not SRBench's groundtruth.csv" in r.stderr
  assert "Traceback" not in r.stderr


def test_another_rounding_checks_again():
  cell = dict(CELLS[0], symbolic_solution={"solution": False, "reason": "recorded"})
  assert solution_rate.verdict(cell)["reason"] == "recorded"
  # 6 decimals without the floor (SRBench's earlier rounding): 0.0796 against 0.0795775
  # differ, but the ratio is still constant
  assert solution_rate.verdict(cell, digits=6, floor=False)["reason"] == "constant ratio"
