import numpy as np
import pytest

from lee_jax import evaluate
from lee_jax import expr as E
from lee_jax import power_sums
from lee_jax import program


def _rows(n=300, k=3, seed=0, low=1.0, high=5.0):
  return np.random.default_rng(seed).uniform(low, high, (n, k))


def _exact(nodes, X, y):
  """The seeds that give y on every row to 1e-9 (relative)."""
  out = []
  for n in nodes:
    with np.errstate(all="ignore"):
      v = evaluate.evaluate_numpy(n, X)
    if np.isfinite(v).all() and np.max(np.abs(v - y) / np.abs(y)) < 1e-9:
      out.append(n)
  return out


def _root_holds(node):
  """The variables under the tree's first square root."""
  root = next(n for n in E.walk(node) if n.name == "sqrt")
  return E.variables_used(root)


def test_two_power_laws_of_y_itself():
  # II.36.38's shape: x0 x1 / x2 + 0.5 x0 / (x2 x3^2)
  X = _rows(k=4)
  y = X[:, 0] * X[:, 1] / X[:, 2] + 0.5 * X[:, 0] / (X[:, 2] * X[:, 3] ** 2)
  found = _exact(power_sums.power_sum_fits(X, y), X, y)
  assert found and all(n.name == "add" for n in found)


def test_the_relativistic_mass_under_its_reciprocal_root():
  # I.10.7: m0 / sqrt(1 - v^2/c^2) is 1/y^2 = m0^-2 - m0^-2 v^2 c^-2
  rng = np.random.default_rng(1)
  m0, v, c = rng.uniform(1, 5, 300), rng.uniform(1, 2, 300), rng.uniform(3, 10, 300)
  X = np.stack([m0, v, c], axis=1)
  y = m0 / np.sqrt(1 - v ** 2 / c ** 2)
  found = _exact(power_sums.power_sum_fits(X, y), X, y)
  assert found and _root_holds(found[0]) == {1, 2}  # m0 / sqrt(S): m0 out of the root
  assert any(_root_holds(n) == {0, 1, 2} for n in found)  # and 1 / sqrt(S), SymPy's pick
  # and negated where y is negative
  neg = _exact(power_sums.power_sum_fits(X, -y), X, -y)
  assert neg and any(n.name == "neg" for n in E.walk(neg[0]))


def test_a_root_of_two_power_laws():
  # Friedmann's sqrt(8 pi G rho / 3 - alpha c^2 / d^2) with alpha c^2 / d^2 the smaller
  X = _rows(k=4)
  y = np.sqrt(8.3776 * X[:, 0] * X[:, 1] - X[:, 2] * X[:, 3] ** 2 / 25.0)
  found = _exact(power_sums.power_sum_fits(X, y), X, y)
  assert found and found[0].name == "sqrt"


def test_a_target_that_changes_sign_is_fitted_as_itself_only():
  X = _rows(k=2)
  y = X[:, 0] ** 2 - 3.0 * X[:, 1]  # both signs: no root or reciprocal of it
  seeds = power_sums.power_sum_fits(X, y)
  assert seeds and all(n.name == "add" for n in seeds)
  assert _exact(seeds, X, y)


def test_y_itself_is_fitted_with_its_own_weights_once(monkeypatch):
  # the delta method's weights for y itself are y's: a second fit would repeat the first
  X = _rows(k=2)
  y = X[:, 0] ** 2 - 3.0 * X[:, 1] + 1.0  # both signs, and no two power laws fit it exactly
  fit, calls = power_sums._fit, []
  monkeypatch.setattr(power_sums, "_fit", lambda *a: calls.append(1) or fit(*a))
  assert power_sums.power_sum_fits(X, y)
  assert len(calls) == 1


