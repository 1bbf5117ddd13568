import copy
import pickle

import numpy as np
import pytest
import sympy

from lee_jax import LEERegressor
from lee_jax import checkpoints
from lee_jax import datasets
from lee_jax import regressor
from lee_jax import trial

import helpers


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
  return str(helpers.export_tiny(tmp_path_factory.mktemp("tiny") / "export"))


@pytest.fixture(scope="module")
def fitted(ckpt):
  X, y = helpers.toy_data()
  return LEERegressor(checkpoint=ckpt, rounds=1, iterations=5, seed=3).fit(X, y), X, y


def test_fit_predict_and_views(fitted):
  est, X, y = fitted
  pred = est.predict(X)
  assert pred.shape == y.shape and np.all(np.isfinite(pred))
  assert est.score(X, y) > 0.5  # the linear baseline alone explains most of 2*x0 + sin(x1)
  assert est.n_features_in_ == 2 and list(est.feature_names_in_) == ["x0", "x1"]
  assert est.complexity_ >= 1 and est.equations_
  assert "x" in str(est.sympy()) and isinstance(est.latex(), str)


def test_pareto_table_index_and_jax_export(fitted):
  import jax
  est, X, y = fitted
  n = len(est.equations_)
  assert len(est.equation_nodes_) == n >= 1
  complexities = [e["complexity"] for e in est.equations_]
  assert complexities == sorted(complexities)
  # PySR's columns beside ours: the validation MSE, falling along the table, and its
  # log drop per node (0 for the first row)
  losses = [e["loss"] for e in est.equations_]
  assert losses == sorted(losses, reverse=True) and est.equations_[0]["score"] == 0.0
  assert all(e["score"] >= 0 for e in est.equations_)
  for i in range(n):  # each row predicts with its own formula, at full precision
    np.testing.assert_allclose(est.predict(X, index=i),
                               trial.predict(est.equation_nodes_[i], X))
    # ... which its `equation` string (PySR's column) writes in full: 4 figures in `expression`
    full = sympy.lambdify(sympy.symbols("x0 x1"), sympy.sympify(est.equations_[i]["equation"]))
    np.testing.assert_allclose(np.broadcast_to(full(X[:, 0], X[:, 1]), (len(X),)),
                               est.predict(X, index=i), rtol=1e-9, atol=1e-9)
    assert est.equations_[i]["expression"] == str(est.sympy(i))
  best = est.get_best()  # PySR's: the answer's row
  assert best in est.equations_ and best["complexity"] == est.complexity_
  assert best["expression"] == str(est.sympy())
  with pytest.raises(regressor.NotFittedError):
    LEERegressor().get_best()
  np.testing.assert_array_equal(est.predict(X, index=-1), est.predict(X, index=n - 1))
  for bad in (n, -n - 1, "0"):
    with pytest.raises(IndexError, match="equations_"):
      est.predict(X, index=bad)
  exported = est.jax()
  f, params = exported["callable"], exported["parameters"]
  np.testing.assert_allclose(jax.jit(f)(X, params), est.predict(X), rtol=1e-4, atol=1e-4)
  if params.size:
    assert np.all(np.isfinite(jax.grad(lambda c: f(X, c).sum())(params)))
  # The full-precision SymPy form evaluates to the same numbers; the 4-digit one is for reading.
  full = est.sympy(digits=None)
  g = sympy.lambdify(sympy.symbols("x0 x1"), full, "numpy")
  np.testing.assert_allclose(np.broadcast_to(g(X[:, 0], X[:, 1]), y.shape), est.predict(X),
                             rtol=1e-9, atol=1e-9)


