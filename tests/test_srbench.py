"""experiments/srbench.py: the sweep runner records every cell once and resumes."""

import json
import pathlib
import subprocess
import sys

import pytest

import helpers
from lee_jax import jsonl

REPO = pathlib.Path(__file__).resolve().parents[1]


def _run(out_dir, *args):
  return subprocess.run(
      [sys.executable, str(REPO / "experiments" / "srbench.py"), "--random_model=tiny",
       "--rounds=1", "--iters=2", f"--out_dir={out_dir}", *args],
      capture_output=True, text=True, timeout=600, cwd=REPO)


@pytest.mark.slow
def test_sweep_records_each_cell_once_and_resumes(tmp_path):
  args = ["--datasets=strogatz_lv1,strogatz_glider1,192_vineyard", "--noise=0,0.1", "--trials=1"]
  r = _run(tmp_path, *args, "--num_shards=2", "--shard_index=1")
  assert r.returncode == 0, r.stderr
  rows = [json.loads(l) for l in (tmp_path / "results.jsonl").read_text().splitlines()]
  # 2 strogatz x 2 noises + 1 black-box at noise 0 = 5 cells; shard 1 of 2 gets 2 of them.
  assert len(rows) == 2
  r = _run(tmp_path, *args, "--warmup")
  assert r.returncode == 0, r.stderr
  assert "2 cells already" in r.stdout and "3 to run" in r.stdout
  assert "warm-up (" in r.stdout  # run, and (below) not recorded as a cell
  rows = [json.loads(l) for l in (tmp_path / "results.jsonl").read_text().splitlines()]
  keys = [row["key"] for row in rows]
  assert len(keys) == len(set(keys)) == 5
  assert {row["group"] for row in rows} == {"strogatz", "blackbox"}
  assert all(row["found"] and row["r2_test"] is not None for row in rows)
  assert "strogatz" in r.stdout and "blackbox" in r.stdout  # the summary table
  # SRBench's symbolic solution: checked where the set has a law, counted in the summary
  assert all(("symbolic_solution" in row) == (row["group"] == "strogatz") for row in rows)
  assert all(isinstance(row["symbolic_solution"]["solution"], bool) for row in rows
             if row["group"] == "strogatz")
  table = r.stdout[r.stdout.rindex("group "):].splitlines()
  assert table[0].split()[-2:] == ["solved", "failures"]
  assert [l.split()[9] for l in table[1:]][0] == "-"  # blackbox (sorted first): no law
  assert all(l.split()[9].endswith("/2") for l in table[2:])  # strogatz: k of its 2 cells
  # A line cut short by a kill is ignored, and its cell runs again.
  with (tmp_path / "results.jsonl").open("a") as f:
    f.write('{"key": "strogatz_lv1|0|1", "trunc')
  r = _run(tmp_path, "--datasets=strogatz_lv1", "--noise=0", "--trials=2")
  assert r.returncode == 0, r.stderr
  assert "1 to run" in r.stdout
  # ... and its new record starts a line of its own (glued onto the torn one it was lost)
  keys = [row["key"] for row in jsonl.read(tmp_path / "results.jsonl")]
  assert keys.count("strogatz_lv1|0|1") == 1 and len(keys) == 6
  # a line that is no record is an error naming it, not a cell quietly dropped
  with (tmp_path / "results.jsonl").open("a") as f:
    f.write("garbage\n")
  r = _run(tmp_path, "--summary_only")
  assert r.returncode != 0 and "results.jsonl line 8: not JSON" in r.stderr
  assert "Traceback" not in r.stderr


@pytest.mark.parametrize("args,needle", [
    (["--group=strogatz,feynmann"], "unknown group feynmann"),
    (["--datasets=strogatz_lv1,strogatz_glidr1"], "did you mean strogatz_glider1"),
    (["--noise=0,abc"], "--noise takes numbers"),
    (["--summary_only"], "holds no results.jsonl"),
    # 0 trials once ran 0 cells and exited 0; a bad noise level was only an error cell, and
    # a NaN one a cell no later summary could sort.
    (["--trials=0"], "--trials=0: 0 is not a positive integer"),
    (["--trials=-1"], "--trials=-1"),
    (["--noise=-0.1"], "--noise must be a finite level >= 0, got -0.1"),
    (["--noise=0,nan"], "--noise must be a finite level >= 0, got nan"),
    (["--noise=inf"], "--noise must be a finite level >= 0, got inf"),
])
def test_bad_sweep_input_is_one_line_before_any_cell(tmp_path, args, needle):
  r = _run(tmp_path / "out", *args)
  assert r.returncode == 2 and r.stderr.count("\n") == 1 and needle in r.stderr, r.stderr
  assert not (tmp_path / "out").exists()  # nothing recorded, not even an error cell


