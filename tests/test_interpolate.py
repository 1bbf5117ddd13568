"""experiments/interpolate.py: latent interpolation (Fig. 4) on a tiny untrained model."""

import csv
import pathlib
import sys

import jax
import numpy as np
import pytest
from absl.testing import flagsaver

from lee_jax import engine as engine_lib
from lee_jax import expr as E
from lee_jax import vocab

import helpers

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "experiments"))
import interpolate  # noqa: E402
import latent  # noqa: E402

A, B = E.from_prefix(["x0"]), E.from_prefix(["sq", "x0"])


@pytest.fixture(scope="module")
def eng():
  return engine_lib.Engine(helpers.tiny_model())


def test_alpha_zero_decodes_z_a_exactly_as_a_direct_decode(eng):
  z_a, z_b = interpolate.encode_pair(eng, A, B, np.random.default_rng(0))
  alphas = np.linspace(0, 1, 3)
  zs = interpolate.lerp(z_a, z_b, alphas)
  np.testing.assert_array_equal(zs[0], z_a)
  np.testing.assert_array_equal(zs[-1], z_b)
  np.testing.assert_allclose(zs[1], (z_a + z_b) / 2, rtol=1e-6)
  # 3 greedy + 3 sampled rows: one 8-row decode bucket for the whole test file.
  cands = interpolate.decode_candidates(eng, zs, 1, 0.7, 1, jax.random.key(0))
  assert cands.shape == (3, 2, helpers.TINY.max_len)
  direct = eng.decode(z_a[None], jax.random.key(1), 0.7, 1, 1)[0]
  np.testing.assert_array_equal(cands[0, 0], direct)
  # interpolate() with the same seed encodes the same z_A, so its alpha=0 row is that decode.
  rows = interpolate.interpolate(eng, A, B, steps=3, seed=0)
  assert [r["alpha"] for r in rows] == list(alphas)
  assert rows[0]["source"] == "greedy"
  assert rows[0]["prefix"] == " ".join(E.ids_to_tokens(direct))


def test_scores_and_pick_the_candidate_closest_to_the_blend():
  X = np.linspace(-3, 3, 50)[:, None]
  y_a, y_b = X[:, 0], X[:, 0] ** 2
  ids = lambda prefix: E.to_ids(E.from_prefix(prefix.split()), 16)
  row = interpolate.score_candidate(ids("x0"), X, y_a, y_b, 0.0)
  assert row["r2_vs_a"] == pytest.approx(1.0) and row["r2_vs_b"] < 0.5
  assert row["r2_vs_blend"] == pytest.approx(1.0)
  bad = np.array([vocab.BOS, vocab.TOKEN_TO_ID["add"], vocab.FIRST_VAR_ID, vocab.EOS] + [vocab.PAD] * 12)
  assert interpolate.score_candidate(bad, X, y_a, y_b, 0.5) is None
  cands = np.stack([ids("x0"), bad, ids("sq x0")])
  assert interpolate.pick(cands[:1], X, y_a, y_b, 1.0)["prefix"] == "x0"  # greedy only
  best = interpolate.pick(cands, X, y_a, y_b, 1.0)
  assert best["source"] == "sample 2" and best["infix"] == "x0**2"
  assert interpolate.pick(cands[1:2], X, y_a, y_b, 0.5)["source"] == "none valid"


def test_bad_expressions_are_one_line_errors():
  for text in ("x0 x1", "add x0", "foo", "sin " * 70 + "x0"):
    with pytest.raises(ValueError) as e:
      interpolate.parse(text, 64)
    assert "\n" not in str(e.value)
  assert latent.n_vars_of(A, E.from_prefix("mul x2 x0".split())) == 3


def test_main_writes_labelled_csv_and_figure(eng, tmp_path, monkeypatch, capsys):
  monkeypatch.setattr(latent, "load_engine", lambda checkpoint, random_model: eng)
  with flagsaver.flagsaver(random_model="tiny", out_dir=str(tmp_path), steps=4, samples=1):
    interpolate.main([])
  with (tmp_path / "interpolation.csv").open() as f:
    rows = list(csv.DictReader(f))
  assert tuple(rows[0]) == interpolate.COLUMNS and len(rows) == 4
  assert [float(r["alpha"]) for r in rows] == pytest.approx([0, 1 / 3, 2 / 3, 1])
  assert all(r["model"] == "untrained tiny model (random init)" for r in rows)
  assert (tmp_path / "fig4.png").stat().st_size > 10_000
  with flagsaver.flagsaver(random_model="tiny", out_dir=str(tmp_path), a="add x0"):
    with pytest.raises(SystemExit) as e:
      interpolate.main([])
  assert e.value.code == 2
  assert capsys.readouterr().err.startswith("error: cannot use expression 'add x0'")