def test_latex_table_lists_the_pareto_table_with_the_answer_in_bold(fitted):
  est, _, _ = fitted
  table = est.latex_table()
  lines = table.splitlines()
  assert lines[0] == r"\begin{tabular}{@{}lrr@{}}" and lines[-1] == r"\end{tabular}"
  rows = lines[4:-2]
  assert len(rows) == len(est.equations_)
  for row, e in zip(rows, est.equations_):
    assert row.endswith(r" \\") and str(e["complexity"]) in row.split(" & ")[1]
    assert (r"\boldsymbol" in row) == (e["prefix"] == est.best_prefix_)
  assert sum(r"\boldsymbol" in r for r in rows) <= 1
  with pytest.raises(regressor.NotFittedError):
    LEERegressor().latex_table()
  # a column name of several letters is a word, upright (it read m a s s in italics)
  from lee_jax import expr as E
  named = copy.deepcopy(est)
  named.feature_names_in_ = np.array(["mass", "theta"], dtype=object)
  named.best_node_ = E.op("mul", E.var(0), E.op("sin", E.var(1)))
  assert named.latex() == r"\mathrm{mass} \sin{\left(\theta \right)}"


def test_plot_draws_the_fit_and_writes_it(fitted, tmp_path):
  est, X, y = fitted
  fig = est.plot(X, y, tmp_path / "fit.png")
  assert (tmp_path / "fit.png").read_bytes()[:4] == b"\x89PNG"
  ax_eq, ax_fit, ax_run = fig.axes
  assert len(ax_eq.lines[0].get_xdata()) == len(est.equations_)
  np.testing.assert_allclose(ax_fit.collections[0].get_offsets()[:, 1], est.predict(X))
  assert len(ax_run.lines) == len(est.history_) == 1  # one round
  fig0 = est.plot(X, y, index=0)  # any row of the table; the star moves to it
  star = [l for l in fig0.axes[0].lines if l.get_marker() == "*"]
  assert star[0].get_xdata()[0] == est.equations_[0]["complexity"]
  with pytest.raises(ValueError, match=f"y has {len(y) - 1} values; X has {len(y)} rows"):
    est.plot(X, y[:-1])
  with pytest.raises(ValueError, match="format"):
    est.plot(X, y, tmp_path / "fit.jpg")


@pytest.mark.slow
def test_select_k_best_fits_a_wide_table_and_predicts_from_every_column(ckpt):
  import jax
  rng = np.random.default_rng(1)
  X = rng.uniform(-3, 3, (300, 12))
  y = 2 * X[:, 4] + 1
  names = [f"c{i}" for i in range(12)]
  frame = type("Frame", (), {"columns": names, "__array__": lambda self, *a, **k: X})()
  est = LEERegressor(checkpoint=ckpt, rounds=1, iterations=5, seed=3, select_k_best=3)
  est.fit(frame, y)
  assert est.n_features_in_ == 12 and list(est.feature_names_in_) == names
  assert len(est.selected_features_) == 3 and 4 in est.selected_features_
  assert est.score(X, y) > 0.99  # the linear baseline on c4
  assert {str(v) for v in est.sympy().free_symbols} <= {names[i] for i in est.selected_features_}
  f = est.jax()
  np.testing.assert_allclose(jax.jit(f["callable"])(X, f["parameters"]), est.predict(X),
                             rtol=1e-4, atol=1e-4)
  with pytest.raises(ValueError, match=r"expected \[n_rows, 12\]"):
    est.predict(X[:, est.selected_features_])
  with pytest.raises(datasets.DataError, match="select_k_best=K"):
    LEERegressor(checkpoint=ckpt).fit(X, y)


def _frame(X, names):  # a DataFrame's two faces the estimator reads: columns and __array__
  return type("Frame", (), {"columns": list(names), "__array__": lambda self, *a, **k: X})()