@pytest.mark.parametrize("where", ["file", "under_file"])
def test_an_unwritable_out_dir_is_one_line_before_the_model_loads(tmp_path, where):
  f = tmp_path / "f"
  f.write_text("keep")
  r = _run(f if where == "file" else f / "sub", "--datasets=strogatz_glider1")
  assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
  assert r.stderr.startswith("error: --out_dir ") and f.read_text() == "keep"


def test_summary_leaves_out_a_line_with_no_noise_level(tmp_path):
  # An older run recorded a NaN noise level as null; the summary once crashed on it (and on
  # every later run into the folder).
  cell = {"group": "strogatz", "noise": 0.1, "found": True, "r2_test": 0.5, "complexity": 5,
          "wall_time_s": 2.0}
  lines = [json.dumps(cell), json.dumps({**cell, "noise": None}), '{"group": "strogatz", "noise": NaN}',
           "[1, 2]"]
  (tmp_path / "results.jsonl").write_text("\n".join(lines) + "\n")
  r = _run(tmp_path, "--summary_only")
  assert r.returncode == 0, r.stderr
  assert r.stderr.count("\n") == 1 and "3 line(s) without a group and a finite noise" in r.stderr
  (row,) = [l for l in r.stdout.splitlines() if l.startswith("strogatz")]
  assert row.split()[:4] == ["strogatz", "0.1", "1", "1"]


@pytest.mark.slow
def test_pool_size_is_recorded_and_a_folder_never_mixes_settings(tmp_path):
  args = ["--datasets=strogatz_glider1", "--noise=0.1"]
  r = _run(tmp_path, *args, "--pool_size=8")
  assert r.returncode == 0, r.stderr
  (row,) = [json.loads(l) for l in (tmp_path / "results.jsonl").read_text().splitlines()]
  assert row["search"]["pool_size"] == 8 and row["settings"]["changed"] == {
      "pool_size": 8, "rounds": 1, "iterations": 2}
  assert row["settings"]["model"] == "untrained tiny" and row["found"]
  # The same setting spelt another way resumes; another mode is a one-line error.
  r = _run(tmp_path, *args, "--pool_size=8", "--workers=1")
  assert r.returncode == 0, r.stderr
  assert "1 cells already" in r.stdout and "0 to run" in r.stdout
  r = _run(tmp_path, *args, "--pool_size=8", "--mode=iterative", "--trials=2")
  assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
  assert "other settings" in r.stderr and "'mode': ('combined', 'iterative')" in r.stderr
  # Nor does another pool size, seed or model; the preset's own P=16 is no override.
  sys.path.insert(0, str(REPO / "experiments"))
  import sweep
  base = dict(out_dir=tmp_path, names=("strogatz_glider1",), noises=(0.1,), trials=1)
  fast = (("rounds", 1), ("iterations", 2))
  mine = sweep.Sweep(**base, overrides=fast + (("pool_size", 8),))
  sweep.check_settings(mine.results, mine.settings("untrained tiny"))
  for other, model in [(sweep.Sweep(**base, overrides=fast + (("pool_size", 32),)), "untrained tiny"),
                       (sweep.Sweep(**base, overrides=fast + (("pool_size", 8),), seed=1), "untrained tiny"),
                       (mine, "ckpt")]:
    with pytest.raises(sweep.MixedSettingsError):
      sweep.check_settings(mine.results, other.settings(model))
  assert sweep.Sweep(**base, overrides=(("pool_size", 16),)).changed() == {}