def test_a_negative_column_keeps_its_sign_in_odd_powers():
  # the fit's logs see |x0|; x1^2 / x0 + 2 x1 x2 with x0 < 0 came back with -1 x1^2 / x0
  X = _rows(k=3)
  X[:, 0] = -X[:, 0]
  y = X[:, 1] ** 2 / X[:, 0] + 2.0 * X[:, 1] * X[:, 2]
  assert _exact(power_sums.power_sum_fits(X, y), X, y)
  y = 1.0 / np.sqrt(X[:, 1] ** 2 - X[:, 0] * X[:, 2])  # under a root of its reciprocal
  assert _exact(power_sums.power_sum_fits(X, y), X, y)


def test_half_exponents():
  X = _rows(k=3)
  y = np.sqrt(X[:, 0]) * X[:, 1] + 3.0 * X[:, 2] ** 1.5 / X[:, 0]
  found = _exact(power_sums.power_sum_fits(X, y), X, y)
  assert found and any(n.name == "sqrt" for f in found for n in E.walk(f))


def test_exponents_of_a_squared_target_may_reach_twice_the_laws():
  # II.6.15a's shape: x2 sqrt(x0^2 + x1^2) / x3^5 is exact only as a root of
  # x0^2 x2^2 x3^-10 + x1^2 x2^2 x3^-10, whose x3^-10 is over power_law.MAX_EXPONENT
  X = _rows(k=4)
  y = X[:, 2] * np.sqrt(X[:, 0] ** 2 + X[:, 1] ** 2) / X[:, 3] ** 5
  found = _exact(power_sums.power_sum_fits(X, y), X, y)
  assert found and any(n.name == "sqrt" for n in E.walk(found[0]))


def test_shared_powers_leave_the_root_and_keep_it_in_float32():
  # II.6.15a at r in [2e3, 1e4]: in the root, r^-10 falls below float32's normals (XLA
  # flushes it to 0); out of it, r^-5 does not
  X = _rows(k=4)
  X[:, 3] *= 2000.0
  y = X[:, 2] * np.sqrt(X[:, 0] ** 2 + X[:, 1] ** 2) / X[:, 3] ** 5
  found = _exact(power_sums.power_sum_fits(X, y), X, y)
  assert found and _root_holds(found[0]) == {0, 1}
  y32 = program.evaluate(found[:1], X)[0]
  assert np.max(np.abs(y32 - y) / y) < 1e-5
  # a negative column leaves the root only at an even half: sqrt(x^4 S) = x^2 sqrt(S), but
  # sqrt(x^2 S) is |x| sqrt(S)
  X = _rows(k=3)
  X[:, 0] = -X[:, 0]
  root = np.sqrt(X[:, 1] ** 2 + 2.0 * X[:, 2])
  for y, holds in ((X[:, 0] ** 2 * root, {1, 2}), (np.abs(X[:, 0]) * root, {0, 1, 2})):
    found = _exact(power_sums.power_sum_fits(X, y), X, y)
    assert found and _root_holds(found[0]) == holds


def test_a_sum_too_long_for_the_model_writes_its_shared_powers_once():
  # II.6.15a itself: p z sqrt(x^2 + y^2) / (eps r^5) is 66 tokens as a root of two products
  X = _rows(k=6)
  y = X[:, 1] * X[:, 5] * np.sqrt(X[:, 3] ** 2 + X[:, 4] ** 2) / (X[:, 0] * X[:, 2] ** 5)
  found = _exact(power_sums.power_sum_fits(X, y), X, y)
  assert found and all(len(E.to_prefix(n)) <= 62 for n in found)  # 64 less BOS, EOS
  # the shorter sums keep their two products (II.36.38's, above, and this one's)
  X = _rows(k=3)
  y = X[:, 0] ** 2 * X[:, 1] + 3.0 * X[:, 0] ** 2 / X[:, 2]
  found = _exact(power_sums.power_sum_fits(X, y), X, y)
  assert found and found[0].name == "add"


def test_a_sum_the_model_cannot_hold_even_factored_is_left_out():
  # I.40.1's shape, n0 exp(-m g x / (kb T)): the curve fits of its targets ran to 63-105
  # tokens, which the search could only fit and then drop
  X = _rows(k=6, seed=3)
  y = np.exp(-X[:, 0] * X[:, 1] / (X[:, 2] * X[:, 3])) * X[:, 4]
  seeds = power_sums.power_sum_fits(X, y)
  assert seeds and all(len(E.to_prefix(n)) <= 62 for n in seeds)