def test_predict_refuses_columns_fit_did_not_see_in_that_order(ckpt):
  X, y = helpers.toy_data()
  est = LEERegressor(checkpoint=ckpt, rounds=1, iterations=2, seed=3).fit(_frame(X, "ab"), y)
  np.testing.assert_array_equal(est.predict(_frame(X, "ab")), est.predict(X))
  # columns are read by position: swapped ones once gave a silently wrong prediction
  with pytest.raises(ValueError, match=r"another order than at fit \(a, b\); pass X\[\['a', 'b'\]\]"):
    est.predict(_frame(X[:, ::-1], "ba"))
  with pytest.raises(ValueError, match="not those fit saw: missing a; unexpected c"):
    est.predict(_frame(X, "cb"))
  bad = X.copy(); bad[[4, 9], 0] = np.nan
  with pytest.raises(ValueError, match=r"NaN or inf in 2 row\(s\) \(the first: row 4\)"):
    est.predict(bad)
  with pytest.raises(ValueError, match=r"X is 1-D \(shape \(2,\)\).*reshape\(1, -1\)"):
    est.predict(X[0])


def test_clone_and_pickle_round_trip(fitted):
  sklearn_base = pytest.importorskip("sklearn.base")
  est, X, _ = fitted
  c = sklearn_base.clone(est)
  assert c.get_params() == est.get_params() and not hasattr(c, "best_node_")
  again = pickle.loads(pickle.dumps(est))
  np.testing.assert_array_equal(again.predict(X), est.predict(X))
  assert str(again.sympy()) == str(est.sympy())
  # One pickled before select_k_best existed still predicts from every column.
  old = est.__dict__.copy()
  del old["select_k_best"], old["selected_features_"], old["poly_terms"], old["poly_floor"]
  del old["simplify"], old["sep_terms"], old["power_seeds"], old["factor_seeds"]
  del old["composite_seeds"], old["transform_seeds"], old["wave_seeds"], old["long_terms"]
  del old["parsimony"], old["final_refit"]
  revived = LEERegressor.__new__(LEERegressor)
  revived.__setstate__(old)
  np.testing.assert_array_equal(revived.predict(X), est.predict(X))
  assert revived.get_params() == est.get_params()


def test_params_protocol_without_sklearn():
  est = LEERegressor(preset="paper", seed=4)
  assert est.get_params()["preset"] == "paper" and est.get_params()["seed"] == 4
  assert est.set_params(mode="iterative", rounds=2) is est and est.mode == "iterative"
  assert repr(est) == "LEERegressor(preset='paper', mode='iterative', rounds=2, seed=4)"
  with pytest.raises(ValueError, match="invalid parameter"):
    est.set_params(bogus=1)
  with pytest.raises(ValueError, match="did you mean 'max_time'"):
    est.set_params(max_tim=1)


def test_unknown_keyword_names_the_likely_parameter():
  # PySR's and scikit-learn's names, and a misspelling, point to ours; Python's own
  # TypeError named only the argument.
  with pytest.raises(TypeError, match="'random_state' for LEERegressor; did you mean 'seed'"):
    LEERegressor(random_state=0)
  with pytest.raises(TypeError, match="did you mean 'max_time'"):
    LEERegressor(timeout_in_seconds=60)
  with pytest.raises(TypeError, match="did you mean 'select_k_best'"):
    LEERegressor(select_kbest=3)
  with pytest.raises(TypeError, match=r"'binary_operators' for LEERegressor \(valid: checkpoint"):
    LEERegressor(binary_operators=["+"])
  assert "unknown" not in LEERegressor().get_params()
  assert LEERegressor(latent_noise=3.0).search_config().latent_noise == 3.0
  assert LEERegressor(poly_floor=True).search_config().poly_floor is True
  assert LEERegressor(sep_terms=2).search_config().sep_terms == 2
  assert LEERegressor(power_seeds=False).search_config().power_seeds is False
  assert LEERegressor(factor_seeds=False).search_config().factor_seeds is False
  assert LEERegressor().search_config().factor_seeds is True
  assert LEERegressor(composite_seeds=False).search_config().composite_seeds is False
  assert LEERegressor().search_config().composite_seeds is True
  assert LEERegressor(transform_seeds=False).search_config().transform_seeds is False
  assert LEERegressor().search_config().transform_seeds is True
  assert LEERegressor(wave_seeds=False).search_config().wave_seeds is False
  assert LEERegressor().search_config().wave_seeds is True
  assert LEERegressor(long_terms=0).search_config().long_terms == 0
  assert LEERegressor().search_config().long_terms == 8
  assert LEERegressor(parsimony=False).search_config().parsimony is False
  assert LEERegressor().search_config().parsimony is True
  assert LEERegressor(final_refit=False).search_config().final_refit is False
  assert LEERegressor().search_config().final_refit is True
  assert LEERegressor(simplify="full").search_config().simplify == "full"
  with pytest.raises(ValueError, match="simplify must be one of light, full"):
    LEERegressor(simplify="none").search_config()


