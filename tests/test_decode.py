import jax
import jax.numpy as jnp
import numpy as np
import pytest

from lee_jax import decode
from lee_jax import expr as E
from lee_jax import vocab


def _fixed_logits_step(table):
  """A fake decoder: logits depend only on the position (table [L, V])."""
  table = jnp.asarray(table, jnp.float32)

  def step(token, position, cache):
    return jnp.broadcast_to(table[position], (token.shape[0], table.shape[1])), cache

  return step


def _run(step, batch=4, max_len=16, n_vars=2, greedy=True, constrain=True, seed=0, temperature=0.7):
  fn = jax.jit(lambda key: decode.sample(step, (), key, batch=batch, max_len=max_len,
                                         temperature=temperature,
                                         greedy=jnp.full((batch,), greedy), n_vars=n_vars,
                                         constrain=constrain))
  return np.asarray(fn(jax.random.key(seed)))


def test_greedy_follows_the_argmax_and_stops_at_eos():
  want = ["mul", "x0", "sin", "x1"]
  table = np.zeros((16, vocab.VOCAB_SIZE))
  for pos, tok in enumerate(want):  # logits at step p predict the token at p+1
    table[pos, vocab.TOKEN_TO_ID[tok]] = 10.0
  table[len(want), vocab.EOS] = 10.0
  ids = _run(_fixed_logits_step(table))
  assert ids.shape == (4, 16)
  for row in ids:
    assert E.ids_to_tokens(row) == want
    assert row[0] == vocab.BOS and row[len(want) + 1] == vocab.EOS
    assert np.all(row[len(want) + 2:] == vocab.PAD)


def test_constraint_replaces_illegal_tokens_by_the_best_legal_one():
  table = np.zeros((16, vocab.VOCAB_SIZE))
  table[:, vocab.TOKEN_TO_ID["x5"]] = 10.0  # a variable the data does not have
  table[:, vocab.TOKEN_TO_ID["x1"]] = 5.0
  ids = _run(_fixed_logits_step(table), n_vars=2)
  assert E.ids_to_tokens(ids[0]) == ["x1"]
  raw = _run(_fixed_logits_step(table), n_vars=2, constrain=False)
  assert E.ids_to_tokens(raw[0])[0] == "x5"


@pytest.mark.parametrize("seed", range(3))
def test_constrained_sampling_from_random_logits_always_parses(seed):
  rng = np.random.default_rng(seed)
  # Strongly favour binary operators: unconstrained, these never close within max_len.
  table = rng.normal(size=(24, vocab.VOCAB_SIZE)) * 3
  table[:, [vocab.TOKEN_TO_ID[b] for b in vocab.BINARY]] += 6
  ids = _run(_fixed_logits_step(table), batch=64, max_len=24, n_vars=3, greedy=False, seed=seed,
             temperature=1.0)
  for row in ids:
    node = E.parse_ids(row)  # raises if malformed
    assert max(E.variables_used(node), default=0) < 3
    assert len(E.to_ids(node)) <= 24


def test_legal_mask_inside_a_constant_allows_only_its_pattern():
  need = jnp.array([1]); done = jnp.array([False])
  # After the sign: a digit, then '.', ...
  first = decode.legal_mask(jnp.int32(2), need, jnp.array([8]), done, 2, 64)[0]
  assert set(np.flatnonzero(first)) == {vocab.TOKEN_TO_ID[d] for d in vocab.DIGITS}
  dot = decode.legal_mask(jnp.int32(3), need, jnp.array([7]), done, 2, 64)[0]
  assert set(np.flatnonzero(dot)) == {vocab.TOKEN_TO_ID["."]}
  finished = decode.legal_mask(jnp.int32(5), jnp.array([0]), jnp.array([0]), done, 2, 64)[0]
  assert set(np.flatnonzero(finished)) == {vocab.EOS}


def test_no_room_left_forces_leaves():
  # At the last position that can still hold a leaf, with one open slot: only leaves of
  # length 1 (variables) fit, no operator and no 9-token constant.
  mask = decode.legal_mask(jnp.int32(62), jnp.array([1]), jnp.array([0]), jnp.array([False]), 10, 64)[0]
  assert set(np.flatnonzero(mask)) == {vocab.TOKEN_TO_ID[f"x{i}"] for i in range(10)}
