"""experiments/timing.py: per-phase seconds and shares, wall time per group, Table 11 files."""

import csv
import dataclasses
import json
import pathlib
import subprocess
import sys

import pytest

import helpers

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "experiments"))
import runner  # noqa: E402
import timing  # noqa: E402


def test_phase_shares_add_up_and_other_is_the_untimed_rest():
  cells = [timing.cell("a", "strogatz", 0, 10.0, {"fit": 5.0, "encode": 1.0, "cmaes": 2.0}),
           timing.cell("a", "strogatz", 0, 6.0, {"fit": 3.0, "encode": 1.0}),
           timing.cell("par", "feynman", 0, 1.0, {"fit": 4.0})]  # overlapping worker rounds
  table = timing.phase_table(cells)
  a = {p["phase"]: p for p in table if p["label"] == "a"}
  assert list(a) == [*timing.PHASES, "cmaes", "other"]
  assert a["fit"]["seconds"] == 4.0 and a["cmaes"]["seconds"] == 1.0
  assert a["other"]["seconds"] == pytest.approx(2.0)  # (10 - 8 + 6 - 4) / 2
  assert sum(p["share"] for p in a.values()) == pytest.approx(1.0)
  par = {p["phase"]: p for p in table if p["label"] == "par"}
  assert par["other"]["seconds"] == 0.0 and par["fit"]["share"] == 1.0
  walls = timing.wall_table(cells)
  assert [(w["label"], w["cells"], w["wall_mean_s"], w["wall_sd_s"]) for w in walls] == [
      ("a", 2, 8.0, 2.0), ("par", 1, 1.0, 0.0)]


def test_measured_here_on_a_tiny_model(tmp_path):
  cfg = dataclasses.replace(helpers.SMALL_SEARCH, rounds=1, iterations=5)
  setup = runner.Setup(*runner.load_engine(None, "tiny"), cfg, "iterative", seed=0)
  cells = timing.measure(setup, runner.load_all(["strogatz_lv1"]), [0.0, 0.1], "tiny")
  assert [(c["group"], c["noise"]) for c in cells] == [("strogatz", 0.0), ("strogatz", 0.1)]
  for c in cells:
    assert c["wall_time_s"] > 0 and c["timings_s"]["decode"] > 0 and c["timings_s"]["fit"] > 0
    assert sum(c["timings_s"].values()) <= c["wall_time_s"]  # in-process rounds do not overlap
  written = timing.write(cells, tmp_path, [f"machine: {timing.machine()}"])
  assert all((tmp_path / f).stat().st_size > 0 for f in written)
  md = (tmp_path / "timing.md").read_text()
  assert "- machine: " in md and "CPUs, jax " in md and "backend cpu" in md
  with open(tmp_path / "phases.csv") as f:
    phases = list(csv.DictReader(f))
  # The fast preset's composite, factored, polynomial, power-law, power-sum, separable,
  # transformed-target and wave seeds are phases of their own, after the paper's.
  assert [p["phase"] for p in phases] == [*timing.PHASES, "composite", "factor", "poly", "power",
                                          "power_sum", "separable", "transform", "wave", "other"]
  assert sum(float(p["share"]) for p in phases) == pytest.approx(1.0)
  assert all(0 <= float(p["share"]) <= 1 for p in phases)
  with open(tmp_path / "wall.csv") as f:
    walls = list(csv.DictReader(f))
  assert [(w["noise"], w["cells"]) for w in walls] == [("0.0", "1"), ("0.1", "1")]


def test_reads_srbench_folders_through_the_command_line(tmp_path):
  run = tmp_path / "run"
  run.mkdir()
  rows = [{"group": "strogatz", "noise": 0.0, "wall_time_s": 4.0,
           "timings_s": {"fit": 2.0, "decode": 1.0}},
          {"group": "strogatz", "noise": 0.0, "wall_time_s": 9.0},  # a peer: no phases
          {"group": "blackbox", "noise": 0.0, "wall_time_s": 2.0, "timings_s": {"fit": 1.0}}]
  (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
  out = tmp_path / "out"
  r = subprocess.run([sys.executable, str(REPO / "experiments" / "timing.py"),
                      f"--runs=sweep={run}", f"--out_dir={out}"],
                     capture_output=True, text=True, timeout=120, cwd=REPO)
  assert r.returncode == 0, r.stderr
  md = (out / "timing.md").read_text()
  assert "machine: not recorded by srbench.py" in md and f"sweep = {run}" in md
  assert "| sweep | strogatz | 0 | 1 | 4.00 +- 0.00 |" in md
  assert "| sweep | blackbox | 0 | 1 | 2.00 +- 0.00 |" in md
  assert "| sweep | fit | 1.500 | 50.0% |" in md  # (2 + 1) / 2 of (1.5 + 0.5 + other 1.0)
  assert (out / "timing.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("args, needle", [
    (["--datasets="], "no datasets given"),  # once the three defaults, silently
    (["--noise="], "--noise takes finite levels >= 0, got none"),  # once empty tables, exit 0
    (["--noise=abc"], "--noise takes numbers, got abc"),
])
def test_bad_datasets_and_noise_are_one_line_before_any_search(tmp_path, args, needle):
  r = subprocess.run([sys.executable, str(REPO / "experiments" / "timing.py"),
                      "--random_model=tiny", f"--out_dir={tmp_path / 'out'}", *args],
                     capture_output=True, text=True, timeout=120, cwd=REPO)
  assert r.returncode == 2 and needle in r.stderr and r.stderr.count("\n") == 1, r.stderr
  assert not (tmp_path / "out").exists()
