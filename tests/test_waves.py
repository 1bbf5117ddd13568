import math

import numpy as np

from lee_jax import evaluate
from lee_jax import expr as E
from lee_jax import score
from lee_jax import waves


def _best_r2(nodes, X, y):
  # The seeds' frequencies are as close as the scan's finest grid; the search refits them.
  return max(score.r2(y, evaluate.evaluate_numpy(n, X), np.ones(len(y))) for n in nodes)


def test_the_scan_finds_a_frequency_and_the_phase_costs_nothing():
  u = np.random.default_rng(0).uniform(-5, 5, 200)
  y = 2.5 * np.sin(2.3 * u + 0.7) - 1.0
  c, r2 = waves.scan(u[:, None], y, np.ones(200))
  assert abs(c[0] - 2.3) < 1e-3 and r2[0] > 1 - 1e-6
  # A frequency off the grid by a step and a half explains little: the refinement found it.
  assert waves._shares(u[:, None], np.array([[2.3 + 1.5 * 2 * math.pi / 80 / np.ptp(u)]]),
                       (y - y.mean()) / math.sqrt(200), np.full(200, 1 / 200),
                       float(np.var(y))).max() < r2[0]
  # A constant target explains nothing, and noise too little to make seeds.
  assert waves.scan(u[:, None], np.ones(200), np.ones(200))[1][0] == 0
  noise = np.random.default_rng(5).normal(size=200)
  assert waves.scan(u[:, None], noise, np.ones(200))[1][0] < waves.MIN_R2


def test_small_tables_need_a_wave_that_noise_would_not_give():
  X = np.random.default_rng(6).uniform(-5, 5, (40, 5))
  noise = np.random.default_rng(7).normal(size=40)
  args, U = waves.arguments(X)
  c, r2 = waves.scan(U, noise, np.ones(40))
  floor = waves.significant(40, len(args) * len(waves.grid()))
  assert r2.max() > waves.MIN_R2  # the best of thousands of pairs explains some noise ...
  assert r2.max() < floor and waves.wave_fits(X, noise) == []  # ... and makes no seeds
  y = np.sin(2 * X[:, 0]) + 0.1 * noise  # a wave, with noise, on the same 40 rows
  assert _best_r2(waves.wave_fits(X, y), X, y) > 0.98


def test_seeds_write_the_law_and_its_sin_and_cos_forms():
  u = np.random.default_rng(1).uniform(-5, 5, 300)
  y = 2.5 * np.sin(2.3 * u)
  nodes = waves.wave_fits(u[:, None], y)
  assert _best_r2(nodes, u[:, None], y) > 1 - 1e-6
  # Six per argument: phase, sin and cos forms, each with and without the intercept.
  names = {str(E.to_prefix(n)) for n in nodes}
  assert len(nodes) == 6 and len(names) == 6
  sin_only = [n for n in nodes if n.name == "mul" and n.children[1].name == "sin"
              and n.children[1].children[0].name == "mul"]  # not sin(c u + phi)
  assert len(sin_only) == 1
  y_hat = evaluate.evaluate_numpy(sin_only[0], u[:, None])
  assert score.r2(y, y_hat, np.ones(300)) > 1 - 1e-6


def test_a_frequency_of_a_ratio_and_a_power_law_times_a_wave():
  X = np.random.default_rng(2).uniform(1, 2, (300, 3))
  # Feynman III.8.54, sin^2(2 pi E t / h) = 1/2 - 1/2 cos(4 pi E t / h)
  y = np.sin(2 * math.pi * X[:, 0] * X[:, 1] / X[:, 2]) ** 2
  assert _best_r2(waves.wave_fits(X, y), X, y) > 1 - 1e-6
  # No variable alone carries it: the variables' own waves explain far less.
  single = waves.wave_fits(X[:, :1], y)
  assert not single or _best_r2(single, X[:, :1], y) < 0.9
  # x2 cos(3 x0 x1): the amplitude is a quotient law M = x2, the wave that of y / M.
  y = X[:, 2] * np.cos(3 * X[:, 0] * X[:, 1])
  nodes = waves.wave_fits(X, y)
  assert _best_r2(nodes, X, y) > 1 - 1e-6


def test_nothing_for_unusable_data():
  X = np.random.default_rng(3).uniform(-1, 1, (50, 2))
  assert waves.wave_fits(X, np.full(50, np.nan)) == []
  assert waves.wave_fits(np.ones((50, 2)), X[:, 0]) == []  # constant columns
  assert waves.wave_fits(X[:5], X[:5, 0]) == []  # too few rows
  # Rows of weight 0 are not looked at: a wave on the others is still found.
  y = np.sin(3 * X[:, 0])
  w = np.ones(50)
  w[:10] = 0
  y[:10] = 1e6
  assert _best_r2(waves.wave_fits(X, y, w), X[10:], y[10:]) > 1 - 1e-6
