import numpy as np
import pytest

from lee_jax import evaluate
from lee_jax import expr as E
from lee_jax import fit


def _tree(text, n=2):
  return E.from_sympy(E.parse_formula(text, [f"x{i}" for i in range(n)]))


@pytest.mark.parametrize("truth,start", [
    ("2.5*sin(1.3*x0) + 0.7", "1.0*sin(1.0*x0) + 1.0"),
    ("exp(-0.5*x0) * 3.0 + x1", "exp(-1.0*x0) * 1.0 + x1"),
    ("1.7*x0**2/(x1**2 + 2.2)", "1.0*x0**2/(x1**2 + 1.0)"),
])
def test_lbfgsb_recovers_the_constants_of_a_known_skeleton(truth, start):
  rng = np.random.default_rng(0)
  X = rng.uniform(-2, 2, (300, 2))
  y = evaluate.evaluate_numpy(_tree(truth), X)
  res = fit.fit_constants(_tree(start), X, y, max_iter=300)
  assert res.ok and res.nmse < 1e-10
  np.testing.assert_allclose(evaluate.evaluate_numpy(res.node, X), y, rtol=1e-5, atol=1e-6)


def test_the_finite_difference_reference_recovers_the_constants_too():
  skeleton = E.from_prefix("add mul C sin mul C x0 C".split())  # c1*sin(c2*x0) + c3
  X = np.random.default_rng(0).uniform(-2, 2, (300, 1))
  y = 2.5 * np.sin(1.3 * X[:, 0]) + 0.7
  start = E.with_constants(skeleton, [2.0, 1.1, 0.0])
  res = fit.fit_constants(start, X, y, max_iter=300, exact_gradient=False)
  assert res.ok and res.nmse < 1e-8
  np.testing.assert_allclose(res.values, [2.5, 1.3, 0.7], rtol=1e-3)
  pole = fit.fit_constants(E.from_prefix("div C log x0".split()), X, y, 50, exact_gradient=False)
  assert not pole.ok and pole.reason == "nonfinite_start"  # log of negative x0: NaN rows


