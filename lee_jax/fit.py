"""Constant fitting: scipy L-BFGS-B on the training fold (paper §3.5, App. H).

The objective is the mean squared error divided by var(y) (so tolerances mean the same on
every dataset; the minimiser is the MSE's). Tolerances are tight (ftol 1e-13 against an
objective of scale 1 - R2) so exact skeletons reach R2 ~ 1 - 1e-12 instead of stopping at
scipy's default 2e-9. Its gradient in the constants is exact, from a
forward-mode pass over the tree (`value_and_jacobian`), so one objective call is one pass
instead of scipy's (n_constants + 1) finite-difference passes.

Nothing a decoder emits can raise here: a start that is non-finite on the fit rows, an
overflow during the search, or any scipy error is a `FitResult` with ok=False and a reason,
which the search counts.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.optimize

from lee_jax import expr as E
from lee_jax import vocab

_BAD = 1e30  # objective value for non-finite predictions (finite: L-BFGS-B backtracks from it)


@dataclasses.dataclass(frozen=True)
class FitResult:
  node: E.Node  # the tree with the fitted constants (the input tree when not ok)
  values: np.ndarray  # fitted constants in prefix order
  nmse: float  # MSE / var(y) on the fit rows (inf when not ok)
  iterations: int
  ok: bool
  reason: str = ""  # why not ok: 'nonfinite_start', 'nonfinite_end', 'error: ...'


def _const_slots(node: E.Node) -> dict[int, int]:
  """id(constant node) -> index in prefix order."""
  return {id(n): i for i, n in enumerate(m for m in E.walk(node) if m.name in ("const", "C"))}


def value_and_jacobian(node: E.Node, X: np.ndarray, values: np.ndarray):
  """Tree on X [N, k] with constants `values` -> (y [N], dy/dvalues [N, n]) in float64.

  Same protected semantics as evaluate.evaluate_numpy: non-finite values become NaN.
  """
  slots = _const_slots(node)
  n_c, n = len(values), X.shape[0]

  def ev(nd: E.Node):
    if nd.name in ("const", "C"):
      j = np.zeros((n, n_c))
      j[:, slots[id(nd)]] = 1.0
      return np.full(n, values[slots[id(nd)]]), j
    if vocab.is_variable(nd.name):
      return X[:, vocab.variable_index(nd.name)], np.zeros((n, n_c))
    args = [ev(c) for c in nd.children]
    a, da = args[0]
    name = nd.name
    if name == "add":
      b, db = args[1]
      v, d = a + b, da + db
    elif name == "sub":
      b, db = args[1]
      v, d = a - b, da - db
    elif name == "mul":
      b, db = args[1]
      v, d = a * b, da * b[:, None] + a[:, None] * db
    elif name == "div":
      b, db = args[1]
      v = a / b
      d = (da - v[:, None] * db) / b[:, None]
    else:
      v = vocab.NUMPY_FN[name](a)
      d = _unary_derivative(name, a, v)[:, None] * da
    bad = ~np.isfinite(v)
    return np.where(bad, np.nan, v), np.where(bad[:, None], np.nan, d)

  with np.errstate(all="ignore"):
    return ev(node)


def _unary_derivative(name: str, a: np.ndarray, v: np.ndarray) -> np.ndarray:
  return {
      "sin": lambda: np.cos(a), "cos": lambda: -np.sin(a), "tan": lambda: 1 + v * v,
      "tanh": lambda: 1 - v * v, "exp": lambda: v, "log": lambda: 1 / a,
      "sqrt": lambda: 0.5 / v, "sq": lambda: 2 * a, "cube": lambda: 3 * a * a,
      "abs": lambda: np.sign(a), "neg": lambda: -np.ones_like(a),
  }[name]()


def fit_constants(node: E.Node, X: np.ndarray, y: np.ndarray, max_iter: int,
                  exact_gradient: bool = True) -> FitResult:
  """Fit the constants of `node` to (X, y), starting from its current values.

  exact_gradient=False lets scipy take finite differences instead (the slower reference that
  benchmarks compare against).
  """
  X, y = np.asarray(X, np.float64), np.asarray(y, np.float64)
  start = np.asarray(E.constants(node), np.float64)
  scale = max(float(np.var(y)), 1e-12)

  def objective(c):
    pred, jac = value_and_jacobian(node, X, c)
    r = pred - y
    if not np.all(np.isfinite(r)) or not np.all(np.isfinite(jac)):
      return _BAD, np.zeros_like(c)
    with np.errstate(all="ignore"):
      f = float(np.mean(r * r)) / scale
      g = 2.0 * (r @ jac) / (len(y) * scale)
    if not (np.isfinite(f) and np.all(np.isfinite(g))):
      return _BAD, np.zeros_like(c)
    return f, g

  try:
    f0, _ = objective(start)
    if f0 >= _BAD:
      return FitResult(node, start, np.inf, 0, False, "nonfinite_start")
    if len(start) == 0 or max_iter <= 0:
      return FitResult(node, start, f0, 0, True)
    fun = objective if exact_gradient else (lambda c: objective(c)[0])
    res = scipy.optimize.minimize(fun, start, jac=exact_gradient or None, method="L-BFGS-B",
                                  options={"maxiter": int(max_iter), "ftol": 1e-13, "gtol": 1e-10})
    values = np.asarray(res.x, np.float64)
    f = float(res.fun)
    if f >= _BAD or not np.all(np.isfinite(values)):
      return FitResult(node, start, np.inf, int(res.nit), False, "nonfinite_end")
    if f > f0:  # line-search trouble can end above the start; keep the better point
      values, f = start, f0
    return FitResult(E.with_constants(node, values), values, f, int(res.nit), True)
  except (ArithmeticError, ValueError, np.linalg.LinAlgError) as e:
    return FitResult(node, start, np.inf, 0, False, f"error: {type(e).__name__}")


# --- batched JAX fitter (--fitter=jax) -------------------------------------------------------
#
# All candidates of a call are fitted at once: each skeleton is written with one `C` token per
# constant (so the stack machine's scan is short), the constants are a masked [M] vector, and a
# fixed number of Levenberg-Marquardt steps runs under jit, vmapped over restarts and
# candidates. The residual's Jacobian in the constants comes from forward-mode autodiff through
# the JAX evaluator. Shapes are bucketed (candidates, tokens, rows) so a search compiles a few
# times. float32: exact skeletons reach R2 ~ 1 - 1e-7 rather than scipy's 1 - 1e-12.

MAX_CONSTS = 8  # candidates with more constants go to scipy


def skeleton_ids(node: E.Node) -> list[int]:
  """BOS, prefix with every constant as one `C` token, EOS."""
  toks = ["C" if n.name in ("const", "C") else n.name for n in E.walk(node)]
  return [vocab.BOS] + [vocab.TOKEN_TO_ID[t] for t in toks] + [vocab.EOS]


def _lm_one(ids, pos, cmask, c0, X, y, rmask, steps: int):
  """LM from one start. ids [L], pos/cmask/c0 [M], X [N, D], y/rmask [N] -> (c [M], loss)."""
  from lee_jax import evaluate  # deferred: keeps `import lee_jax.fit` light for scipy users
  import jax
  import jax.numpy as jnp

  n = jnp.maximum(rmask.sum(), 1)
  mean = jnp.sum(jnp.where(rmask, y, 0.0)) / n
  var = jnp.maximum(jnp.sum(jnp.where(rmask, (y - mean) ** 2, 0.0)) / n, 1e-12)
  scale = 1.0 / jnp.sqrt(n * var)  # sum of squared residuals = MSE / var(y)

  def resid(c):
    consts = jnp.ones(ids.shape, c.dtype).at[pos].set(jnp.where(cmask, c, 1.0), mode="drop")
    y_hat, _ = evaluate.evaluate_one(ids, consts, X)
    return jnp.where(rmask, y_hat - y, 0.0) * scale

  def loss(r):
    return jnp.where(jnp.all(jnp.isfinite(r)), jnp.sum(r * r), jnp.inf)

  eye = jnp.eye(c0.shape[0], dtype=c0.dtype)

  def step(carry, _):
    c, lam, f = carry
    r, J = jax.vmap(lambda t: jax.jvp(resid, (c,), (t,)), out_axes=(None, 1))(eye)
    J = jnp.where(cmask[None] & jnp.isfinite(J), J, 0.0)
    r = jnp.where(jnp.isfinite(r), r, 0.0)
    A = J.T @ J
    g = J.T @ r
    # Marquardt scaling; masked constants get an identity row so the system stays regular.
    A = A + lam * jnp.diag(jnp.diag(A) + 1e-9) + jnp.diag(jnp.where(cmask, 0.0, 1.0))
    delta = jnp.linalg.solve(A, -g)
    c_new = c + jnp.where(cmask & jnp.isfinite(delta), delta, 0.0)
    f_new = loss(resid(c_new))
    better = f_new < f
    c = jnp.where(better, c_new, c)
    f = jnp.where(better, f_new, f)
    lam = jnp.clip(jnp.where(better, lam * 0.3, lam * 10.0), 1e-9, 1e9)
    return (c, lam, f), None

  def not_done(carry):
    i, (c, lam, f) = carry
    # Converged (exact fit, or a lambda that has grown through ~10 rejected steps) or out of steps.
    return (i < steps) & (f > 1e-14) & (lam < 1e6) & jnp.isfinite(f)

  f0 = loss(resid(c0))
  init = (jnp.int32(0), (c0, jnp.asarray(1e-3, c0.dtype), f0))
  _, (c, _, f) = jax.lax.while_loop(not_done, lambda s: (s[0] + 1, step(s[1], None)[0]), init)
  return c, f


_LM_CACHE: dict = {}


def _lm_batch(steps: int):
  """jit(vmap over candidates (vmap over restarts)) of _lm_one, one per step count."""
  import jax

  if steps not in _LM_CACHE:
    over_starts = jax.vmap(lambda ids, pos, cm, c0, X, y, rm: _lm_one(ids, pos, cm, c0, X, y, rm, steps),
                           in_axes=(None, None, None, 0, None, None, None))
    _LM_CACHE[steps] = jax.jit(jax.vmap(over_starts, in_axes=(0, 0, 0, 0, None, None, None)))
  return _LM_CACHE[steps]


def fit_batch(nodes: list[E.Node], X: np.ndarray, y: np.ndarray, steps: int = 30,
              restarts: int = 4, seed: int = 0) -> list[FitResult]:
  """Fit every node's constants at once on the device; one FitResult per node (aligned).

  Restart 0 starts from the decoded constants, the others from c0 + 0.5 (|c0| + 1) eps.
  Nodes with more than MAX_CONSTS constants are fitted by scipy L-BFGS-B (`fit_constants`).
  """
  from lee_jax import evaluate  # deferred, as in _lm_one

  X, y = np.asarray(X, np.float64), np.asarray(y, np.float64)
  out: list[FitResult | None] = [None] * len(nodes)
  batch = []
  for i, node in enumerate(nodes):
    n_c = len(E.constants(node))
    if n_c > MAX_CONSTS:
      out[i] = fit_constants(node, X, y, max_iter=100)
    else:
      batch.append(i)
  if batch:
    seqs = [skeleton_ids(nodes[i]) for i in batch]
    b, L = evaluate.batch_bucket(len(batch), 8), evaluate.batch_bucket(max(len(s) for s in seqs), 16)
    ids = np.full((b, L), vocab.PAD, np.int32)
    ids[:, :3] = [vocab.BOS, vocab.FIRST_VAR_ID, vocab.EOS]  # padding rows: a harmless "x0"
    pos = np.full((b, MAX_CONSTS), L, np.int32)  # L is out of range: dropped
    cmask = np.zeros((b, MAX_CONSTS), bool)
    c0 = np.zeros((b, MAX_CONSTS))
    for row, (i, s) in enumerate(zip(batch, seqs)):
      ids[row] = vocab.PAD
      ids[row, :len(s)] = s
      p = [k for k, t in enumerate(s) if t == vocab.C_ID]
      pos[row, :len(p)] = p
      cmask[row, :len(p)] = True
      c0[row, :len(p)] = E.constants(nodes[i])
    # Only as many constant slots (= forward-mode tangents) as this batch needs.
    mc = evaluate.batch_bucket(int(cmask.sum(axis=1).max()), 1)
    pos, cmask, c0 = pos[:, :mc], cmask[:, :mc], c0[:, :mc]
    rng = np.random.default_rng(seed)
    eps = rng.standard_normal((b, restarts, mc))
    eps[:, 0] = 0.0
    with np.errstate(over="ignore"):  # a decoded 1e99 becomes inf: that start just fails
      starts = (c0[:, None] + 0.5 * (np.abs(c0[:, None]) + 1.0) * eps).astype(np.float32)
    n = len(y)
    m = evaluate.batch_bucket(n, 256)
    Xp = np.zeros((m, max(X.shape[1], 1)), np.float32)
    Xp[:n] = X
    yp = np.zeros(m, np.float32)
    yp[:n] = y
    with np.errstate(over="ignore"):
      c, f = _lm_batch(steps)(ids, pos, cmask, starts, Xp, yp, np.arange(m) < n)
    c, f = np.asarray(c, np.float64), np.asarray(f, np.float64)
    for row, i in enumerate(batch):
      k = int(np.argmin(f[row]))
      n_c = int(cmask[row].sum())
      if not np.isfinite(f[row, k]):
        out[i] = FitResult(nodes[i], c0[row, :n_c], np.inf, steps, False, "nonfinite_end")
        continue
      values = c[row, k, :n_c]
      out[i] = FitResult(E.with_constants(nodes[i], values) if n_c else nodes[i], values,
                         float(f[row, k]), steps, True)
  return out  # type: ignore[return-value]