def test_search_config_takes_the_models_own_defaults_under_the_users(ckpt, tmp_path):
  from lee_jax import weights
  noisy = str(weights.export(helpers.tiny_model(), tmp_path / "w", "tiny",
                             extra={"search_defaults": {"latent_noise": 3.0}}))
  assert LEERegressor(checkpoint=ckpt).search_config().latent_noise == 0.0  # none: the paper's
  assert LEERegressor(checkpoint=noisy).search_config().latent_noise == 3.0
  assert LEERegressor(checkpoint=noisy, latent_noise=0.0).search_config().latent_noise == 0.0
  assert LEERegressor(checkpoint=noisy, preset="paper").search_config().rounds == 10


def test_unfitted_and_bad_input_errors(ckpt):
  for use in (lambda e: e.predict(np.zeros((3, 2))), lambda e: e.sympy(), lambda e: e.latex()):
    with pytest.raises(regressor.NotFittedError):
      use(LEERegressor())
  est = LEERegressor(checkpoint=ckpt, rounds=1, iterations=1)
  X, y = helpers.toy_data(50)
  bad = X.copy(); bad[3, 1] = np.nan
  for args, msg in [((bad, y), "NaN or inf"), ((np.zeros((50, 11)), y), "select at most 10"),
                    ((X[:5], y[:5]), "at least 10"), ((X, np.ones(50)), "constant"),
                    ((X, y[:40]), "shapes"), ((np.array([["a", "b"]] * 50), y), "numeric"),
                    ((X, np.c_[y, y]), "MultiOutputRegressor"), ((X + 1j, y), "not complex")]:
    with pytest.raises(datasets.DataError, match=msg) as e:
      est.fit(*args)
    assert str(e.value).count("LEERegressor.fit input") == 1  # (the complex one was wrapped)
  with pytest.raises(ValueError, match="unknown mode"):
    LEERegressor(checkpoint=ckpt, mode="beam").fit(X, y)
  with pytest.raises(checkpoints.CheckpointError, match="no checkpoint directory"):
    LEERegressor(checkpoint="/nonexistent/ckpt").fit(X, y)
  for kw, msg in (({"seed": -1}, r"seed must be an integer in \[0, 2\*\*32\)"),
                  ({"seed": 1.5}, "seed must be an integer"),
                  ({"rounds": "1"}, "rounds must be an integer"),
                  ({"val_fraction": "0.2"}, "val_fraction must be a number, got '0.2'"),
                  ({"max_time": "10"}, "max_time must be a number"),
                  ({"val_fraction": 1.0}, r"val_fraction must be in \(0, 1\)"),
                  # "no" is truthy: it switched the power-law seeds on
                  ({"power_seeds": "no"}, "power_seeds must be True or False, got 'no'"),
                  ({"warm_start": "yes"}, "warm_start must be True or False, got 'yes'"),
                  ({"verbose": "yes"}, "verbose must be True, False or an integer, got 'yes'"),
                  ({"latent_noise": float("inf")}, "latent_noise must be a finite number")):
    with pytest.raises(ValueError, match=msg):
      LEERegressor(checkpoint=ckpt, **kw).fit(X, y)
  LEERegressor(checkpoint=ckpt, rounds=1, iterations=1, verbose=1).fit(X, y)  # sklearn's int
  # a large val_fraction on few rows left one row (or none: numpy's "high <= 0") to search on
  with pytest.raises(ValueError, match=r"val_fraction=0.95 holds out 10 of 10 rows, leaving 0 "
                     r"to search on; at least 5 are needed"):
    LEERegressor(checkpoint=ckpt, val_fraction=0.95).fit(X[:10], y[:10])
  sparse = pytest.importorskip("scipy.sparse")
  with pytest.raises(ValueError, match=r"sparse matrix.*X.toarray\(\)"):
    est.fit(sparse.csr_matrix(X), y)


