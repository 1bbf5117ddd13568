import numpy as np
import pytest
import sympy
from hypothesis import assume, given, settings, strategies as st

from lee_jax import evaluate, grammar, vocab
from lee_jax import expr as E

leaf = st.one_of(
    st.integers(0, 9).map(E.var),
    # Moderate constants: with 1e99 - 1e99 SymPy cancels exactly where floats cannot.
    st.floats(-100, 100).filter(lambda v: v == 0 or abs(v) > 1e-3)
    .map(lambda v: E.const(vocab.round_constant(v))),
    st.just(E.Node("C")),
)
trees = st.recursive(
    leaf,
    lambda kids: st.one_of(
        st.tuples(st.sampled_from(vocab.UNARY), kids).map(lambda a: E.op(a[0], a[1])),
        st.tuples(st.sampled_from(vocab.BINARY), kids, kids).map(lambda a: E.op(*a))),
    max_leaves=12)


def test_tokens_round_trip_on_10000_grammar_samples():
  rng = np.random.default_rng(0)
  for _ in range(10_000):
    tree, _ = grammar.sample(rng)
    ids = E.to_ids(tree, 64)
    assert E.parse_ids(ids) == tree
    assert E.from_prefix(E.to_prefix(tree)) == tree


@given(trees)
def test_tokens_round_trip_on_hypothesis_trees(tree):
  assert E.from_prefix(E.to_prefix(tree)) == tree
  assert E.parse_ids(E.to_ids(tree)) == tree


@settings(deadline=None, max_examples=100)
@given(trees)
def test_sympy_round_trip_preserves_the_function(tree):
  s = E.to_sympy(tree)
  assume(not s.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo))  # e.g. x0/0 folds to zoo
  back = E.from_sympy(s)
  assert _numerically_equal(back, tree)
  # A second trip is a fixed point of the SymPy form.
  assert E.to_sympy(E.from_sympy(E.to_sympy(back))) == E.to_sympy(back)


def _numerically_equal(a, b):
  X = np.random.default_rng(1).uniform(-3, 3, (64, 10))
  ya, yb = evaluate.evaluate_numpy(a, X), evaluate.evaluate_numpy(b, X)
  both = np.isfinite(ya) & np.isfinite(yb)
  return np.allclose(ya[both], yb[both], rtol=1e-6, atol=1e-9)


def test_from_sympy_maps_powers_and_names():
  t = E.from_sympy(sympy.sympify("a**2 + sqrt(b)**3 / a - exp(-b)"), ["a", "b"])
  X = np.array([[1.5, 2.0], [3.0, 0.5]])
  want = X[:, 0]**2 + X[:, 1]**1.5 / X[:, 0] - np.exp(-X[:, 1])
  np.testing.assert_allclose(evaluate.evaluate_numpy(t, X), want, rtol=1e-12)
  assert {n.name for n in E.walk(t)} >= {"sq", "sqrt", "cube", "div", "exp"}


@pytest.mark.parametrize("text", ["asin(x0)", "x0**0.3", "cosh(x0)", "x0 + q"])
def test_unsupported_sympy_is_a_clear_error(text):
  with pytest.raises(E.UnsupportedExpression, match=r"asin|power|cosh|unknown variable"):
    E.from_sympy(sympy.sympify(text))


@pytest.mark.parametrize("ids", [
    [vocab.BOS, vocab.TOKEN_TO_ID["add"], vocab.TOKEN_TO_ID["x0"], vocab.EOS],  # short
    [vocab.BOS, vocab.TOKEN_TO_ID["x0"], vocab.TOKEN_TO_ID["x1"], vocab.EOS],  # extra
    [vocab.BOS, vocab.TOKEN_TO_ID["+"], vocab.TOKEN_TO_ID["3"], vocab.EOS],  # cut constant
    [vocab.BOS, vocab.TOKEN_TO_ID["7"], vocab.EOS],  # bare digit
    [vocab.BOS, vocab.MASK_ID, vocab.EOS],
    [vocab.BOS, 99, vocab.EOS],  # outside the vocabulary
    [vocab.BOS, vocab.EOS],  # empty
])
def test_invalid_sequences_are_reported(ids):
  with pytest.raises(E.InvalidExpression):
    E.parse_ids(ids)


