import numpy as np

from lee_jax import composite as C
from lee_jax import expr as E
from lee_jax import power_law
from lee_jax import score
from lee_jax import trial


def _x(n=300, k=4, lo=1.0, hi=5.0, seed=0):
  return np.random.default_rng(seed).uniform(lo, hi, (n, k))


def _exact(nodes, X, y):
  """The seeds that fit y exactly."""
  return [n for n in nodes if score.r2(y, trial.predict(n, X)) > 1 - 1e-9]


def test_monomials_count_and_skip_unusable_columns():
  X = _x(k=4)
  monos = C.monomials(X)
  # 2, 3 and 4 of 4 columns, exponents +-1 with the first +1: 6*2 + 4*4 + 1*8
  assert len(monos) == 36 and all(list(m.values())[0] == 1 for m in monos)
  assert len({tuple(sorted(m.items())) for m in monos}) == 36
  X[5, 1] = 0.0  # a zero: no 1/x1, so no x1 at all
  assert all(1 not in m for m in C.monomials(X))
  assert C.monomials(X[:, :1]) == []
  # Past the limit, whole sizes are left out: 10 columns, 2 and 3 variables only.
  wide = C.monomials(_x(k=10), limit=2000)
  assert {len(m) for m in wide} == {2, 3} and len(wide) == 45 * 2 + 120 * 4


def test_the_monomial_node_and_substitution():
  X = _x(k=3)
  node = C.node({0: 1, 1: 1, 2: -1})
  np.testing.assert_allclose(trial.predict(node, X), X[:, 0] * X[:, 1] / X[:, 2], rtol=1e-6)
  np.testing.assert_allclose(power_law.law_values(X, {0: 1, 2: -1}), X[:, 0] / X[:, 2])
  wrapped = C.substitute(E.op("mul", E.var(0), E.op("cos", E.var(3))), {3: node})
  np.testing.assert_allclose(trial.predict(wrapped, X),
                             X[:, 0] * np.cos(X[:, 0] * X[:, 1] / X[:, 2]), rtol=1e-5)


def test_ranking_puts_the_law_s_argument_first():
  X = _x(k=5, seed=1)
  w = np.ones(len(X))
  ranking = C.Ranking(X, w, C.monomials(X))
  y = np.exp(-X[:, 1] * X[:, 2] / (X[:, 3] * X[:, 4]))
  assert ranking.rank(y, keep=4, products=0)[0] == {1: 1, 2: 1, 3: -1, 4: -1}
  assert ranking.rank(np.ones(len(y))) == []  # nothing to explain
  # B v in Ef + B v sin(theta): far down alone, first among the products with a factor.
  y = X[:, 1] + X[:, 2] * X[:, 3] * np.sin(X[:, 4])
  alone = ranking.rank(y, keep=4, products=0)
  both = ranking.rank(y, keep=4, products=2)
  assert {2: 1, 3: 1} not in alone and both[:4] == alone and both[4] == {2: 1, 3: 1}


def test_feynman_laws_with_a_function_of_a_product_are_seeded_exactly():
  X = _x(k=3, seed=2)
  y = 2 * X[:, 0] * (1 - np.cos(X[:, 1] * X[:, 2]))  # III.15.12, 2 U (1 - cos(k d))
  assert _exact(C.composite_fits(X, y), X, y)
  X = _x(k=6, seed=3)
  y = X[:, 0] * np.exp(-X[:, 1] * X[:, 2] * X[:, 3] / (X[:, 4] * X[:, 5]))  # I.40.1
  exact = _exact(C.composite_fits(X, y), X, y)
  assert exact and all(E.variables_used(n) == set(range(6)) for n in exact)
  X = _x(k=5, seed=4)
  y = X[:, 0] * (X[:, 1] + X[:, 2] * X[:, 3] * np.sin(X[:, 4]))  # I.12.11, q (Ef + B v sin t)
  assert _exact(C.composite_fits(X, y), X, y)


def test_a_ten_column_table_gets_its_seeds():
  # The widened table's monomials are x10 and up there, which E.variables_used does not
  # read: every seed was dropped (SRBench's select_k_best=10 tables among them).
  rng = np.random.default_rng(1)
  X = rng.uniform(1, 3, (200, 10))
  y = 2.0 * np.exp(-X[:, 0] * X[:, 1] / X[:, 2])
  seeds = C.composite_fits(X, y)
  assert seeds and _exact(seeds, X, y)
  assert all(max(E.variables_used(s)) < 10 for s in seeds)  # the monomials substituted


def test_every_seed_uses_a_composite_argument():
  X = _x(k=3, seed=5)
  y = np.cos(X[:, 0]) + X[:, 1] * np.tanh(X[:, 1] / X[:, 2])
  seeds = C.composite_fits(X, y)
  assert seeds and _exact(seeds, X, y)
  for s in seeds:  # a composite column is a product or ratio: some op joins two variables
    assert any(n.name in ("mul", "div") and all(c.name[:1] == "x" for c in n.children)
               for n in E.walk(s)), str(s)


def test_weights_and_degenerate_input():
  X = _x(k=3, seed=6)
  y = 2 * X[:, 0] * (1 - np.cos(X[:, 1] * X[:, 2]))
  junk = np.arange(len(y)) % 10 == 0
  w = np.where(junk, 0.0, 1.0)  # rows of weight 0 count for nothing
  assert _exact(C.composite_fits(X, np.where(junk, 1e3, y), w), X[~junk], y[~junk])
  assert C.composite_fits(X, np.where(junk, np.nan, y)) == []  # not finite
  assert C.composite_fits(X[:3], y[:3]) == []  # too few rows
  assert C.composite_fits(X[:, :1], y) == []  # one column: no product
