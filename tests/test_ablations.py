"""experiments/ablations.py: a real (untrained, tiny-budget) run of every table, resumed."""

import csv
import json
import math
import pathlib
import subprocess
import sys

import pytest

import helpers

REPO = pathlib.Path(__file__).resolve().parents[1]
# One Strogatz dataset, 1 trial, 1 round of 2 iterations: every setting's code path, in seconds.
SMALL = ["--datasets=strogatz_glider1", "--trials=1", "--rounds=1", "--iters=2", "--n_init=4"]
FOLDERS = {"iterative", "gradient", "combined", "oneshot_n_init10", "cmaes", "combined_pool_size8",
           "combined_pool_size32", "combined_novae"}


def _run(out_dir, *args):
  return subprocess.run(
      [sys.executable, str(REPO / "experiments" / "ablations.py"), f"--out_dir={out_dir}", *args],
      capture_output=True, text=True, timeout=600, cwd=REPO)


def _table(out_dir, name):
  with (out_dir / f"table{name}.csv").open() as f:
    return list(csv.DictReader(f))


@pytest.mark.slow
def test_every_table_runs_end_to_end_and_resumes(tmp_path):
  args = ["--table=2,3,10,vae", "--random_model=tiny", *SMALL]
  r = _run(tmp_path, *args, "--dry_run")
  assert r.returncode == 0, r.stderr
  assert not tmp_path.exists() or not any(tmp_path.iterdir())  # a dry run runs nothing
  for folder in FOLDERS:
    assert f"{folder}: " in r.stdout and f"--out_dir={tmp_path / folder}" in r.stdout
  assert "iterative: iterative refinement; noise 0,0.1; 2 cells" in r.stdout
  # n_init 10: 4 + 2 iterations x 3 children
  assert ("--mode=oneshot --composite_seeds=False --factor_seeds=False --final_refit=False "
          "--iters=2 --long_terms=0 --n_init=10") in r.stdout
  assert ("--mode=combined --composite_seeds=False --factor_seeds=False --final_refit=False "
          "--iters=2 --long_terms=0 --n_init=4 --parsimony=False --poly_terms=0 --pool_size=8") in r.stdout
  assert r.stdout.count("--poly_terms=0") == len(FOLDERS)  # the paper's search, no seeds

  r = _run(tmp_path, *args)
  assert r.returncode == 0, r.stderr
  assert {p.name for p in tmp_path.iterdir() if p.is_dir()} == FOLDERS
  lines = {f: (tmp_path / f / "results.jsonl").read_text() for f in FOLDERS}
  # Table 2 needs combined at eps 0 and 0.1; Tables 3, 10 and vae reuse its eps=0.1 cell.
  assert lines["combined"].count("\n") == 2 and lines["iterative"].count("\n") == 2
  rows = {s["settings"]["mode"] + str(s["search"]["pool_size"]) for f in FOLDERS
          for s in map(json.loads, lines[f].splitlines())}
  assert {"combined8", "combined32", "oneshot16", "cmaes16"} <= rows
  assert {json.loads(l)["search"]["poly_terms"] for f in FOLDERS for l in lines[f].splitlines()} == {0}
  assert {json.loads(l)["search"]["sep_terms"] for f in FOLDERS for l in lines[f].splitlines()} == {0}
  assert {json.loads(l)["search"]["power_seeds"] for f in FOLDERS
          for l in lines[f].splitlines()} == {False}
  assert {json.loads(l)["search"]["factor_seeds"] for f in FOLDERS
          for l in lines[f].splitlines()} == {False}
  assert {json.loads(l)["search"]["composite_seeds"] for f in FOLDERS
          for l in lines[f].splitlines()} == {False}
  assert {json.loads(l)["search"]["transform_seeds"] for f in FOLDERS
          for l in lines[f].splitlines()} == {False}
  assert {json.loads(l)["search"]["wave_seeds"] for f in FOLDERS
          for l in lines[f].splitlines()} == {False}
  assert {json.loads(l)["search"]["long_terms"] for f in FOLDERS
          for l in lines[f].splitlines()} == {0}
  assert {json.loads(l)["search"]["parsimony"] for f in FOLDERS
          for l in lines[f].splitlines()} == {False}
  expected = {"2": ({"iterative", "gradient", "combined"}, {"0.0", "0.1"}),
              "3": ({"oneshot", "cmaes", "combined"}, {"0.1"}),
              "10": ({"pool8", "pool16", "pool32"}, {"0.1"}),
              "vae": ({"novae", "vae"}, {"0.1"})}
  for name, (settings, noises) in expected.items():
    md = (tmp_path / f"table{name}.md").read_text()
    assert "UNTRAINED MODEL" in md
    ours = [row for row in _table(tmp_path, name) if row["source"] == "ours"]
    paper = [row for row in _table(tmp_path, name) if row["source"] == "paper"]
    # One row per setting and noise level, finite numbers, every cell present.
    assert sorted((row["setting"], row["noise"]) for row in ours) == sorted(
        (s, n) for s in settings for n in noises)
    for row in ours:
      assert math.isfinite(float(row["r2"])) and math.isfinite(float(row["complexity"]))
      assert float(row["r2_median"]) == float(row["r2"])  # one cell: its own median
      assert row["cells"] == "1" and "untrained tiny" in row["model"]
    assert {row["setting"] for row in paper} == settings and all(row["r2"] for row in paper)
    assert md.count("[paper] |") == len(settings)
    assert sum(l.startswith("| ") and "[paper]" not in l for l in md.splitlines()) == len(settings) + 1
  assert "| iterative refinement [paper] | 0.872 ± 0.012 | - | - | 8.0 | 0.850 ± 0.024 | - | - | 9.5 |" in (
      tmp_path / "table2.md").read_text()
  t3 = {row["setting"]: row for row in _table(tmp_path, "3") if row["source"] == "ours"}
  assert float(t3["oneshot"]["decodes"]) == 10  # the matched budget, made
  assert float(t3["cmaes"]["decodes"]) >= 10 - 4  # n_init + whole generations past the rest

  # A second run finds every cell done: nothing runs, no model loads, the same tables.
  r = _run(tmp_path, *args)
  assert r.returncode == 0, r.stderr
  assert r.stdout.count("cells of this shard done") == len(FOLDERS) and "to run" not in r.stdout
  assert all((tmp_path / f / "results.jsonl").read_text() == lines[f] for f in FOLDERS)