def test_lbfgsb_runs_with_one_blas_thread(monkeypatch):
  threadpoolctl = pytest.importorskip("threadpoolctl")
  seen = []
  minimize = fit.scipy.optimize.minimize

  def spy(*args, **kwargs):
    seen.append({i["num_threads"] for i in threadpoolctl.threadpool_info()
                 if i["user_api"] == "blas"})
    return minimize(*args, **kwargs)

  monkeypatch.setattr(fit.scipy.optimize, "minimize", spy)
  with threadpoolctl.threadpool_limits(2, user_api="blas"):  # as on a 2-core box
    res = fit.fit_constants(_tree("1.0*sin(1.0*x0) + 1.0"), np.ones((5, 2)), np.arange(5.0), 20)
    after = {i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"}
  assert res.ok and seen == [{1}]
  assert after == {2}  # restored for the caller's own linear algebra


def test_lbfgsb_recovers_each_constant():
  skeleton = E.from_prefix("add mul C sin mul C x0 C".split())  # c1*sin(c2*x0) + c3
  X = np.random.default_rng(0).uniform(-2, 2, (300, 1))
  y = 2.5 * np.sin(1.3 * X[:, 0]) + 0.7
  res = fit.fit_constants(E.with_constants(skeleton, [2.0, 1.1, 0.0]), X, y, max_iter=300)
  assert res.ok and res.iterations > 0
  np.testing.assert_allclose(res.values, [2.5, 1.3, 0.7], rtol=1e-6)


def test_jacobian_matches_finite_differences():
  node = _tree("1.5*log(x0**2 + 0.3) / (2.0 + cos(0.8*x1)) - 0.4*sqrt(x0**2 + 1.1)")
  X = np.random.default_rng(1).uniform(-3, 3, (50, 2))
  c = np.asarray(E.constants(node))
  _, jac = fit.value_and_jacobian(node, X, c)
  for i in range(len(c)):
    d = np.zeros_like(c); d[i] = 1e-6
    fd = (fit.value_and_jacobian(node, X, c + d)[0] - fit.value_and_jacobian(node, X, c - d)[0]) / 2e-6
    np.testing.assert_allclose(jac[:, i], fd, rtol=1e-5, atol=1e-6)


def test_a_sqrt_of_zero_outside_the_constants_leaves_the_fit_alone():
  # sqrt's derivative at 0 is inf, and times the argument's 0 it made the row NaN: the
  # exact law 3 sqrt(x0) + 1 on rows with x0 = 0 was refused ("nonfinite_start")
  X = np.linspace(0, 2, 30)[:, None]
  y = 3.0 * np.sqrt(X[:, 0]) + 1.0
  node = E.op("add", E.op("mul", E.const(1.0), E.op("sqrt", E.var(0))), E.const(0.0))
  _, jac = fit.value_and_jacobian(node, X, np.array([1.0, 0.0]))
  assert np.isfinite(jac).all()
  res = fit.fit_constants(node, X, y, max_iter=100)
  assert res.ok
  np.testing.assert_allclose(res.values, [3.0, 1.0], rtol=1e-6)


def test_a_subtree_used_twice_has_slots_of_its_own():
  # SymPy's (x0 + c)^4 comes back as sq(t) * sq(t) with one object t: keyed by identity,
  # both copies read the second slot and the first never moved, so the returned tree
  # (whose constants are written in prefix order) was not the one scored
  inner = E.op("add", E.const(1.23), E.var(0))
  node = E.op("mul", E.op("sq", inner), E.op("sq", inner))
  X = np.linspace(-1, 1, 50)[:, None]
  y = (X[:, 0] + 0.7) ** 4
  v, jac = fit.value_and_jacobian(node, X, np.array([0.7, 1.5]))
  np.testing.assert_allclose(v, (X[:, 0] + 0.7) ** 2 * (X[:, 0] + 1.5) ** 2)
  assert np.abs(jac[:, 0]).max() > 0 and np.abs(jac[:, 1]).max() > 0
  res = fit.fit_constants(node, X, y, max_iter=200)
  assert res.ok and res.nmse < 1e-12
  r = evaluate.evaluate_numpy(res.node, X) - y
  assert np.mean(r * r) / np.var(y) < 1e-12  # what was scored is what comes back


def test_value_matches_the_numpy_evaluator():
  node = _tree("tanh(0.3*x0) * abs(x1) ** 3 - tan(0.1*x1)")
  X = np.random.default_rng(2).uniform(-3, 3, (40, 2))
  v, _ = fit.value_and_jacobian(node, X, np.asarray(E.constants(node)))
  np.testing.assert_allclose(v, evaluate.evaluate_numpy(node, X))


def test_failures_are_results_not_exceptions():
  X = np.random.default_rng(3).uniform(1, 5, (100, 1))
  y = X[:, 0] * 2
  # log of a negative everywhere: non-finite from the start.
  bad = fit.fit_constants(_tree("log(-1.0*x0 - 3.0)", 1), X, y, 100)
  assert not bad.ok and bad.reason == "nonfinite_start" and bad.nmse == np.inf
  # exp(c * x) with a start that overflows part of the way: no exception, no NaN result.
  res = fit.fit_constants(_tree("exp(150.0*x0) + 1.0", 1), X, y, 100)
  assert not res.ok or np.isfinite(res.nmse)
  # No constants: evaluated, nothing to fit.
  flat = fit.fit_constants(_tree("x0 + x0", 1), X, y, 100)
  assert flat.ok and flat.iterations == 0 and flat.nmse < 1e-20


def test_the_batched_fitters_scipy_nodes_get_the_rounds_iteration_budget():
  # More than MAX_CONSTS constants go to scipy; they always had 100 iterations, whatever
  # the round's L-BFGS-B budget (the paper preset's 100 -> 300).
  rng = np.random.default_rng(0)
  X = rng.uniform(-2, 2, (200, 1))
  y = np.sin(1.3 * X[:, 0]) + 0.5 * np.sin(2.1 * X[:, 0]) + 0.2 * np.cos(0.7 * X[:, 0])
  wave = "add mul C sin mul C x0 "
  node = E.from_prefix((wave * 4 + "mul C sin mul C x0").split())
  assert len(E.constants(node)) > fit.MAX_CONSTS
  one, many = (fit.fit_batch([node], X, y, max_iter=k)[0] for k in (1, 300))
  assert one.iterations <= 1 < many.iterations and many.nmse < one.nmse


def test_batched_jax_fitter_matches_scipy_on_the_same_candidates():
  rng = np.random.default_rng(4)
  X = rng.uniform(-2, 2, (300, 2))
  y = 2.5 * np.sin(1.3 * X[:, 0]) + 0.7 * X[:, 1] ** 2
  nodes = [E.from_prefix(t.split()) for t in (
      "add mul C sin mul C x0 mul C sq x1",  # the true skeleton
      "add mul C x0 C",  # linear: a least-squares optimum
      "mul C sin x0",
      "log neg sq x0",  # non-finite everywhere
  )]
  nodes[0] = E.with_constants(nodes[0], [2.0, 1.1, 0.5])
  jx = fit.fit_batch(nodes, X, y, steps=40, restarts=3)
  sp = [fit.fit_constants(n, X, y, 300) for n in nodes]
  assert [r.ok for r in jx] == [True, True, True, False] == [r.ok for r in sp]
  np.testing.assert_allclose(jx[0].values, [2.5, 1.3, 0.7], rtol=1e-4)
  for a, b in zip(jx[:3], sp[:3]):
    assert abs(a.nmse - b.nmse) < 1e-5 + 1e-4 * b.nmse
  # Batched like the scipy path: each result's node carries its own fitted constants.
  np.testing.assert_allclose(E.constants(jx[1].node), jx[1].values)
  # The accelerators' layouts (every class computed, the whole padded schedule, one buffer
  # reused across LM steps; an instruction per tree level) fit the same constants.
  for layout in ("lanes", "levels"):
    sel = fit.fit_batch(nodes, X, y, steps=40, restarts=3, layout=layout)
    assert [r.ok for r in sel] == [r.ok for r in jx]
    for a, b in zip(sel[:3], jx[:3]):
      np.testing.assert_allclose(a.values, b.values, rtol=1e-3, atol=1e-4)
  with pytest.raises(ValueError, match="layout must be one of branch, lanes, levels"):
    fit.fit_batch(nodes, X, y, layout="tree")



def test_the_fitter_runs_on_the_backend_asked_for(monkeypatch):
  X = np.random.default_rng(3).uniform(-2, 2, (200, 1))
  y = 1.5 * np.exp(0.4 * X[:, 0])
  node = E.from_prefix("mul C exp mul C x0".split())
  (r,) = fit.fit_batch([node], X, y, backend="cpu")
  np.testing.assert_allclose(r.values, [1.5, 0.4], rtol=1e-4)
  # A backend this JAX lacks (this CPU has no GPU) is one clear error, from the argument or
  # from $LEE_JAX_FIT_BACKEND's module default.
  with pytest.raises(ValueError, match="backend 'gpu' is not available here"):
    fit.fit_batch([node], X, y, backend="gpu")
  monkeypatch.setattr(fit, "BACKEND", "gpu")
  with pytest.raises(ValueError, match="backend 'gpu' is not available here"):
    fit.default_layout()
  assert fit.default_layout("cpu") == "branch"


def test_pipelined_calls_give_each_node_its_own_fit():
  # Two slot classes (1-2 and 3-4 constants) are two LM calls, both dispatched before either
  # is read back; each node must get the same result as when every call is read back at once.
  rng = np.random.default_rng(5)
  X = rng.uniform(-2, 2, (200, 2))
  y = 1.5 * np.cos(0.8 * X[:, 0]) - 0.4 * X[:, 1] + 0.9
  nodes = [E.from_prefix(t.split()) for t in (
      "add mul C cos mul C x0 add mul C x1 C",  # 4 constants: the 4-slot call
      "add mul C x1 C",  # 2 constants: the 2-slot call
      "mul C cos x0",
      "add add mul C x0 mul C x1 C",  # 3 constants
  )]
  # (linear=False: three of them are affine in their constants, which least squares takes)
  piped = fit.fit_batch(nodes, X, y, steps=30, restarts=2, linear=False)
  serial = fit.fit_batch(nodes, X, y, steps=30, restarts=2, pipelined=False, linear=False)
  for node, a, b in zip(nodes, piped, serial):
    assert a.ok and b.ok
    assert len(a.values) == len(E.constants(node))
    np.testing.assert_array_equal(a.values, b.values)
    assert a.nmse == b.nmse
  np.testing.assert_allclose(piped[0].values, [1.5, 0.8, -0.4, 0.9], rtol=1e-4)


def test_each_slot_class_is_one_call_and_fits_its_candidates(monkeypatch):
  # 1-2, 3-4 and 5-8 constants go to calls with 2, 4 and 8 derivative channels; a
  # 5-constant truth in the 8-slot call (3 slots unused) is recovered exactly.
  rng = np.random.default_rng(6)
  X = rng.uniform(-2, 2, (200, 2))
  y = 1.2 * np.sin(0.9 * X[:, 0]) + 0.4 * X[:, 1] ** 2 - 0.7 * X[:, 0] * X[:, 1] + 0.3
  nodes = [E.from_prefix(t.split()) for t in (
      "add add add mul C sin mul C x0 mul C sq x1 mul C mul x0 x1 C",  # 5: the 8-slot call
      "add mul C sin mul C x0 C",  # 3: the 4-slot call
      "mul C x0",  # 1: the 2-slot call
  )]
  nodes[0] = E.with_constants(nodes[0], [1.0, 1.1, 0.5, -0.5, 0.0])
  slots = []
  start = fit._start_group

  def spy(nodes, prog, *args):  # records each LM call's slot count
    slots.append(prog.n_consts)
    return start(nodes, prog, *args)

  monkeypatch.setattr(fit, "_start_group", spy)
  jx = fit.fit_batch(nodes, X, y, steps=40, restarts=2, linear=False)  # (c x0 is affine)
  assert sorted(slots) == [2, 4, 8]
  np.testing.assert_allclose(jx[0].values, [1.2, 0.9, 0.4, -0.7, 0.3], rtol=1e-4, atol=1e-5)
  for a, node in zip(jx[1:], nodes[1:]):  # approximate fits: scipy's optimum
    b = fit.fit_constants(node, X, y, 300)
    assert a.ok and abs(a.nmse - b.nmse) < 1e-5 + 1e-4 * b.nmse


def test_snapping_removes_dead_terms_and_unit_factors_only():
  rng = np.random.default_rng(2)
  X = rng.uniform(-3, 3, (300, 2))
  def snapped(text):
    node = _tree(text)
    return E.constants(fit.snap(node, X, evaluate.evaluate_numpy(node, X)))
  # dead terms go, a factor of 1.0000001 becomes 1, x - 3.4e-7 becomes x
  assert snapped("-2.075*cos(x1)**3 + 3.642e-188*exp(-x0)") == [-2.075]
  assert snapped("1.0000001*x0*x1 - 1.783e-10*x0 + x1") == [1.0]
  assert snapped("-0.05*x0*(x0 - 3.426e-7) - sin(x1)") == [-0.05]
  # constants that change the fit stay: a small real coefficient, and one near a pole
  assert snapped("-3.289e-6*x0*(x0 - 2.42e4)") == pytest.approx([-3.289e-6, -2.42e4])
  node = _tree("1/(x0 + 1e-5)")
  assert fit.snap(node, X, evaluate.evaluate_numpy(node, X)) is node
  # a dead summand whose constant is not small (exp(-431 - x0) = 3.6e-188 exp(-x0)) goes
  assert snapped("-2.075*cos(x1)**3 + exp(-431 - x0)") == [-2.075]
  # all drops and snaps of a node together cost at most tol: of two terms that each cost
  # ~4e-10 of the NMSE, one goes
  assert len(snapped("x0 + 2e-5*x1 + 2e-5*x1**2")) == 1
  # the same law in other units snaps the same: with y near 1e-12 the NMSE's fixed floor of
  # 1e-12 was most of y's variance, and every term went (3e-12 x0 + 1e-12 x1^2 -> 0)
  assert snapped("3e-12*x0 + 1e-12*x1**2") == [3e-12, 1e-12]
  # (its 1.0000001e-12 is not near a whole number, but near the other constant, as 1.0000001
  # and 1 are)
  assert snapped("1.0000001e-12*x0*x1 - 1.783e-22*x0 + 1e-12*x1") == [1e-12, 1e-12]


def test_one_constant_fitted_apart_in_two_places_is_one():
  # I.13.4's m (u^2 + v^2 + w^2) / 2 as 0.5 m u^2 + 0.5000000002 m v^2 + ...: SymPy could not
  # write 0.5 once (18 nodes for 13)
  rng = np.random.default_rng(3)
  X = rng.uniform(1, 5, (300, 3))
  def snapped(text):
    node = _tree(text)
    return E.constants(fit.snap(node, X, evaluate.evaluate_numpy(node, X)))
  c = snapped("0.5*x0*x1**2 + 0.5000000002*x0*x2**2 - 0.4999999998*x0")
  assert len(c) == 3 and len({abs(v) for v in c}) == 1 and sorted(np.sign(c)) == [-1, 1, 1]
  c = sorted(snapped("2.7182*x1 - 2.71820003*x2"))
  assert c in ([-2.7182, 2.7182], [-2.71820003, 2.71820003])
  # constants a measurable way apart stay apart
  assert sorted(snapped("0.5*x0*x1**2 + 0.5002*x0*x2**2")) == [0.5, 0.5002]
  assert sorted(snapped("3.3*x0 + 3.3004*x1")) == [3.3, 3.3004]
  # a whole number stays whole: 1.0000001 x1 snaps to x1, not to the 1.00008 beside it (which
  # costs nothing measurable where x0 spans 1-500 and x1 1-5)
  X[:, 0] *= 100.0
  assert snapped("1.00008*x0 + 1.0000001*x1") == [1.00008, 1.0]


def test_subsampled_lm_polishes_to_the_all_rows_fit():
  # 1,000 rows: LM steps on 128 of them, then polish steps on all; the result is the all-rows
  # least-squares fit (noisy data: the subsample's own optimum is ~1% off, beyond rtol).
  rng = np.random.default_rng(7)
  X = rng.uniform(-2, 2, (1000, 1))
  y = 1.7 * np.exp(0.6 * X[:, 0]) + 0.3 + rng.normal(0, 0.2, 1000)
  nodes = [E.from_prefix("add mul C exp mul C x0 C".split()),
           E.from_prefix("add mul C x0 C".split())]
  sub = fit.fit_batch(nodes, X, y, steps=20, restarts=1, sub_rows=128, polish=4, linear=False)
  full = fit.fit_batch(nodes, X, y, steps=20, restarts=1, sub_rows=0, linear=False)
  sp = [fit.fit_constants(n, X, y, 300) for n in nodes]
  for a, b, c in zip(sub, full, sp):
    assert a.ok and b.ok
    np.testing.assert_allclose(a.values, c.values, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(b.values, c.values, rtol=1e-3, atol=1e-4)


def test_the_polish_starts_from_each_trees_best_subsample_start():
  # sin(C x) * C with y = 2 sin(3 x): from C = 0.5 the LM stalls in a local minimum, from 2.9
  # it reaches the law; the polish on all rows continues the better start, wherever it is.
  from lee_jax import program
  X = np.linspace(-3, 3, 600)[:, None]
  y = 2.0 * np.sin(3.0 * X[:, 0])
  node = E.from_prefix("mul sin mul C x0 C".split())
  prog = program.compile_trees([node], 1, 2, 16, 64, width=2)
  Xp, yp, wp = fit._padded_rows(X, y, None, 640)
  pick = np.arange(0, 600, 5)[:128]
  Xs, ys, ws = fit._padded_rows(X[pick], y[pick], None, 128)
  lm = fit._lm_jit(20, 4, False)
  for good in (0, 1):
    starts = np.zeros((16, 2, 2), np.float32)
    starts[:, good], starts[:, 1 - good] = (2.9, 1.0), (0.5, 1.0)
    cmask = np.zeros((16, 2), bool)
    cmask[0] = True
    c, f, _ = (np.asarray(a) for a in lm(*prog.arrays(), np.int32(prog.pre), cmask, starts,
                                        Xp, yp, wp, Xs, ys, ws))
    assert c.shape == (16, 1, 2) and f.shape == (16, 1)
    np.testing.assert_allclose(np.abs(c[0, 0]), [3.0, 2.0], rtol=1e-3)
    assert f[0, 0] < 1e-8


def test_targets_beyond_float32_go_to_scipy():
  # y up to ~1e43: float32 cannot hold it, so the LM would fail where float64 fits exactly.
  X = np.random.default_rng(8).uniform(0, 2, (80, 1))
  y = 2.0 * np.exp(50.0 * X[:, 0])
  node = E.with_constants(E.from_prefix("mul C exp mul C x0".split()), [1.5, 49.0])
  (r,) = fit.fit_batch([node], X, y)
  assert r.ok and r.nmse < 1e-12
  np.testing.assert_allclose(r.values, [2.0, 50.0], rtol=1e-6)


def test_batched_fitter_failures_are_results_not_exceptions():
  X = np.random.default_rng(6).uniform(1, 2, (60, 1))
  y = 3.0 * X[:, 0] + 1.0
  nodes = [E.from_prefix("add mul C x0 C".split()),
           E.with_constants(E.from_prefix("add mul C x0 C".split()), [1e99, 2.0]),  # inf in float32
           E.with_constants(E.from_prefix("exp mul C x0".split()), [1e30]),  # overflows everywhere
           E.from_prefix("log neg x0".split())]  # no constants, NaN everywhere
  res = fit.fit_batch(nodes, X, y)
  assert res[0].ok and res[0].nmse < 1e-6  # float32 LM on a near-collinear c*x + c
  assert not res[2].ok and not res[3].ok
  for r in res[1:]:
    assert not r.ok or np.isfinite(r.nmse)
    assert np.all(np.isfinite(r.values))


def test_batched_fitter_sends_many_constant_candidates_to_scipy():
  X = np.random.default_rng(5).uniform(1, 2, (50, 1))
  y = X[:, 0] * 9.0
  many = E.from_prefix(("add " * 9 + "mul C x0 " + "C " * 9).split())  # 10 constants
  (r,) = fit.fit_batch([many], X, y)
  assert len(r.values) == 10 > fit.MAX_CONSTS and r.ok and r.nmse < 1e-8


def test_weighted_fits_follow_the_heavy_rows_with_either_fitter():
  # y = 2 x on half the rows, 5 x on the other half: unweighted, c x fits between; weighted
  # towards the first half, it fits 2.
  rng = np.random.default_rng(0)
  X = rng.uniform(0.5, 2.0, (600, 1))
  y = np.where(np.arange(600) < 300, 2.0, 5.0) * X[:, 0]
  w = np.where(np.arange(600) < 300, 1.0, 1e-6)
  start = E.from_prefix("mul C x0".split())
  plain = fit.fit_constants(start, X, y, 100)
  heavy = fit.fit_constants(start, X, y, 100, weights=w)
  assert 2.5 < plain.values[0] < 4.5 and heavy.values[0] == pytest.approx(2.0, abs=1e-3)
  # The weighted nmse: weighted MSE over the weighted variance of y.
  wn = w / w.mean()
  r = heavy.values[0] * X[:, 0] - y
  wvar = np.mean(wn * (y - np.mean(wn * y)) ** 2)
  assert heavy.nmse == pytest.approx(np.mean(wn * r * r) / wvar, rel=1e-6)
  batched = fit.fit_batch([start], X, y, weights=w)[0]
  assert batched.ok and batched.values[0] == pytest.approx(2.0, abs=1e-3)
  assert fit.fit_batch([start], X, y)[0].values[0] == pytest.approx(plain.values[0], rel=1e-4)
  # Weights of one are no weights (scipy: to the bit).
  same = fit.fit_constants(start, X, y, 100, weights=np.ones(600))
  assert same.values[0] == plain.values[0] and same.nmse == plain.nmse
  with pytest.raises(ValueError, match="non-negative"):
    fit.fit_constants(start, X, y, 100, weights=-w)


@pytest.mark.parametrize("prefix,affine", [
    ("add mul C sin x0 C", True),
    ("mul add x1 C x0", True),  # (x1 + c) x0
    ("sub neg C div mul C x1 cos x0", True),  # -c - c x1 / cos(x0)
    ("sin x0", True),  # no constants
    ("sin mul C x0", False),
    ("div x0 C", False),  # a constant in a denominator
    ("mul C mul C x0", False),  # a product of constants
    ("exp add x0 C", False),
])
def test_affine_in_constants(prefix, affine):
  assert fit.affine_in_constants(E.from_prefix(prefix.split())) is affine


def test_least_squares_solves_affine_trees_exactly():
  rng = np.random.default_rng(9)
  X = rng.uniform(-2, 2, (200, 2))
  y = 2.5 * np.sin(X[:, 0]) - 1.5 * X[:, 1] * X[:, 0] + 0.7
  var = float(np.var(y))
  node = E.from_prefix("add add mul C sin x0 mul mul C x1 x0 C".split())  # decoded: all 1
  r = fit.fit_linear(node, X, y, None, var)
  assert r.ok and r.nmse < 1e-25
  np.testing.assert_allclose(r.values, [2.5, -1.5, 0.7], rtol=1e-12)
  assert E.constants(r.node) == pytest.approx(r.values, rel=0, abs=0)
  assert r.nmse == pytest.approx(fit._nmse(r.node, X, y, None, var), abs=1e-25)
  # A misfit skeleton gets the least-squares optimum: no local search can do better.
  off = E.from_prefix("add mul C x0 C".split())
  lin = fit.fit_linear(off, X, y, None, var)
  A = np.stack([X[:, 0], np.ones(200)], 1)
  best = np.linalg.lstsq(A, y, rcond=None)[0]
  np.testing.assert_allclose(lin.values, best, rtol=1e-10)
  assert lin.nmse <= fit.fit_constants(off, X, y, 300).nmse + 1e-12
  # Weighted: the weighted least-squares optimum, and the weighted nmse.
  w = fit.row_weights(rng.uniform(0.1, 3.0, 200), 200)
  wlin = fit.fit_linear(off, X, y, w, fit._weighted_var(y, w))
  sw = np.sqrt(w)
  np.testing.assert_allclose(wlin.values, np.linalg.lstsq(A * sw[:, None], y * sw, rcond=None)[0],
                             rtol=1e-10)
  assert wlin.nmse == pytest.approx(fit._nmse(wlin.node, X, y, w, fit._weighted_var(y, w)))
  # Two constants with one column (c + c + x0): rank-deficient, still the optimum.
  dup = fit.fit_linear(E.from_prefix("add add C C x0".split()), X, 3.0 + X[:, 0], None, 1.0)
  assert dup.ok and dup.nmse < 1e-25 and sum(dup.values) == pytest.approx(3.0)


@pytest.mark.parametrize("unit", [1e-8, 1e-20, 1e8])
def test_least_squares_does_not_depend_on_the_columns_units(unit):
  # numpy's rank cut-off, relative to the largest singular value, dropped x0^2 at x0 ~ 1e-8
  # beside the constant's column: c0 + c1 x0^2 fitted the mean (nmse 1.0).
  x = np.random.default_rng(11).uniform(1, 5, (300, 1))
  y = 5.0 + 3.0 * x[:, 0] ** 2
  r = fit.fit_linear(E.from_prefix("add C mul C sq x0".split()), x * unit, y, None, float(np.var(y)))
  assert r.ok and r.nmse < 1e-20
  np.testing.assert_allclose(r.values, [5.0, 3.0 / unit ** 2], rtol=1e-9)
  # the helper itself: the min-norm answer where columns repeat, as numpy's
  A = np.c_[np.ones(300), np.ones(300), x * unit]
  np.testing.assert_allclose(fit.lstsq(A, 4.0 + x[:, 0]), [2.0, 2.0, 1.0 / unit], rtol=1e-9)


def test_least_squares_declines_what_it_cannot_solve():
  X = np.random.default_rng(10).uniform(-2, 2, (100, 1))
  y = np.exp(0.5 * X[:, 0])
  assert fit.fit_linear(E.from_prefix("exp mul C x0".split()), X, y, None, 1.0) is None
  # log(x0) is NaN on the negative rows for any constants: not solved here...
  log = E.from_prefix("add mul C log x0 C".split())
  assert fit.fit_linear(log, X, y, None, 1.0) is None
  # ... and the batched fitter reports it as the scipy path does
  (r,) = fit.fit_batch([log], X, y)
  assert not r.ok and r.reason == fit.fit_constants(log, X, y, 50).reason


def test_batched_fitter_solves_affine_candidates_by_least_squares(monkeypatch):
  rng = np.random.default_rng(11)
  X = rng.uniform(-2, 2, (300, 2))
  y = 1.5 * np.cos(0.8 * X[:, 0]) - 0.4 * X[:, 1] + 0.9
  nodes = [E.from_prefix(t.split()) for t in (
      "add mul C cos mul C x0 add mul C x1 C",  # nonlinear (c inside cos): LM
      "add mul C cos x0 C",  # affine: least squares
      "cos x0",  # no constants: scored
  )]
  lm_trees = []
  start = fit._start_group

  def spy(nodes, prog, *args):
    lm_trees.extend(nodes)
    return start(nodes, prog, *args)

  monkeypatch.setattr(fit, "_start_group", spy)
  res = fit.fit_batch(nodes, X, y)
  assert lm_trees == [nodes[0]]
  np.testing.assert_allclose(res[0].values, [1.5, 0.8, -0.4, 0.9], rtol=1e-4)
  assert res[1].values == pytest.approx(fit.fit_linear(nodes[1], X, y, None, np.var(y)).values)
  assert res[2].ok and res[2].iterations == 0 and res[2].node is nodes[2]
  assert res[2].nmse == pytest.approx(fit.fit_constants(nodes[2], X, y, 50).nmse, rel=1e-12)
  # linear=False: the LM fits the affine one too, to the same optimum (float32: ~1e-6)
  off = fit.fit_batch(nodes, X, y, linear=False)
  assert sorted(map(str, lm_trees[1:])) == sorted(map(str, nodes[:2]))  # (two slot classes)
  assert off[1].nmse == pytest.approx(res[1].nmse, rel=1e-4, abs=1e-7)
  assert res[1].nmse <= off[1].nmse
