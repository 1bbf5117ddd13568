import types

import numpy as np
import pytest
import sympy

from lee_jax import LEERegressor
from lee_jax import regressor
from lee_jax import srbench_method

import helpers


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
  ckpt = str(helpers.export_tiny(tmp_path_factory.mktemp("tiny") / "export"))
  X, y = helpers.toy_data()
  return LEERegressor(checkpoint=ckpt, rounds=1, iterations=5, seed=3).fit(X, y), X, y


def test_the_names_srbench_imports(fitted):
  est, X, _ = fitted
  assert srbench_method.est.get_params()["preset"] == "paper"
  assert srbench_method.est.get_params()["select_k_best"] == 10  # wider PMLB sets run too
  assert srbench_method.hyper_params == [{}]
  LEERegressor().set_params(**srbench_method.eval_kwargs["test_params"]).search_config()
  with pytest.raises(regressor.NotFittedError):
    srbench_method.model(LEERegressor())
  # SRBench hands X as a DataFrame: the string is over its column names, full precision.
  frame = types.SimpleNamespace(columns=["speed", "angle"])
  text = srbench_method.model(est, frame)
  a, b = sympy.symbols("speed angle")
  g = sympy.lambdify((a, b), sympy.sympify(text, locals={"speed": a, "angle": b}), "numpy")
  np.testing.assert_allclose(np.broadcast_to(g(X[:, 0], X[:, 1]), (len(X),)), est.predict(X),
                             rtol=1e-9, atol=1e-9)
  assert srbench_method.model(est) == str(est.sympy(digits=None))
  assert srbench_method.complexity(est) == est.complexity_
  with pytest.raises(ValueError, match="3 columns"):
    srbench_method.model(est, types.SimpleNamespace(columns=["a", "b", "c"]))
  # PMLB names that are no identifiers print as the formula names (deg-malig read as minus)
  text = srbench_method.model(est, types.SimpleNamespace(columns=["deg-malig", "CIC.inst"]))
  assert {str(s) for s in sympy.sympify(text).free_symbols} <= {"deg_malig", "CIC_inst"}
  # the harness declares the columns as symbols: beta and gamma stay themselves (beta_ would
  # never match the true formula of Feynman III.17.37)
  text = srbench_method.model(est, types.SimpleNamespace(columns=["beta", "gamma"]))
  b, g = sympy.symbols("beta gamma")
  assert sympy.sympify(text, locals={"beta": b, "gamma": g}).free_symbols <= {b, g}
  assert "beta_" not in text and "gamma_" not in text


def test_srbenchs_trial_seed_reaches_the_search():
  # its harness: `if hasattr(est, 'random_state'): est.random_state = random_state`
  est = LEERegressor(seed=0)
  assert hasattr(est, "random_state")
  est.random_state = 23654
  assert est.seed == 23654 == est.get_params()["seed"] == est.random_state
  assert "random_state" not in est.get_params()  # (seed is the parameter)