def test_a_models_search_defaults_are_part_of_a_folders_setting(tmp_path):
  sys.path.insert(0, str(REPO / "experiments"))
  import sweep
  from lee_jax import weights
  base = dict(out_dir=tmp_path, names=("strogatz_glider1",), noises=(0.0,), trials=1)
  noisy = sweep.Sweep(**base, model_defaults=(("latent_noise", 3.0),))
  assert noisy.search_config().latent_noise == 3.0 and noisy.changed() == {"latent_noise": 3.0}
  # The user's override still wins, and then the folder's setting is the preset's.
  assert sweep.Sweep(**base, model_defaults=(("latent_noise", 3.0),),
                     overrides=(("latent_noise", 0.0),)).changed() == {}
  w = weights.export(helpers.tiny_model(), tmp_path / "w", "tiny",
                     extra={"search_defaults": {"latent_noise": 3}})
  assert sweep.search_defaults(str(w)) == (("latent_noise", 3.0),)
  assert sweep.search_defaults(str(w), random_model="tiny") == ()


def test_peers_run_through_the_same_runner(tmp_path):
  def peer(method, *args):
    return subprocess.run(
        [sys.executable, str(REPO / "experiments" / "srbench.py"), f"--method={method}",
         "--datasets=strogatz_glider1", f"--out_dir={tmp_path / method}", *args],
        capture_output=True, text=True, timeout=600, cwd=REPO)

  for method in ("gplearn", "operon"):
    r = peer(method, "--peer_generations=3")  # 3 generations: ~2-4 s, R2 0.98-0.99 here
    assert r.returncode == 0, r.stderr
    (row,) = [json.loads(l) for l in (tmp_path / method / "results.jsonl").read_text().splitlines()]
    assert row["method"] == method and row["found"] and "error" not in row
    assert row["r2_test"] > 0.5 and row["complexity"] >= 1 and "x" in row["expression"]
    assert row["settings"] == {"method": method, "seed": 0, "generations": 3}
  # the package's default budget is another setting: not in this folder
  r = peer("operon")
  assert r.returncode == 2 and "other settings" in r.stderr and r.stderr.count("\n") == 1
  r = peer("lee", "--peer_generations=3")
  assert r.returncode == 2 and "--peer_generations sets a peer's budget" in r.stderr


def test_cells_of_another_search_config_are_named():
  # the setting check compares only the overrides to today's presets: `fast` went from 50 to
  # 200 iterations and old folders resumed without a word
  sys.path.insert(0, str(REPO / "experiments"))
  import dataclasses
  import sweep
  from lee_jax import configs, trial

  cfg = configs.get_search_config("fast")
  line = lambda c: json.loads(json.dumps(trial.json_safe(dataclasses.asdict(c))))
  rows = [{"key": "a|0|0", "search": line(cfg)}, {"key": "b|0|0", "search": line(cfg)},
          {"key": "c|0|0"}]  # a peer's cell: no search config
  assert sweep.other_search(rows, cfg) is None
  assert sweep.other_search(rows, dataclasses.replace(cfg, workers=3)) is None  # speed only
  rows[1]["search"]["iterations"] = 50
  assert sweep.other_search(rows, cfg) == (["b|0|0"], ["iterations"])


def test_a_peer_is_scored_by_its_own_predict():
  # gplearn's printed program rounds constants to 3 decimals and divides where its own
  # protected division gives 1: this recorded cell read -0.073 for a model that scores 0.314.
  pytest.importorskip("gplearn")
  sys.path.insert(0, str(REPO / "experiments"))
  import sweep
  from lee_jax import datasets

  ds = datasets.load_dataset("strogatz_bacres1")
  p = datasets.split(ds.X, ds.y, seed=1000, noise=0.0)
  row = sweep.run_peer("gplearn", p, 1000)
  assert row["r2_test"] == pytest.approx(0.314, abs=0.002)


