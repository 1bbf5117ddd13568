"""Tests for lee_jax.progress: the search's progress lines and its time-limit notice."""

import dataclasses
import io
import types

import helpers
from lee_jax import progress

NOTICE = "reached: answering from what the search has found"


class _Tty(io.StringIO):
  def isatty(self):
    return True


def test_the_time_limit_is_said_once_at_close_in_its_own_line():
  # (once nothing said that max_time had stopped the search: the last line read iter 150/200)
  out = _Tty()
  bar = progress.SearchProgress(2, stream=out, max_time=60)
  bar(0, 0, 200, 0.5)
  bar(0, 150, 200, 0.9)  # stopped here: the redrawn line is still open
  bar.close(timed_out=True)
  bar.close(timed_out=True)
  text = out.getvalue()
  assert text.count(NOTICE) == 1 and "\n\n" not in text
  assert text.endswith("\ntime limit (60 s) reached: answering from what the search has found\n")
  quiet = io.StringIO()
  bar = progress.SearchProgress(1, stream=quiet)
  bar(0, 200, 200, 0.9)
  bar.close()
  assert NOTICE not in quiet.getvalue()


def test_worker_rounds_say_it_with_the_round_that_stopped():
  out = io.StringIO()
  bar = progress.SearchProgress(3, stream=out, max_time=5)
  winner = types.SimpleNamespace(r2_val=0.99, complexity=5)
  bar.round_done(types.SimpleNamespace(round_index=0, winner=winner, timed_out=False))
  assert NOTICE not in out.getvalue()
  bar.round_done(types.SimpleNamespace(round_index=1, winner=None, timed_out=True))
  bar.round_done(types.SimpleNamespace(round_index=2, winner=None, timed_out=True))
  bar.close(timed_out=True)
  lines = out.getvalue().splitlines()
  assert lines[1].startswith("round 2/3 done: no valid expression")
  assert lines[2] == "time limit (5 s) reached: answering from what the search has found"
  assert out.getvalue().count(NOTICE) == 1


def test_a_real_trial_stopped_by_its_time_limit_says_so():
  from lee_jax import engine as engine_lib
  from lee_jax import search
  from lee_jax import trial
  X, y = helpers.toy_data(120)
  data = search.SearchData(X[:90], y[:90], X[90:], y[90:])
  cfg = dataclasses.replace(helpers.SMALL_SEARCH, rounds=2, workers=1)
  eng = engine_lib.Engine(helpers.tiny_model())
  for max_time, said in ((1e-6, True), (None, False)):
    out = io.StringIO()
    bar = progress.SearchProgress(cfg.rounds, stream=out)  # as LEERegressor(verbose=True)
    res = trial.run_trial(eng, data, cfg, "iterative", seed=0, progress=bar, max_time=max_time)
    bar.close(res.timed_out)
    assert res.timed_out is said
    assert (NOTICE in out.getvalue()) is said, out.getvalue()