def test_score_reads_y_as_sklearns_r2_score(fitted):
  est, X, y = fitted
  assert est.score(X, y[:, None]) == est.score(X, y)  # a column, as fit reads it
  assert est.score(X, np.full(len(y), 3.0)) == 0.0  # constant y, not predicted: 0 (was -inf)
  far = copy.copy(est)
  far.predict = lambda X, index=None: np.full(len(X), 1e200)  # its squares overflow: -inf,
  assert far.score(X, y) == -np.inf  # which is no constant y (the first mend scored it 0)
  for bad, msg in ((y[:0], r"expected \[n_rows\] with n_rows >= 1"),  # (R2 1.0 before)
                   (np.r_[y[:-1], np.nan], r"NaN or inf in 1 value")):  # (nan before)
    with pytest.raises(ValueError, match=msg):
      est.score(X[:len(bad)], bad)
  with pytest.raises(IndexError, match="index True is not one of"):
    est.predict(X, index=True)  # (read as 1 before)


def test_works_inside_sklearn_meta_estimators(ckpt):
  # scikit-learn >= 1.6 asks an estimator for its tags (__sklearn_tags__): without them every
  # meta-estimator (pipelines, cross-validation, MultiOutputRegressor) raised AttributeError
  pytest.importorskip("sklearn")
  from sklearn.base import is_regressor
  from sklearn.exceptions import NotFittedError
  from sklearn.model_selection import cross_val_score
  from sklearn.multioutput import MultiOutputRegressor
  from sklearn.utils.validation import check_is_fitted
  X, y = helpers.toy_data(60)
  est = LEERegressor(checkpoint=ckpt, rounds=1, iterations=2, seed=3)
  assert is_regressor(est)
  scores = cross_val_score(est, X, y, cv=2)
  assert scores.shape == (2,) and np.all(np.isfinite(scores))
  both = MultiOutputRegressor(est).fit(X, np.c_[y, 2 * y])
  assert both.predict(X[:4]).shape == (4, 2)
  with pytest.raises(NotFittedError):  # sklearn's own class, as well as ours
    est.predict(X)
  check_is_fitted(both.estimators_[0])


def test_a_failed_fit_keeps_the_previous_fit_whole(fitted, monkeypatch):
  est, X, y = fitted
  est = copy.deepcopy(est)
  before = {k: v for k, v in vars(est).items() if k.endswith("_")}
  failed = type("Failed", (), {"winner": None, "failures": lambda self: {"nonfinite": 3}})()
  monkeypatch.setattr(trial, "run_trial", lambda *a, **k: failed)
  with pytest.raises(RuntimeError, match="no valid expression found"):
    est.fit(X, y)
  assert {k: v for k, v in vars(est).items() if k.endswith("_")}.keys() == before.keys()
  assert est.history_ == before["history_"] and est.failures_ == before["failures_"]


def test_predict_warns_where_the_formula_is_undefined(fitted):
  # A fitted 3*sqrt(x0) predicted NaN for x0 < 0 without a word (a probe's finding).
  import warnings
  from lee_jax import expr as E
  est, X, y = fitted
  est = copy.deepcopy(est)
  est.best_node_ = E.op("mul", E.const(3.0), E.op("sqrt", E.var(0)))
  with warnings.catch_warnings():
    warnings.simplefilter("error")  # rows inside the domain: silent
    assert np.all(np.isfinite(est.predict(np.abs(X))))
  rows = np.abs(X[:4])
  rows[2, 0] = -1.0
  with pytest.warns(RuntimeWarning, match=r"undefined or infinite at 1 of 4 rows \(the first: "
                    r"row 2\); predict returns NaN there"):
    assert np.isnan(est.predict(rows)[2])