def test_aggregate_puts_our_runs_beside_the_paper_rows(tmp_path):
  run = tmp_path / "run"
  run.mkdir()
  rows = [{"group": "strogatz", "noise": 0.0, "r2_test": 0.9, "complexity": 10},
          {"group": "strogatz", "noise": 0.0, "r2_test": None, "complexity": None},  # failed
          {"group": "blackbox", "noise": 0.0, "r2_test": 0.5, "complexity": 7}]
  (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"cut')
  r = subprocess.run([sys.executable, str(REPO / "experiments" / "aggregate.py"),
                      f"--runs=mine={run}", f"--out_dir={tmp_path / 't'}"],
                     capture_output=True, text=True, timeout=120, cwd=REPO)
  assert r.returncode == 0, r.stderr
  md = (tmp_path / "t" / "table1.md").read_text()
  assert "| LEE [paper] | 0.854 / 8.1 |" in md and "| Operon [paper] | 0.988 / 59.0 |" in md
  mine = next(l for l in md.splitlines() if l.startswith("| mine"))
  assert "0.450 / 10.0 (2 cells)" in mine and "0.500 / 7.0 (1 cells)" in mine


def test_the_shipped_model_is_named_by_its_checksum(tmp_path, monkeypatch):
  """A folder's cells must not mix two versions of the shipped model."""
  sys.path.insert(0, str(REPO / "experiments"))
  import sweep
  from lee_jax import checkpoints

  monkeypatch.setattr(checkpoints, "shipped_dir", lambda: tmp_path)
  assert sweep.model_source() == "shipped"  # none shipped: nothing to tell apart
  (tmp_path / "meta.json").write_text(json.dumps(
      {"model": "tiny", "files": {"params-00.npz": "ab12cd34ef" + "0" * 54}}))
  assert sweep.model_source() == "shipped tiny ab12cd34"
  assert sweep.model_source("runs/small") == "runs/small"
  assert sweep.model_source(random_model="tiny") == "untrained tiny"
  # a checkpoint by what it holds: by its path alone, a model retrained in place resumed the
  # old one's sweep
  export = tmp_path / "run" / "export"
  export.mkdir(parents=True)
  for phase in (1, 3):
    (export / "meta.json").write_text(json.dumps({"model": "small", "phase": phase, "step": 9}))
    assert sweep.model_source(str(tmp_path / "run")) == f"{tmp_path / 'run'} (small, phase {phase}, step 9)"
  assert sweep.model_source(str(tmp_path)) == f"{tmp_path} (tiny, ab12cd34)"  # a weights folder


def test_cells_and_records_count_each_cell_once(tmp_path):
  # --noise=0,0 ran and recorded every cell twice, and the summary and the ablation tables
  # counted both; a line that is not a cell failed a resumed sweep with a KeyError
  sys.path.insert(0, str(REPO / "experiments"))
  import sweep

  assert sweep.cells(["strogatz_lv1", "strogatz_lv1"], [0.0, 0.0, 0.1], 1) == [
      ("strogatz_lv1", 0.0, 0), ("strogatz_lv1", 0.1, 0)]
  path = tmp_path / "results.jsonl"
  row = {"key": "strogatz_lv1|0|0", "trial": 0, "seed": 0, "method": "lee", "r2_test": 0.2}
  path.write_text(json.dumps(row) + "\n" + json.dumps(dict(row, r2_test=0.6)) + "\n")
  assert [r["r2_test"] for r in sweep.read_results(path)] == [0.6]
  path.write_text(path.read_text() + '{"note": "mine"}\n')
  with pytest.raises(sweep.MixedSettingsError, match="line 3: not a cell record"):
    sweep.read_results(path)
  assert len(sweep.read_results(path, strict=False)) == 2  # the summary leaves it out


def test_stats_mean_std_median_and_failures(tmp_path):
  sys.path.insert(0, str(REPO / "experiments"))
  import sweep
  # 2 datasets x 2 trials at one noise level; one cell failed (no finite test R2).
  r2 = {("a", 0): 1.0, ("b", 0): -9.0, ("a", 1): 0.5, ("b", 1): None}
  rows = [{"key": sweep.cell_key(f"strogatz_{n}", 0.1, t), "trial": t, "r2_test": v,
           "complexity": 4 + t} for (n, t), v in r2.items()]
  (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
  sw = sweep.Sweep(tmp_path, ("strogatz_a", "strogatz_b"), (0.1,), trials=2)
  st = sweep.stats(sw, 0.1, drop_failed=False)  # the failed cell counts as 0
  assert (st["cells"], st["expected"], st["failed"]) == (4, 4, 1)
  assert st["r2"] == (-4.0 + 0.25) / 2 and st["r2_std"] == 2.125
  assert st["r2_median"] == 0.25  # of 1, -9, 0.5, 0
  assert st["r2_clipped"] == 1.5 / 4  # of 1, 0, 0.5, 0
  assert st["complexity"] == 4.5
  st = sweep.stats(sw, 0.1, drop_failed=True)  # Table 5: the failed cell is dropped
  assert st["r2"] == (-4.0 + 0.5) / 2 and st["r2_median"] == 0.5
