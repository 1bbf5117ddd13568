import numpy as np
import pytest

from lee_jax import evaluate, pipeline, vocab
from lee_jax import expr as E

CFG = pipeline.DataConfig()


def test_example_shapes_and_masks():
  ex = pipeline.examples(CFG, seed=0)[3]
  assert ex["tokens"].shape == ex["corrupted"].shape == (CFG.max_len,)
  assert ex["x"].shape == (CFG.n_points, vocab.MAX_VARIABLES)
  assert ex["query_x"].shape == (CFG.n_query, vocab.MAX_VARIABLES)
  k = int(ex["n_vars"])
  assert np.all(ex["x"][:, k:] == 0) and np.all(np.abs(ex["x"][:, :k]) <= pipeline.X_SCALE)
  assert CFG.min_points <= ex["point_mask"].sum() <= CFG.n_points
  tree = E.parse_ids(ex["tokens"])
  np.testing.assert_allclose(ex["y"], evaluate.evaluate_numpy(tree, ex["x"]).astype(np.float32),
                             rtol=1e-4, equal_nan=True)


def test_targets_are_of_the_points_the_model_reads():
  # y was the law at x's float64 draw, then x was stored in float32: off by over 1e-3 on
  # 0.8% of points in sin(exp(.)) trees.
  for i in range(200):
    ex = pipeline.examples(CFG, seed=1)[i]
    tree = E.parse_ids(ex["tokens"])
    for x, y in ((ex["x"], ex["y"]), (ex["query_x"], ex["query_y"])):
      with np.errstate(all="ignore"):
        want = evaluate.evaluate_numpy(tree, x.astype(np.float64)).astype(np.float32)
      np.testing.assert_array_equal(y, want)


def test_grammar_follows_a_shorter_max_len():
  cfg = pipeline.DataConfig(max_len=24)
  assert cfg.grammar.max_len == 24
  for i in range(40):  # the grammar's own 64 let 25-token trees through to E.to_ids
    assert pipeline.examples(cfg, seed=2)[i]["tokens"].shape == (24,)


def test_examples_are_reproducible_from_seed_and_index():
  a, b = pipeline.examples(CFG, 11), pipeline.examples(CFG, 11)
  for i in (0, 7, 10**9):
    for key in a[i]:
      np.testing.assert_array_equal(a[i][key], b[i][key])
  assert not np.array_equal(a[0]["tokens"], pipeline.examples(CFG, 12)[0]["tokens"])


def test_batches_fixed_shape_and_equal_to_examples():
  it = iter(pipeline.batches(CFG, seed=3, batch_size=8))
  first, second = next(it), next(it)
  assert first["tokens"].shape == (8, CFG.max_len)
  assert first["y"].shape == (8, CFG.n_points)
  ex = pipeline.examples(CFG, 3)
  np.testing.assert_array_equal(second["tokens"][2], ex[10]["tokens"])


def test_iterator_state_resumes_exactly():
  it = iter(pipeline.batches(CFG, seed=4, batch_size=4))
  next(it)
  state = it.get_state()
  want = next(it)
  it2 = iter(pipeline.batches(CFG, seed=4, batch_size=4))
  it2.set_state(state)
  np.testing.assert_array_equal(next(it2)["tokens"], want["tokens"])


@pytest.mark.parametrize("buffer", [1, 3])
def test_workers_give_the_same_batches(buffer):
  plain = iter(pipeline.batches(CFG, seed=5, batch_size=4))
  multi = iter(pipeline.batches(CFG, seed=5, batch_size=4, workers=2, buffer=buffer))
  try:
    for _ in range(5):  # past the first round of both workers' buffers
      got = next(multi)
      np.testing.assert_array_equal(next(plain)["tokens"], got["tokens"])
      # Plain arrays, not views of the worker's shared memory: jax keeps those alive on the
      # CPU without a copy, and the ones held at exit were never freed (a warning each run).
      assert all(type(v) is np.ndarray for v in got.values())
  finally:
    multi.close()


def test_host_shards_are_disjoint_slices():
  a = iter(pipeline.batches(CFG, seed=6, batch_size=2, shard=(0, 2)))
  b = iter(pipeline.batches(CFG, seed=6, batch_size=2, shard=(1, 2)))
  ex = pipeline.examples(CFG, 6)
  np.testing.assert_array_equal(next(a)["tokens"][1], ex[2]["tokens"])
  np.testing.assert_array_equal(next(b)["tokens"][0], ex[1]["tokens"])


@pytest.mark.parametrize("split", pipeline.SPLITS)
def test_split_streams_only_hold_their_split(split):
  cfg = pipeline.DataConfig(split=split)
  ds = pipeline.examples(cfg, 0)
  for i in range(20):
    assert pipeline.split_of(E.to_prefix(E.parse_ids(ds[i]["tokens"]))) == split


def test_split_fractions():
  rng = np.random.default_rng(0)
  counts = {s: 0 for s in pipeline.SPLITS}
  for _ in range(20000):
    counts[pipeline.split_of([str(t) for t in rng.integers(0, 45, 8)])] += 1
  assert abs(counts["train"] / 20000 - 0.8) < 0.015
  assert abs(counts["test"] / 20000 - 0.1) < 0.01


def test_corruption_rates_and_layout():
  rng = np.random.default_rng(0)
  ids = np.array([vocab.BOS] + [vocab.TOKEN_TO_ID["x0"]] * 60 + [vocab.EOS, 0, 0], np.int32)
  dropped = replaced = 0
  for _ in range(300):
    out = pipeline.corrupt_tokens(ids, rng, 0.15, 0.10)
    assert out[0] == vocab.BOS and out[61] == vocab.EOS and np.all(out[62:] == vocab.PAD)
    body = out[1:61]
    dropped += np.sum(body == vocab.MASK_ID)
    replaced += np.sum((body != vocab.MASK_ID) & (body != ids[1]))
  n = 300 * 60
  assert abs(dropped / n - 0.15) < 0.01
  # a replacement can redraw x0 itself (1 of 39 tokens)
  assert abs(replaced / n - 0.10 * 38 / 39) < 0.01