def test_fit_warns_when_no_formula_beats_the_mean(fitted, monkeypatch):
  # Pure noise, or 3 outliers x100 in 200 rows: every validation R2 was below 0 and the
  # answer a 26-node product, with nothing said.
  import dataclasses
  est, X, y = fitted
  run = trial.run_trial
  def below_mean(*a, **k):
    res = run(*a, **k)
    return dataclasses.replace(res, winner=dataclasses.replace(res.winner, r2_val=-0.06))
  monkeypatch.setattr(trial, "run_trial", below_mean)
  kw = dict(checkpoint=est.checkpoint, rounds=1, iterations=2, seed=3)
  with pytest.warns(UserWarning, match=r"no formula beats the mean of y on the validation rows "
                    r"\(the answer's R2 there: -0.06\)"):
    LEERegressor(**kw).fit(X, y)


def test_more_rows_than_the_cap_are_searched_as_a_seeded_sample(fitted, monkeypatch):
  # A million rows took 3.3 GB and 37 s before the first iteration (validation scoring on
  # 200,000 rows), past any max_time, for the same answer.
  est, _, _ = fitted
  seen = []
  run = trial.run_trial
  monkeypatch.setattr(trial, "run_trial", lambda eng, data, *a, **k: seen.append(data) or
                      run(eng, data, *a, **k))
  X = np.random.default_rng(0).uniform(-2, 2, (regressor.MAX_ROWS + 500, 2))
  kw = dict(checkpoint=est.checkpoint, rounds=1, iterations=2, seed=3)
  LEERegressor(**kw).fit(X, X[:, 0] * 2.0)
  LEERegressor(**kw).fit(X, X[:, 0] * 2.0)
  a, b = seen
  assert len(a.y_train) + len(a.y_val) == regressor.MAX_ROWS
  np.testing.assert_array_equal(a.X_train, b.X_train)  # the same sample for the same seed
  assert set(map(tuple, a.X_train)) <= set(map(tuple, X))


def test_same_seed_same_expression_and_score(ckpt):
  X, y = helpers.toy_data(120, seed=1)
  a = LEERegressor(checkpoint=ckpt, rounds=1, iterations=5, seed=9).fit(X, y)
  b = LEERegressor(checkpoint=ckpt, rounds=1, iterations=5, seed=9).fit(X, y)
  assert a.best_prefix_ == b.best_prefix_ and a.score(X, y) == b.score(X, y)
  assert a.equations_ == b.equations_
  with pytest.raises(ValueError, match=r"y has 117 values; X has 120 rows"):
    a.score(X, y[:-3])
  for bad in (-1, 0, 2.5):
    with pytest.raises(ValueError, match="digits must be an integer >= 1"):
      a.sympy(digits=bad)
  with pytest.raises(ValueError, match="digits must be an integer >= 1"):
    a.latex_table(precision=0)


def test_sample_weights(ckpt):
  X, y = helpers.toy_data(160, seed=2)
  kw = dict(checkpoint=ckpt, rounds=1, iterations=5, seed=5)
  plain = LEERegressor(**kw).fit(X, y)
  ones = LEERegressor(**kw).fit(X, y, sample_weight=np.full(160, 3.0))
  assert ones.best_prefix_ == plain.best_prefix_ and ones.equations_ == plain.equations_
  # A third of the rows is garbage: with tiny weights on it the fit follows the clean rows.
  garbage = np.arange(160) % 3 == 0
  y_bad = np.where(garbage, np.random.default_rng(0).normal(0, 50, 160), y)
  w = np.where(garbage, 1e-6, 1.0)
  weighted = LEERegressor(**kw).fit(X, y_bad, sample_weight=w)
  unweighted = LEERegressor(**kw).fit(X, y_bad)
  clean = ~garbage
  assert weighted.score(X[clean], y[clean]) > 0.5 > unweighted.score(X[clean], y[clean])
  assert weighted.score(X, y_bad, sample_weight=w) == pytest.approx(
      weighted.score(X[clean], y_bad[clean]), abs=1e-3)  # the garbage barely counts
  # Weight 0 leaves rows out.
  dropped = LEERegressor(**kw).fit(X, y_bad, sample_weight=np.where(garbage, 0.0, 1.0))
  assert dropped.score(X[clean], y[clean]) > 0.5
  for bad, msg in [(np.ones(10), "expected \\(160,\\)"), (-np.ones(160), "non-negative"),
                   (np.zeros(160), "not all zero"), (np.full(160, np.nan), "finite"),
                   (["a"] * 160, "numbers"), (np.r_[np.ones(5), np.zeros(155)], "at least 10")]:
    with pytest.raises(datasets.DataError, match=msg):
      LEERegressor(**kw).fit(X, y, sample_weight=bad)


