"""program.py: scheduled batch evaluation equals the reference evaluators; its Jacobian is right."""

import numpy as np
import pytest

from lee_jax import evaluate
from lee_jax import expr as E
from lee_jax import fit
from lee_jax import grammar
from lee_jax import program


def _trees(n, max_vars=3, seed=0):
  rng = np.random.default_rng(seed)
  out = []
  while len(out) < n:
    node, k = grammar.sample(rng)
    if k <= max_vars:
      out.append(node)
  return out


def _two_starts(trees, n_trees, second):
  """consts [n_trees, 2, 8]: each tree's own constants, then second(them); ones elsewhere."""
  consts = np.ones((n_trees, 2, 8), np.float32)
  for b, t in enumerate(trees):
    c = np.asarray(E.constants(t))
    consts[b, 0, :len(c)] = c
    consts[b, 1, :len(c)] = second(c)
  return consts


def _close(a, b):
  """Equal where both are finite (float32 rounding aside), and finite in the same places."""
  assert np.array_equal(np.isfinite(a), np.isfinite(b))
  fin = np.isfinite(a)
  np.testing.assert_allclose(a[fin], b[fin], rtol=2e-4, atol=2e-4)


def test_batch_equals_the_stack_machine_and_numpy():
  trees = _trees(120)
  X = np.random.default_rng(1).uniform(-5, 5, (64, 3)).astype(np.float32).astype(np.float64)
  got = program.evaluate(trees, X)
  ids = np.zeros((len(trees), 80), np.int32)
  for i, t in enumerate(trees):
    s = E.to_ids(t)
    ids[i, :len(s)] = s
  stack, _ = evaluate.evaluate_ids(ids, X)
  # Sines of arguments beyond SIN_COS_EXACT are polynomial approximations here, XLA's
  # float32 functions there (neither means much): compare the other rows.
  wild = np.zeros(got.shape, bool)
  for i, t in enumerate(trees):
    for n in E.walk(t):
      if n.name in ("sin", "cos", "tan"):
        with np.errstate(all="ignore"):
          wild[i] |= np.abs(evaluate.evaluate_numpy(n.children[0], X)) > program.SIN_COS_EXACT / 2
  assert wild.mean() < 0.05
  _close(got[~wild], stack[~wild])
  # The float64 reference agrees except where float32 itself is the issue (an intermediate
  # overflow, sin of a huge argument): nearly everywhere on moderate values.
  ref = np.stack([evaluate.evaluate_numpy(t, X) for t in trees])
  tame = np.isfinite(ref) & (np.abs(np.nan_to_num(ref)) < 1e3)
  with np.errstate(invalid="ignore"):
    agree = np.abs(got - ref) <= 1e-3 * (1 + np.abs(ref))
  assert tame.sum() > 3000 and agree[tame].mean() > 0.98


def test_branching_and_select_all_agree():
  trees = _trees(40, seed=2)
  X = np.random.default_rng(3).uniform(-3, 3, (32, 3))
  _close(program.evaluate(trees, X), program.evaluate(trees, X, select_all=True))


def test_every_operator_and_domain_errors():
  X = np.array([[-2.0], [0.0], [0.5], [3.0]])
  for op in ("sin", "cos", "tan", "tanh", "exp", "log", "sqrt", "sq", "cube", "abs", "neg"):
    t = E.from_prefix([op, "x0"])
    _close(program.evaluate([t], X)[0], evaluate.evaluate_numpy(t, X).astype(np.float32))
  for op in ("add", "sub", "mul", "div"):
    t = E.from_prefix([op, "x0", "add", "x0", "C"])
    _close(program.evaluate([t], X)[0], evaluate.evaluate_numpy(t, X).astype(np.float32))
  # log of a negative and division by zero are NaN, and NaN reaches the root.
  y = program.evaluate([E.from_prefix("add C log x0".split())], X)[0]
  assert np.isnan(y[0]) and np.isnan(y[1]) and np.isfinite(y[2:]).all()


def test_jacobian_matches_the_numpy_forward_mode():
  trees = [t for t in _trees(60, seed=4) if E.constants(t)][:20]
  X = np.random.default_rng(5).uniform(-2, 2, (48, 3))
  M = max(len(E.constants(t)) for t in trees)
  prog = program.compile_trees(trees, 3, M)
  consts = np.ones((len(trees), 2, M), np.float32)
  for b, t in enumerate(trees):
    c = np.asarray(E.constants(t))
    consts[b, 0, :len(c)] = c
    consts[b, 1, :len(c)] = c * 0.9  # a second start: its own values and derivatives
  y, J = program.run(*prog.arrays(), consts, X.astype(np.float32), jacobian=True)
  y, J = np.asarray(y), np.asarray(J)
  checked = 0
  for b, t in enumerate(trees):
    n_c = len(E.constants(t))
    for r in range(2):
      v, jac = fit.value_and_jacobian(t, X, consts[b, r, :n_c].astype(np.float64))
      rows = np.all(np.isfinite(jac), axis=1) & np.isfinite(v) & (np.abs(v) < 1e3)
      rows &= np.all(np.abs(jac) < 1e3, axis=1)
      np.testing.assert_allclose(y[b, r, rows], v[rows], rtol=1e-3, atol=1e-3)
      np.testing.assert_allclose(J[b, r, :n_c][:, rows].T, jac[rows], rtol=2e-3, atol=2e-3)
      assert np.all(J[b, r, n_c:][:, rows] == 0)  # unused slots have no derivative
      checked += rows.sum()
  assert checked > 500