def test_every_shared_search_flag_reaches_every_setting(tmp_path):
  # --overlap, --poly_terms and --poly_floor were once accepted here and then ignored.
  r = _run(tmp_path, "--table=2,10", "--random_model=tiny", *SMALL, "--overlap", "--poly_terms=2",
           "--poly_floor", "--fitter=jax", "--power_seeds", "--factor_seeds", "--composite_seeds",
           "--transform_seeds", "--wave_seeds", "--long_terms=4", "--parsimony", "--final_refit", "--dry_run")
  assert r.returncode == 0, r.stderr
  commands = [l for l in r.stdout.splitlines() if "srbench.py" in l]
  assert len(commands) == 5  # iterative, gradient, combined, P = 8, P = 32
  for flag in ("--overlap=True", "--poly_terms=2", "--poly_floor=True", "--fitter=jax", "--rounds=1",
               "--power_seeds=True", "--factor_seeds=True", "--composite_seeds=True",
               "--transform_seeds=True", "--wave_seeds=True", "--long_terms=4",
               "--parsimony=True", "--final_refit=True"):
    assert all(flag in c for c in commands), flag


def test_vae_table_needs_a_real_no_vae_checkpoint(tmp_path):
  r = _run(tmp_path, "--table=vae", *SMALL)
  assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--checkpoint_novae" in r.stderr
  assert not tmp_path.exists() or not any(tmp_path.iterdir())
  # A VAE model given as the no-VAE one is refused before any cell runs.
  ckpt = helpers.export_tiny(tmp_path / "tiny")
  r = _run(tmp_path / "out", "--table=vae", f"--checkpoint={ckpt}", f"--checkpoint_novae={ckpt}", *SMALL)
  assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
  assert "has use_vae=True" in r.stderr
  assert not list((tmp_path / "out").glob("*/results.jsonl"))



def test_zero_trials_is_one_line_not_an_empty_plan(tmp_path):
  r = _run(tmp_path, "--table=2", "--random_model=tiny", "--datasets=strogatz_glider1", "--trials=0",
           "--dry_run")
  assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
  assert "--trials=0: 0 is not a positive integer" in r.stderr and "to run" not in r.stdout


def test_an_unwritable_out_dir_is_one_line(tmp_path):
  f = tmp_path / "f"
  f.write_text("keep")
  for out in (f, f / "sub"):  # a file, and a folder that cannot be made under one
    r = _run(out, "--table=2", "--random_model=tiny", *SMALL, "--aggregate_only")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"error: --out_dir {out}") and f.read_text() == "keep"


def test_aggregate_only_refuses_a_folder_of_another_setting(tmp_path):
  # it wrote another model's cells under this run's label (running refused the same folder)
  cell = {"key": "strogatz_glider1|0|0", "dataset": "strogatz_glider1", "group": "strogatz",
          "method": "lee", "noise": 0.0, "trial": 0, "seed": 0, "r2_test": 0.99, "complexity": 5,
          "settings": {"method": "lee", "model": "runs/some_other_model", "seed": 0}}
  (tmp_path / "iterative").mkdir()
  (tmp_path / "iterative" / "results.jsonl").write_text(json.dumps(cell) + "\n")
  r = _run(tmp_path, "--table=2", "--random_model=tiny", *SMALL, "--aggregate_only")
  assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
  assert "holds cells run with other settings" in r.stderr
  assert not list(tmp_path.glob("table2.*"))
