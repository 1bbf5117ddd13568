"""The token vocabulary (paper App. F) and the 9-token constant codec.

Layout (45 ids; the paper says "40 tokens" but its own list -- 4 special, 2 structural,
10 variables, 15 operators, 14 digit/sign tokens -- adds up to 45, so we keep every listed
component; see BUILD_NOTES.md):

  0-3    PAD BOS EOS UNK
  4-5    C MASK          structural: C is a free constant leaf (a skeleton constant whose value
                         the constant fitter supplies, 1.0 by default); MASK is what the
                         refine-loss corruption leaves where it dropped a token, so later
                         positions stay aligned (pipeline.corrupt_tokens).
  6-15   x0 .. x9
  16-30  add sub mul div sin cos tan tanh exp log sqrt sq cube abs neg
  31-44  0..9 + - . e     digits and signs of a constant

A constant is 3 significant figures in scientific notation as 9 tokens:
  [sign, d1, '.', d2, d3, 'e', sign', e1, e2]     e.g. 3.14159 -> + 3 . 1 4 e + 0 0
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np

SPECIAL = ("PAD", "BOS", "EOS", "UNK")
STRUCTURAL = ("C", "MASK")
VARIABLES = tuple(f"x{i}" for i in range(10))
BINARY = ("add", "sub", "mul", "div")
UNARY = ("sin", "cos", "tan", "tanh", "exp", "log", "sqrt", "sq", "cube", "abs", "neg")
OPERATORS = BINARY + UNARY
DIGITS = tuple(str(d) for d in range(10))
SIGNS = ("+", "-")
NUMBER_PUNCT = (".", "e")

TOKENS: tuple[str, ...] = SPECIAL + STRUCTURAL + VARIABLES + OPERATORS + DIGITS + SIGNS + NUMBER_PUNCT
TOKEN_TO_ID: dict[str, int] = {t: i for i, t in enumerate(TOKENS)}
VOCAB_SIZE = len(TOKENS)

PAD, BOS, EOS, UNK = (TOKEN_TO_ID[t] for t in SPECIAL)
C_ID, MASK_ID = TOKEN_TO_ID["C"], TOKEN_TO_ID["MASK"]
PLUS_ID, MINUS_ID = TOKEN_TO_ID["+"], TOKEN_TO_ID["-"]
FIRST_VAR_ID = TOKEN_TO_ID["x0"]
FIRST_DIGIT_ID = TOKEN_TO_ID["0"]
MAX_VARIABLES = len(VARIABLES)
_VARIABLE_TOKENS = frozenset(VARIABLES)
CONST_LEN = 9

ARITY: dict[str, int] = {**{b: 2 for b in BINARY}, **{u: 1 for u in UNARY}}


def _np_ops() -> dict[str, Callable]:
  return {
      "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
      "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh, "exp": np.exp,
      "log": np.log, "sqrt": np.sqrt, "sq": np.square, "cube": lambda a: a * a * a,
      "abs": np.abs, "neg": np.negative,
  }


NUMPY_FN: dict[str, Callable] = _np_ops()


@dataclasses.dataclass(frozen=True)
class OperatorInfo:
  name: str
  arity: int
  latex: str  # only for documentation tables; SymPy renders real LaTeX


def is_variable(token: str) -> bool:
  return token in _VARIABLE_TOKENS  # a set lookup: the grammar and evaluators call this a lot


def variable_index(token: str) -> int:
  return int(token[1:])


def encode_constant(value: float) -> list[str]:
  """Float -> 9 tokens at 3 significant figures; |value| is clipped to [1e-99, 9.99e99].

  Raises ValueError for non-finite values (nothing non-finite has a token form).
  """
  if not math.isfinite(value):
    raise ValueError(f"cannot encode non-finite constant {value!r}")
  sign = "-" if value < 0 else "+"
  mag = abs(value)
  if mag == 0.0:
    return [sign, "0", ".", "0", "0", "e", "+", "0", "0"]
  mag = min(max(mag, 1e-99), 9.99e99)
  mantissa, exponent = f"{mag:.2e}".split("e")  # rounding can carry 9.995 -> 1.00e+01: fine
  exp = int(exponent)
  if exp > 99:  # 9.995e99 rounds up past the codec's range
    mantissa, exp = "9.99", 99
  d1, _, d2, d3 = mantissa
  esign = "-" if exp < 0 else "+"
  e1, e2 = f"{abs(exp):02d}"
  return [sign, d1, ".", d2, d3, "e", esign, e1, e2]


def decode_constant(tokens: list[str] | tuple[str, ...]) -> float:
  """9 tokens -> float. Raises ValueError when the tokens are not a well-formed constant."""
  if len(tokens) != CONST_LEN:
    raise ValueError(f"a constant is {CONST_LEN} tokens, got {len(tokens)}")
  sign, d1, dot, d2, d3, e, esign, e1, e2 = tokens
  if (sign not in SIGNS or esign not in SIGNS or dot != "." or e != "e"
      or not all(d in DIGITS for d in (d1, d2, d3, e1, e2))):
    raise ValueError(f"malformed constant tokens {' '.join(tokens)!r}")
  value = float(f"{d1}.{d2}{d3}e{esign}{e1}{e2}")
  return -value if sign == "-" else value


def round_constant(value: float) -> float:
  """The value a constant has after a round trip through its 9 tokens."""
  return decode_constant(encode_constant(value))