def test_warm_start_hands_the_previous_pareto_set_to_the_next_fit(ckpt, monkeypatch):
  X, y = helpers.toy_data(120, seed=1)
  est = LEERegressor(checkpoint=ckpt, rounds=1, iterations=5, warm_start=True).fit(X, y)
  seen = []
  real = trial.run_trial
  monkeypatch.setattr(trial, "run_trial",
                      lambda engine, data, *a, **k: seen.append(data) or real(engine, data, *a, **k))
  previous = list(est.equation_nodes_)
  est.fit(X, 0.5 * y)
  assert list(seen[0].init_nodes) == previous
  est.set_params(warm_start=False).fit(X, y)
  assert seen[1].init_nodes == ()
  est.set_params(warm_start=True).fit(X[:, :1], y)  # other features: nothing to start from
  assert seen[2].init_nodes == ()


def test_a_time_limit_still_gives_a_fitted_estimator(ckpt):
  X, y = helpers.toy_data(120, seed=1)
  est = LEERegressor(checkpoint=ckpt, rounds=2, iterations=5, max_time=1e-6).fit(X, y)
  assert est.timed_out_ and np.all(np.isfinite(est.predict(X)))
  assert not LEERegressor(checkpoint=ckpt, rounds=1, iterations=5).fit(X, y).timed_out_
  with pytest.raises(ValueError, match="max_time"):
    LEERegressor(checkpoint=ckpt, max_time=-1).fit(X, y)


def test_damaged_checkpoints_are_one_line_errors_naming_the_file(tmp_path):
  X, y = helpers.toy_data(50)
  bad_meta = helpers.export_tiny(tmp_path / "a")
  (bad_meta / "meta.json").write_text("{not json")
  truncated = helpers.export_tiny(tmp_path / "b")
  for f in (truncated / "params").rglob("*"):
    if f.is_file() and f.stat().st_size > 100:
      f.write_bytes(f.read_bytes()[:50])
  for directory, match in [(bad_meta, "meta.json"), (truncated, "params")]:
    with pytest.raises(checkpoints.CheckpointError, match=match) as e:
      LEERegressor(checkpoint=str(directory), rounds=1, iterations=1).fit(X, y)
    assert "\n" not in str(e.value) and str(directory) in str(e.value)


def test_symbolic_solution_checks_the_answer_against_a_known_law(fitted):
  est, _, _ = fitted
  # the answer's own full-precision form is a solution of itself; another formula is not
  assert est.symbolic_solution(str(est.sympy(digits=None)))["solution"]
  v = est.symbolic_solution("exp(x0*x1)*cos(x0)")
  assert not v["solution"] and v["reason"] == "not constant" and v["difference"]
  for i in range(len(est.equations_)):  # each row of the table likewise
    assert est.symbolic_solution(est.equations_[i]["equation"], index=i)["solution"]
  with pytest.raises(ValueError, match="names z, which is no column"):
    est.symbolic_solution("x0 + z")
  with pytest.raises(regressor.NotFittedError):
    LEERegressor().symbolic_solution("x0")
