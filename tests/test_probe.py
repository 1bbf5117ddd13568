"""experiments/probe.py: linear probes of expression properties (Table 6) on a tiny model."""

import csv
import pathlib
import sys

import numpy as np
import pytest
from absl.testing import flagsaver

from lee_jax import engine as engine_lib
from lee_jax import expr as E
from lee_jax import pipeline

import helpers

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "experiments"))
import latent  # noqa: E402
import probe  # noqa: E402


@pytest.fixture(scope="module")
def eng():
  return engine_lib.Engine(helpers.tiny_model())


@pytest.mark.parametrize("prefix, expected", [
    ("x0", dict(has_trig=0, has_log_exp=0, has_sq_cube=0, has_division=0, is_polynomial=1,
                high_dim=0, num_variables=1)),
    ("div sq x0 tanh x1", dict(has_trig=1, has_log_exp=0, has_sq_cube=1, has_division=1,
                               is_polynomial=0, high_dim=0, num_variables=2)),
    ("add mul x4 cube x3 sub x0 div x1 x2", dict(has_trig=0, has_log_exp=0, has_sq_cube=1,
                                                 has_division=1, is_polynomial=1, high_dim=1,
                                                 num_variables=5)),
    ("mul exp x0 add abs x1 x1", dict(has_trig=0, has_log_exp=1, has_sq_cube=0, has_division=0,
                                      is_polynomial=0, high_dim=0, num_variables=2)),
    ("sqrt neg x0", dict(has_trig=0, has_log_exp=0, has_sq_cube=0, has_division=0,
                         is_polynomial=0, high_dim=0, num_variables=1)),
])
def test_property_labels_of_hand_written_trees(prefix, expected):
  assert probe.properties(E.from_prefix(prefix.split())) == expected
  assert list(expected) == list(probe.PROPERTIES)


def test_majority_baseline():
  assert probe.majority_baseline(np.array([0, 0, 1, 2, 2, 2]), np.array([2, 1, 2, 0])) == 0.5
  assert probe.majority_baseline(np.array([1, 0, 1, 0]), np.array([0, 0, 1])) == pytest.approx(2 / 3)


def test_probe_finds_a_linear_direction_and_handles_degenerate_labels():
  rng = np.random.default_rng(0)
  z = rng.normal(size=(400, 8))
  r = probe.probe(z, (z[:, 3] > 0.5).astype(int), 0.25, seed=0)
  assert r["n_train"] == 300 and r["n_test"] == 100 and r["classes"] == 2
  assert r["test_acc"] > 0.9 and r["test_auc"] > 0.95 and r["majority_acc"] < 0.8
  assert r["true_pct"] == pytest.approx(100 * np.mean(z[:, 3] > 0.5))
  one = probe.probe(z, np.zeros(400, int), 0.25, seed=0)  # one class: majority rule, no AUC
  assert one["test_acc"] == one["majority_acc"] == 1.0 and np.isnan(one["test_auc"])
  multi = probe.probe(z, np.digitize(z[:, 0], [-1, 0, 1]) + 1, 0.25, seed=0)
  assert multi["classes"] == 4 and np.isnan(multi["test_auc"]) and multi["test_acc"] > 0.8


def test_held_out_latents_and_probe_rows(eng):
  trees, tokens, scatters = latent.sample_heldout(200, helpers.TINY.max_len, seed=0)
  assert all(pipeline.split_of(E.to_prefix(t)) == "test" for t in trees)
  assert tokens.shape == (200, helpers.TINY.max_len) and scatters.x.shape == (200, 200, 10)
  before = eng.traces["encode"]
  z = latent.encode_all(eng, tokens, scatters, batch=64)
  assert eng.traces["encode"] - before == 1  # the last 8 rows are filled up to 64
  assert z.shape == (200, helpers.TINY.d_z) and np.all(np.isfinite(z))
  np.testing.assert_allclose(z[150], eng.encode(tokens[150:151], engine_lib.Scatter(
      scatters.x[150], scatters.y[150], scatters.mask[150]))[0], atol=1e-5)
  rows = probe.run(z, trees, 0.2, seed=0)
  assert [r["property"] for r in rows] == list(probe.PROPERTIES)
  for r in rows:
    assert r["n_train"] == 160 and r["n_test"] == 40
    assert 0 <= r["test_acc"] <= 1 and 0 <= r["majority_acc"] <= 1
  labels = [probe.properties(t)["num_variables"] for t in trees]
  assert rows[-1]["classes"] == len(set(labels)) and set(labels) <= set(range(1, 11))


def test_main_writes_labelled_tables_and_rejects_bad_models(eng, tmp_path, monkeypatch, capsys):
  real_load = latent.load_engine
  monkeypatch.setattr(latent, "load_engine", lambda checkpoint, random_model: eng)
  with flagsaver.flagsaver(random_model="tiny", out_dir=str(tmp_path), n=40, batch=64):
    probe.main([])
  with (tmp_path / "probe.csv").open() as f:
    rows = list(csv.DictReader(f))
  assert tuple(rows[0]) == probe.COLUMNS and [r["property"] for r in rows] == list(probe.PROPERTIES)
  assert all(0 <= float(r["test_acc"]) <= 1 for r in rows)
  md = (tmp_path / "probe.md").read_text()
  assert "untrained tiny model" in md.splitlines()[0] and md.count("\n| ") == 8
  monkeypatch.setattr(latent, "load_engine", real_load)
  for flags, message in ((dict(random_model="huge"), "error: unknown model config 'huge'"),
                         (dict(checkpoint=str(tmp_path / "nope")), "error: "),
                         (dict(checkpoint="x", random_model="tiny"), "error: pass --checkpoint")):
    with flagsaver.flagsaver(out_dir=str(tmp_path), **flags):
      with pytest.raises(SystemExit) as e:
        probe.main([])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.startswith(message) and err.count("\n") == 1, err