def test_padding_shared_subtrees_and_leaf_roots():
  x0 = E.from_prefix(["x0"])
  inner = E.from_prefix("mul C x0".split())
  shared = E.Node("add", (inner, inner))  # one subtree object used twice: two constants
  trees = [x0, E.from_prefix(["C"]), shared]
  prog = program.compile_trees(trees, 1, 2, n_trees=8)
  assert prog.roots.shape == (8,) and len(prog.classes) >= prog.used
  consts = np.zeros((8, 1, 2), np.float32)
  consts[1, 0, 0] = 4.0
  consts[2, 0] = [2.0, 3.0]
  X = np.array([[1.0], [2.0]], np.float32)
  y = np.asarray(program.run(*prog.arrays(), consts, X))[:, 0]
  np.testing.assert_allclose(y[:3], [[1, 2], [4, 4], [5, 10]])
  np.testing.assert_allclose(y[3:], 1.0)  # padding trees read the ones row


def test_bad_trees_are_clear_errors():
  with pytest.raises(ValueError, match="more than 1 constants"):
    program.compile_trees([E.from_prefix("add C C".split())], 1, 1)
  with pytest.raises(ValueError, match="uses x2 but the data has 2 variables"):
    program.compile_trees([E.from_prefix(["x2"])], 2, 1)
  with pytest.raises(ValueError, match="n_trees"):
    program.compile_trees([E.from_prefix(["x0"])] * 3, 1, 1, n_trees=2)


def test_schedule_packs_nodes_into_few_instructions():
  trees = _trees(64, seed=6)
  prog = program.compile_trees(trees, 3, 8)
  internal = sum(1 for t in trees for n in E.walk(t) if n.children)
  # One instruction per node would be `internal`; packing must do far better.
  assert prog.used < internal / 4


def test_schedule_runs_the_longest_path_first():
  # Three shallow sines are ready beside the deep tree's innermost exp. Taking the class with
  # the most ready nodes (the sines) first costs a fifth instruction; starting the long path
  # lets the shallow sines share an instruction with the deep tree's first sine.
  deep = E.from_prefix("sin exp sin exp x0".split())
  shallow = [E.from_prefix("sin x0".split())] * 3
  prog = program.compile_trees([deep] + shallow, 1, 1)
  assert prog.used == 4  # the deep tree's depth: nothing shorter exists
  X = np.linspace(-1, 1, 5)[:, None]
  y = np.asarray(program.run(*prog.arrays(), np.ones((4, 1, 1), np.float32), X))[:, 0]
  want = np.stack([evaluate.evaluate_numpy(t, X) for t in [deep] + shallow])
  np.testing.assert_allclose(y, want, rtol=1e-5)


def test_lane_width_changes_the_schedule_not_the_values():
  trees = [t for t in _trees(40, seed=12) if E.constants(t)][:12]
  X = np.random.default_rng(13).uniform(-2, 2, (24, 3))
  consts = _two_starts(trees, 12, lambda c: c * 0.8)
  progs = {w: program.compile_trees(trees, 3, 8, n_trees=12, width=w) for w in (1, 2, 8)}
  assert progs[1].width == 1 and progs[1].lanes.shape == (len(progs[1].classes), 1)
  internal = sum(1 for t in trees for n in E.walk(t) if n.children)
  assert progs[1].used == internal  # one node per instruction
  assert progs[8].used < progs[2].used < progs[1].used
  ref_y, ref_J = (np.asarray(a) for a in program.run(*progs[8].arrays(), consts,
                                                     X.astype(np.float32), jacobian=True))
  for w in (1, 2):
    y, J = program.run(*progs[w].arrays(), consts, X.astype(np.float32), jacobian=True)
    np.testing.assert_array_equal(np.asarray(y), ref_y)  # same operations per node
    np.testing.assert_array_equal(np.asarray(J), ref_J)
    np.testing.assert_array_equal(program.run_numpy(progs[w], consts, X),
                                  program.run_numpy(progs[8], consts, X))


def _depth(t):  # operators on the longest root-to-leaf path
  return 1 + max(map(_depth, t.children)) if t.children else 0


