"""experiments/quality.py: held-out losses, reconstruction and one-shot numbers."""

import json
import pathlib
import sys

import numpy as np
import pytest
from absl.testing import flagsaver

from lee_jax import cli
from lee_jax import engine as engine_lib
from lee_jax import expr as E

import helpers

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "experiments"))
import latent  # noqa: E402
import quality  # noqa: E402


@pytest.fixture(scope="module")
def eng():
  return engine_lib.Engine(helpers.tiny_model())


def tree(prefix: str) -> E.Node:
  return E.from_prefix(prefix.split())


def test_skeleton_ignores_constant_values_only():
  a = E.op("mul", E.const(2.5), E.var(0))
  b = E.op("mul", E.const(-3.0), E.var(0))
  assert quality.skeleton(a) == quality.skeleton(b) == ("mul", "C", "x0")
  assert quality.skeleton(a) != quality.skeleton(E.op("mul", E.const(2.5), E.var(1)))
  assert latent.n_vars_of(tree("add x0 x3")) == 4 and latent.n_vars_of(E.const(1.0)) == 1


def test_summarize_clips_the_mean_but_not_the_median():
  s = quality.summarize([1.0, 0.995, 0.5, -np.inf, np.nan])  # nan: an overflowed R2
  assert s["n"] == 5 and s["median_r2"] == 0.5
  assert s["share_r2_ge_0.99"] == pytest.approx(0.4)
  assert s["mean_r2_clipped"] == pytest.approx((1.0 + 0.995 + 0.5) / 5)
  assert np.isnan(quality.summarize([])["median_r2"])
  assert quality.summarize([1.0, -np.inf, np.nan])["median_r2"] == -np.inf


def test_markdown_prints_a_minus_inf_median_not_a_blank():
  s = quality.summarize([1.0, -np.inf, -np.inf])
  empty = quality.summarize([])
  rec = {**quality.summarize([1.0]), "exact_match": 1.0, "skeleton_match": 1.0}
  md = quality.to_markdown({"model": "m", "losses": {"expr": 0.5}, "loss_batches": 1, "n": 3,
                            "skipped_nonfinite_truth": 0, "reconstruction": rec,
                            "oneshot": s, "oneshot_fitted": empty})
  assert "| f(PAD, D), greedy | -- | -- | -inf | 0.333 | 0.333 |" in md
  assert "| f(PAD, D), greedy + L-BFGS-B | -- | -- | -- |" in md


def test_fitting_recovers_constants_from_the_scatter():
  rng = np.random.default_rng(0)
  truth = E.op("mul", E.const(3.0), E.op("sin", E.var(0)))
  scatter = latent.scatter_of(truth, 1, 200, 10, rng)
  guess = E.op("mul", E.const(1.0), E.op("sin", E.var(0)))
  X = latent.uniform_points(rng, 100, 1)
  assert quality.r2_on(quality.values(truth, X), guess, X) < 0.9
  assert quality.r2_on(quality.values(truth, X), quality.fitted(guess, scatter, 1, 100), X) > 0.999
  assert quality.fitted(None, scatter, 1, 100) is None


def test_an_oracle_decoder_scores_perfect_reconstruction(eng, monkeypatch):
  """The bookkeeping: decoding the true tokens must read as exact match and R2 = 1."""
  heldout = latent.sample_heldout(24, helpers.TINY.max_len, seed=3)
  monkeypatch.setattr(latent, "sample_heldout", lambda n, max_len, seed: heldout)
  calls = []

  def oracle(eng, z, n_vars):
    calls.append(z.shape)
    return heldout[1] if len(calls) == 1 else np.zeros_like(heldout[1])  # one-shot: invalid

  monkeypatch.setattr(quality, "greedy_decode", oracle)
  r = quality.measure(eng, 24, seed=3, fit_iters=10)
  rec = r["reconstruction"]
  assert rec["exact_match"] == rec["skeleton_match"] == 1.0
  assert rec["n"] == 24 - r["skipped_nonfinite_truth"] > 0
  assert rec["median_r2"] == 1.0 and rec["share_r2_ge_0.99"] == 1.0
  k = [latent.n_vars_of(t) for t in heldout[0]]
  assert r["exact_match_by_vars"] == {v: 1.0 for v in sorted(set(k))}
  assert r["invalid_decodes"] == 24 and r["oneshot"]["mean_r2_clipped"] == 0.0
  assert calls == [(24, helpers.TINY.d_z)] * 2


def test_main_writes_json_and_markdown(eng, tmp_path, monkeypatch, capsys):
  monkeypatch.setattr(latent, "load_engine", lambda checkpoint, random_model: eng)
  with flagsaver.flagsaver(random_model="tiny", out_dir=str(tmp_path), n=16, loss_batches=1):
    quality.main([])
  r = json.loads((tmp_path / "quality.json").read_text())
  assert {"expr", "eval", "kl", "align", "refine", "expr_acc", "refine_acc"} <= set(r["losses"])
  assert all(np.isfinite(v) for v in r["losses"].values())
  assert 0 <= r["reconstruction"]["exact_match"] <= 1 and r["n"] == 16
  md = (tmp_path / "quality.md").read_text()
  assert "untrained tiny model" in md.splitlines()[0] and md.count("\n| ") == 4
  assert "Exact match by number of variables: " in md
  with flagsaver.flagsaver(random_model="tiny", out_dir=str(tmp_path), n=0):
    with pytest.raises(SystemExit) as e:
      quality.main([])
  assert e.value.code == 2 and capsys.readouterr().err.startswith("error: need --n")


def test_outputs_are_checked_before_the_model_loads(tmp_path, monkeypatch):
  """The default --out_dir holds the committed numbers: they are replaced only with --overwrite."""
  def no_model(checkpoint, random_model):
    raise AssertionError("the model loaded")

  monkeypatch.setattr(latent, "load_engine", no_model)
  (tmp_path / "quality.md").write_text("committed")
  with flagsaver.flagsaver(random_model="tiny", out_dir=str(tmp_path), n=16, loss_batches=1):
    with pytest.raises(cli.PathError, match="quality.md exists; pass --overwrite to replace it"):
      quality.main([])
  assert (tmp_path / "quality.md").read_text() == "committed"
  with flagsaver.flagsaver(random_model="tiny", out_dir=str(tmp_path), n=16, overwrite=True):
    with pytest.raises(AssertionError, match="the model loaded"):  # past the check
      quality.main([])
  (tmp_path / "f").write_text("")
  with flagsaver.flagsaver(random_model="tiny", out_dir=str(tmp_path / "f" / "sub"), n=16):
    with pytest.raises(cli.PathError, match="--out_dir .*cannot create it"):
      quality.main([])
