import math

import pytest
from hypothesis import given, strategies as st

from lee_jax import vocab


def test_layout_has_every_listed_component():
  assert len(vocab.SPECIAL) == 4 and len(vocab.STRUCTURAL) == 2
  assert len(vocab.VARIABLES) == 10 and len(vocab.OPERATORS) == 15
  assert len(vocab.DIGITS + vocab.SIGNS + vocab.NUMBER_PUNCT) == 14
  assert vocab.VOCAB_SIZE == 45 == len(set(vocab.TOKENS))
  assert vocab.PAD == 0 and vocab.TOKENS[vocab.EOS] == "EOS"


@pytest.mark.parametrize("value,tokens", [
    (3.14159, "+ 3 . 1 4 e + 0 0"),
    (-0.0123456, "- 1 . 2 3 e - 0 2"),
    (0.0, "+ 0 . 0 0 e + 0 0"),
    (9.996, "+ 1 . 0 0 e + 0 1"),  # rounding carries into the exponent
    (6.02e23, "+ 6 . 0 2 e + 2 3"),
])
def test_encode_constant(value, tokens):
  assert vocab.encode_constant(value) == tokens.split()


@given(st.floats(min_value=-1e99, max_value=1e99, allow_nan=False))
def test_constant_round_trip_keeps_three_significant_figures(v):
  back = vocab.round_constant(v)
  if abs(v) >= 1e-99:
    assert math.isclose(back, v, rel_tol=5e-3)
  assert vocab.round_constant(back) == back  # idempotent


def test_constant_errors():
  with pytest.raises(ValueError):
    vocab.encode_constant(float("inf"))
  with pytest.raises(ValueError):
    vocab.decode_constant("+ 3 . 1 4 e + 0".split())
  with pytest.raises(ValueError):
    vocab.decode_constant("+ 3 1 1 4 e + 0 0".split())