def test_an_exact_fit_that_rounds_to_no_law_does_not_end_the_search(monkeypatch):
  # ln x fits exactly as (x^e - 1)/e with e -> 0 and rounds to one product twice: the
  # targets after it must still be fitted (here the root's, y^2)
  X = _rows(k=4)
  y = np.sqrt(8.3776 * X[:, 0] * X[:, 1] - X[:, 2] * X[:, 3] ** 2 / 25.0)
  fit = power_sums._fit
  calls = []

  def limit_first(L, t, w):
    calls.append(len(calls))
    if len(calls) == 1:  # "exact", at exponents that round to the same product twice
      return [np.full(2 * L.shape[1], 1e-3)], True
    return fit(L, t, w)

  monkeypatch.setattr(power_sums, "_fit", limit_first)
  found = _exact(power_sums.power_sum_fits(X, y), X, y)
  assert len(calls) > 1 and found and found[0].name == "sqrt"


def test_an_exact_law_too_long_for_the_model_does_not_end_the_search(monkeypatch):
  # II.36.38's shape is exact as y itself; with a token cap it cannot meet, that law is no
  # seed, and y^2, 1/y and 1/y^2 must still be fitted
  X = _rows(k=4)
  y = X[:, 0] * X[:, 1] / X[:, 2] + 0.5 * X[:, 0] / (X[:, 2] * X[:, 3] ** 2)
  fit, calls = power_sums._fit, []
  monkeypatch.setattr(power_sums, "_fit", lambda *a: calls.append(1) or fit(*a))
  assert _exact(power_sums.power_sum_fits(X, y), X, y) and len(calls) == 1
  calls.clear()
  monkeypatch.setattr(power_sums, "MAX_TOKENS", 8)
  assert power_sums.power_sum_fits(X, y) == [] and len(calls) > 1


def test_one_constant_in_both_products_is_one_constant():
  # II.21.32's shape: 1/y = 4 pi x0 - 4 pi x1 (x1 < x0); fitted apart the two 4 pi differ in
  # the last digits, and SymPy could not write 4 pi (x0 - x1)
  rng = np.random.default_rng(4)
  X = np.stack([rng.uniform(3, 5, 300), rng.uniform(1, 2, 300)], axis=1)
  y = 1.0 / (4 * np.pi * X[:, 0] - 4 * np.pi * X[:, 1])
  found = _exact(power_sums.power_sum_fits(X, y), X, y)
  assert found
  c = [abs(v) for v in E.constants(found[0]) if abs(v) != 1.0]
  assert len(c) == 2 and c[0] == c[1]


def test_one_power_law_is_left_to_the_power_law_seeds():
  # q v B / p is one product under every target: a sum would be it plus a term of 1e-17
  X = _rows(k=4)
  assert power_sums.power_sum_fits(X, X[:, 0] * X[:, 1] * X[:, 2] / X[:, 3]) == []


def test_nothing_to_fit():
  X = _rows(k=2)
  assert power_sums.power_sum_fits(X, np.full(len(X), np.nan)) == []
  assert power_sums.power_sum_fits(np.c_[X[:, 0] - 3.0, np.zeros(len(X))], X[:, 1]) == []  # no base column
  assert power_sums.power_sum_fits(X[:3], X[:3, 0]) == []
  # weights of 0 leave their rows out: a wrong value there changes nothing
  y = X[:, 0] * X[:, 1] + 2.0 / X[:, 0]
  bad = y.copy()
  bad[:20] = 1e6
  w = np.r_[np.zeros(20), np.ones(len(y) - 20)]
  assert _exact(power_sums.power_sum_fits(X, bad, w), X[20:], y[20:])


def test_an_unknown_target_is_refused():
  with pytest.raises(ValueError, match="unknown target"):
    power_sums._inverse("cube", 1.0, E.var(0))