@settings(max_examples=300)
@given(st.lists(st.integers(-5, 60), max_size=70))
def test_any_id_sequence_parses_or_is_invalid(ids):
  try:
    tree = E.parse_ids(ids)
  except E.InvalidExpression:
    return
  assert isinstance(tree, E.Node)


def test_constants_and_skeletons():
  t = E.from_prefix("add mul C x0 + 2 . 5 0 e + 0 0".split())
  assert E.constants(t) == [1.0, 2.5]
  t2 = E.with_constants(t, [3.0, -1.0])
  assert E.constants(t2) == [3.0, -1.0]
  with pytest.raises(ValueError):
    E.with_constants(t, [1.0, 2.0, 3.0])
  # subtrees without constants are shared, the rest rebuilt
  t3 = E.from_prefix("add sin x0 mul C x1".split())
  t4 = E.with_constants(t3, [2.0])
  assert t4.children[0] is t3.children[0] and E.constants(t4) == [2.0] and E.constants(t3) == [1.0]
  assert str(t4) == str(E.from_prefix("add sin x0 mul + 2 . 0 0 e + 0 0 x1".split()))


def test_numpy_function_is_quiet_and_nan_outside_domain():
  f = E.numpy_function(E.parse_formula("sqrt(a) + log(b)", ["a", "b"]), ["a", "b"])
  y = f(np.array([[4.0, 1.0], [-1.0, 1.0], [1.0, 0.0]]))
  assert y[0] == 2.0 and np.isnan(y[1]) and np.isnan(y[2])


def test_formula_names_print_back_as_the_columns():
  names = ["a+b", "2", "x", "Alcohol-related", "a_b", "speed"]
  got = E.formula_names(names)
  assert got == ["a_b_0", "x_2", "x", "Alcohol_related", "a_b", "speed"]
  assert all(n.isidentifier() for n in got) and len(set(got)) == len(got)
  # a formula over them parses back to the same columns (a hyphen would read as minus)
  node = E.from_prefix(["add", "x0", "mul", "x1", "x3"])
  text = str(E.to_sympy(node, got))
  assert sympy.sympify(text).free_symbols == {sympy.Symbol(got[i]) for i in (0, 1, 3)}
  assert E.formula_names(["x0", "x1"]) == ["x0", "x1"]
  # a made name never takes a column's own: "a b" beside "a_b" and "a_b_0" printed as a_b_0,
  # and a b + 2 a_b_0 read 3 a_b_0
  for names in (["a b", "a_b", "a_b_0"], ["1", "x_1", "x_1_0"], ["", "x0", "x0_0"]):
    got = E.formula_names(names)
    assert len(set(got)) == 3 and got[1:] == names[1:] and got[0].isidentifier()
  # a keyword column prints as a name a formula can be read back with (sympify failed on it)
  assert E.formula_names(["lambda", "x"]) == ["lambda_", "x"]
  assert str(E.parse_formula("2*lambda_", ["lambda_"])) == "2*lambda_"


@pytest.mark.parametrize("name", ["E", "I", "pi", "gamma", "beta", "S", "N", "Q", "LC", "sin", "id"])
def test_a_column_that_sympify_reads_as_something_else_prints_with_an_underscore(name):
  # `E*(I + 0.1)` from columns E and I sympified to a number; with sin or N, a TypeError.
  got = E.formula_names([name, "x"])
  assert got == [f"{name}_", "x"]
  text = str(E.to_sympy(E.from_prefix(["mul", "x0", "add", "x1", "x0"]), got))
  assert sympy.sympify(text).free_symbols == {sympy.Symbol(f"{name}_"), sympy.Symbol("x")}
  assert E.formula_names(["e", "theta", "C"]) == ["e", "theta", "C"]  # symbols as they are


def test_a_records_tree_takes_its_constants_only_where_they_are_the_prefixs():
  node = E.op("mul", E.const(1.0003), E.var(0))
  tokens = E.to_prefix(node)  # 1.00 to 3 figures
  assert E.from_record(tokens, [1.0003]) == node
  assert E.from_record(tokens, [3.0]) is None  # another answer's constants
  assert E.from_record(tokens, None) is None and E.from_record(tokens, [1.0, 2.0]) is None
  assert E.from_record(E.to_prefix(E.var(0)), []) == E.var(0)  # no constants to take