def test_level_schedule_runs_one_instruction_per_level_with_the_same_values():
  trees = [t for t in _trees(40, seed=12) if E.constants(t)][:12] + [E.from_prefix(["x1"])]
  X = np.random.default_rng(13).uniform(-2, 2, (24, 3))
  consts = _two_starts(trees, 16, lambda c: c * 0.8)
  lanes = program.compile_trees(trees, 3, 8, n_trees=16, width=2)
  levels = program.compile_trees(trees, 3, 8, n_trees=16, width=None, levels=True)
  assert levels.used == max(map(_depth, trees)) < lanes.used  # as many steps as the depth
  assert levels.classes.shape == levels.lanes.shape == (len(levels.classes), levels.width)
  assert len({int(c) for c in levels.classes[0]}) > 1  # one step mixes operator classes
  want_y, want_J = (np.asarray(a) for a in program.run(*lanes.arrays(), consts,
                                                       X.astype(np.float32), jacobian=True))
  for unroll in (1, 0):
    y, J = program.run(*levels.arrays(), consts, X.astype(np.float32), jacobian=True,
                       select_all=True, unroll=unroll)
    np.testing.assert_array_equal(np.asarray(y), want_y)  # same operations per node
    np.testing.assert_array_equal(np.asarray(J), want_J)
  np.testing.assert_array_equal(program.run_numpy(levels, consts, X),
                                program.run_numpy(lanes, consts, X))
  np.testing.assert_array_equal(program.evaluate(trees, X, levels=True),
                                program.evaluate(trees, X))
  with pytest.raises(program.ScheduleTooLong):  # a level wider than the lanes
    program.compile_trees(trees, 3, 8, width=levels.width // 4, levels=True)
  with pytest.raises(program.ScheduleTooLong):  # deeper than the instructions
    program.compile_trees(trees, 3, 8, n_instructions=levels.used - 1, width=None, levels=True)
  with pytest.raises(ValueError, match="select_all"):
    program.run(*levels.arrays(), consts, X.astype(np.float32))
  with pytest.raises(ValueError, match="hoist"):
    program.compile_trees(trees, 3, 8, hoist=True, levels=True)


def test_hoisting_runs_constant_free_subtrees_first_and_once():
  shared = "sin mul x0 x1".split()  # constant-free, in three trees: one node when hoisted
  prefixes = [["add", "mul", "C"] + shared + ["C"], ["mul"] + shared + ["exp", "mul", "C", "x2"],
              ["div", "C", "add"] + shared + ["sq", "x2"], "add sin x0 sin x0".split()]
  trees = [E.from_prefix(p) for p in prefixes] + [t for t in _trees(30, seed=15)
                                                  if E.constants(t)][:8]
  plain = program.compile_trees(trees, 3, 8, n_trees=16, width=1)
  hoisted = program.compile_trees(trees, 3, 8, n_trees=16, width=1, hoist=True)
  assert plain.pre == 0 and hoisted.pre > 0
  assert hoisted.used <= plain.used - 3  # sin(x0 * x1) twice less, sin(x0) once less
  X = np.random.default_rng(16).uniform(-2, 2, (20, 3))
  consts = _two_starts(trees, 16, lambda c: c * 0.7 + 0.1)
  want_y, want_J = (np.asarray(a) for a in program.run(*plain.arrays(), consts,
                                                       X.astype(np.float32), jacobian=True))
  y, J = program.run(*hoisted.arrays(), consts, X.astype(np.float32), jacobian=True)
  np.testing.assert_array_equal(np.asarray(y), want_y)  # same operations per node
  np.testing.assert_array_equal(np.asarray(J), want_J)
  np.testing.assert_array_equal(program.run_numpy(hoisted, consts, X),
                                program.run_numpy(plain, consts, X))
  # The first `pre` instructions read no constant and no later output: run once, they serve
  # any constants; skipped on a fresh buffer, the trees that use them come out wrong.
  first_const = 1 + 3
  assert np.all(hoisted.args[:hoisted.pre] < first_const + 16 * 8 + hoisted.pre)
  assert not np.any((hoisted.args[:hoisted.pre] >= first_const)
                    & (hoisted.args[:hoisted.pre] < first_const + 16 * 8))
  arrays = hoisted.arrays()
  buf = program.buffer(16, len(hoisted.classes), (2, 8), X.astype(np.float32), jacobian=True,
                       width=1)
  ran = program.run_on(buf, *arrays[:4], hoisted.pre, np.zeros_like(consts), jacobian=True)[0]
  y2 = program.run_on(ran, *arrays, consts, jacobian=True, first=hoisted.pre)[1]
  np.testing.assert_array_equal(np.asarray(y2), want_y)
  skipped = program.run_on(buf, *arrays, consts, jacobian=True, first=hoisted.pre)[1]
  assert not np.allclose(np.asarray(skipped)[:3], want_y[:3], equal_nan=True)


def test_a_schedule_longer_than_its_class_is_refused():
  trees = _trees(20, seed=14)
  used = program.compile_trees(trees, 3, 8, width=2).used
  exact = program.compile_trees(trees, 3, 8, n_instructions=used, width=2)
  assert exact.used == used and len(exact.classes) == used
  with pytest.raises(program.ScheduleTooLong):
    program.compile_trees(trees, 3, 8, n_instructions=used - 1, width=2)


def test_host_float64_run_equals_the_numpy_reference():
  trees = [t for t in _trees(80, seed=7) if E.constants(t)][:30]
  X = np.random.default_rng(8).uniform(-4, 4, (40, 3))
  M = max(len(E.constants(t)) for t in trees)
  prog = program.compile_trees(trees, 3, M, n_trees=32)
  consts = np.ones((32, 2, M))
  for b, t in enumerate(trees):
    c = np.asarray(E.constants(t))
    consts[b, 0, :len(c)] = c
    consts[b, 1, :len(c)] = c * 1.7 - 0.3
  got = program.run_numpy(prog, consts, X)
  assert got.shape == (32, 2, 40) and got.dtype == np.float64
  for b, t in enumerate(trees):
    n_c = len(E.constants(t))
    for r in range(2):
      want = evaluate.evaluate_numpy(E.with_constants(t, consts[b, r, :n_c]), X)
      np.testing.assert_array_equal(got[b, r], want)  # same operations, same order: exact
  np.testing.assert_array_equal(got[len(trees):], 1.0)  # padding trees read the ones row
  # A hoisted program's host buffer holds its constant-free nodes before any constants are
  # known, and serves one start at a time (the fitter's float64 check: the decoded
  # constants while the LM runs, its winner after) with the same values.
  hoisted = program.compile_trees(trees, 3, M, n_trees=32, hoist=True)
  assert any(is_free for *_, is_free in hoisted.host)
  buf = program.host_buffer(hoisted, X)
  free_rows = np.concatenate([out for *_, out, is_free in hoisted.host if is_free])
  before = buf[free_rows].copy()
  for r in (1, 0):
    np.testing.assert_array_equal(program.run_numpy(hoisted, consts[:, r:r + 1], X, buf)[:, 0],
                                  got[:, r])
  np.testing.assert_array_equal(buf[free_rows], before)  # never rewritten


def test_polynomial_sin_cos_accuracy_and_domain():
  import jax.numpy as jnp
  rng = np.random.default_rng(9)
  for scale, tol in ((1.0, 2e-7), (1e4, 2e-7), (program.SIN_COS_EXACT, 2e-6)):
    x = (rng.uniform(-1, 1, 4096) * scale).astype(np.float32)
    s, c = (np.asarray(v) for v in program.sin_cos(jnp.asarray(x)))
    np.testing.assert_allclose(s, np.sin(x.astype(np.float64)), atol=tol)
    np.testing.assert_allclose(c, np.cos(x.astype(np.float64)), atol=tol)
  # Beyond: finite and in [-1, 1] (the reduction has failed, the value is not a sine);
  # inf and NaN give NaN.
  x = np.array([3e7, -1e30, 3e38, np.inf, -np.inf, np.nan], np.float32)
  s, c = (np.asarray(v) for v in program.sin_cos(jnp.asarray(x)))
  assert np.all(np.abs(s[:3]) <= 1) and np.all(np.abs(c[:3]) <= 1)
  assert np.isnan(s[3:]).all() and np.isnan(c[3:]).all()


def test_unrolled_select_all_loop_is_the_same_program():
  trees = _trees(24, seed=10)
  X = np.random.default_rng(11).uniform(-3, 3, (16, 3)).astype(np.float32)
  prog = program.compile_trees(trees, 3, 8, n_trees=32)
  consts = np.ones((32, 1, 8), np.float32)
  for b, t in enumerate(trees):
    c = E.constants(t)
    consts[b, 0, :len(c)] = c
  one = program.run(*prog.arrays(), consts, X, select_all=True)
  eight = program.run(*prog.arrays(), consts, X, select_all=True, unroll=8)
  np.testing.assert_array_equal(np.asarray(one), np.asarray(eight))
  # unroll=0: no loop at all (one short tree: the compile grows with the schedule's length)
  small = program.compile_trees(trees[4:5], 3, 8, n_trees=2)
  looped = program.run(*small.arrays(), consts[4:6], X, select_all=True)
  every = program.run(*small.arrays(), consts[4:6], X, select_all=True, unroll=0)
  np.testing.assert_array_equal(np.asarray(looped), np.asarray(every))
  np.testing.assert_array_equal(np.asarray(looped)[:1], np.asarray(one)[4:5])
