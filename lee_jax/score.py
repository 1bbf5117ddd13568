"""Candidate scoring: R2, the search score s(e), and batched R2 of many candidates at once.

s(e) = clip(R2_train(e), -1, 1) - alpha * C(e)   (paper §3.5, App. H; alpha = 0.002).

`batched_r2` scores a whole batch of candidates (different skeletons, fitted constants) on
the train and validation rows in one jitted call of the JAX evaluator. Batch and row counts
are padded to fixed buckets so a search compiles it a handful of times, not per call.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from lee_jax import evaluate
from lee_jax import expr as E
from lee_jax import vocab

ROW_BUCKET = 512  # rows are padded to a multiple of this
# A target whose mean is this many times its spread is scored centred (pad_rows): in float32
# 1e8 + 2 sin(x) is the one value 1e8, and every candidate scored R2 1. Below it (every
# shipped dataset: 17 at most) nothing changes, to the bit.
OFFSET_RATIO = 1e3
# A candidate whose values between the training rows leave the range it and the targets
# span at those rows by more than this many spans has a pole (or a blow-up) inside the
# data; see `bounded`.
POLE_FACTOR = 20.0
DENSE_PROBES = 4  # an answer's final pole check uses this many times cfg.probe_points
# Probe segments join a row to one of this many nearest rows (`probe_points`).
PROBE_NEIGHBOURS = 16
PROBE_ROWS = 8192  # segments start from at most this many training rows (a sample beyond)
# A singular part's sign change on a segment is bisected (`crosses_pole`) on at most this
# many of the segments where it changes sign, to 2**-BISECTIONS of the segment: a blow-up
# narrower than a millionth of the gap between neighbouring rows is one no test row of
# their distribution is likely to meet (a fit's residue: -2e-11/y beside a law).
CROSSINGS_CHECKED = 64
BISECTIONS = 20
# ... and there the tree may leave the range it and the targets span at the rows by this
# many spans (points next to a zero are no random sample: a true blow-up is found there).
CROSSING_FACTOR = 1.0


@dataclasses.dataclass(frozen=True)
class Probe:
  """Where the pole guard looks (`probe`): `points` sampled on segments between training
  rows, and the segments themselves, `pairs` [p, 2] of indices into the rows `ends` [m, k]."""
  points: np.ndarray
  ends: np.ndarray
  pairs: np.ndarray


def r2(y: np.ndarray, y_hat: np.ndarray, weights: np.ndarray | None = None) -> float:
  """Coefficient of determination in float64 (weighted by per-row weights if given, as
  sklearn's r2_score(sample_weight=...)); -inf if y_hat has a non-finite entry."""
  y, y_hat = np.asarray(y, np.float64), np.asarray(y_hat, np.float64)
  if not np.all(np.isfinite(y_hat)):
    return -np.inf
  w = np.ones_like(y) if weights is None else np.asarray(weights, np.float64)
  scale = float(np.max(np.abs(y), initial=0.0))
  if scale > 1e100 and np.isfinite(scale):  # R2 is scale-free; squares of 1e200 overflow
    y, y_hat = y / scale, y_hat / scale
  with np.errstate(over="ignore"):  # a y_hat far off overflows to ss_res = inf: R2 -inf
    ss_tot = float(np.sum(w * (y - np.sum(w * y) / np.sum(w)) ** 2))
    ss_res = float(np.sum(w * (y - y_hat) ** 2))
  if ss_tot == 0.0:
    return 1.0 if ss_res == 0.0 else -np.inf
  return 1.0 - ss_res / ss_tot


def probe(X: np.ndarray, n: int, rng: np.random.Generator,
          neighbours: int = PROBE_NEIGHBOURS) -> Probe:
  """The pole guard's probe of training rows X [N, k]: n points between neighbouring rows
  (`probe_points`) and the segments `crosses_pole` follows to the end, each row to each of
  its `neighbours` nearest rows. At most PROBE_ROWS rows (a sample of rng's beyond).

  Not beyond the data's edge: whether a pole one row gap past the last row is wrong (a
  fitted c/t on t in [0.009, 10] is off by orders of magnitude at t = 1e-5) or the law
  (y = 1/x on x in (0, 1], whose rows rise towards it) the rows cannot tell."""
  X = np.asarray(X, np.float64)
  if len(X) > PROBE_ROWS:
    X = X[np.sort(rng.choice(len(X), PROBE_ROWS, replace=False))]
  points = probe_points(X, n, rng, neighbours)
  k = min(neighbours, len(X) - 1)
  if k < 1:
    return Probe(points, X, np.zeros((0, 2), np.int64))
  nearest = _nearest(X.tobytes(), X.shape, k)
  return Probe(points, X, np.stack([np.repeat(np.arange(len(X)), k), nearest.ravel()], axis=1))


def probe_points(X: np.ndarray, n: int, rng: np.random.Generator,
                 neighbours: int = PROBE_NEIGHBOURS) -> np.ndarray:
  """n points on segments from random rows of X [N, k] to one of their `neighbours` nearest
  rows (features scaled to unit spread; float64).

  Points between neighbouring data, where test points of the same distribution fall but
  training points did not: a pole at x = 0 of `c/x` sits between the negative and the
  positive training x when rows lie on both sides of it. Segments stay in the data's convex
  hull, so a linear formula is bounded by its values at the training rows even where
  features are correlated (a bounding-box corner would not be). Neighbours, not random
  pairs: a random pair's segment also crosses gaps that no data enters, and a law with a
  pole there is still right (shearflow1's cot(y) cos(x), whose trajectories stay off y = 0,
  was rejected in every probe draw).
  """
  X = np.asarray(X, np.float64)
  a = rng.integers(len(X), size=n)
  k = min(neighbours, len(X) - 1)
  if k < 1:
    return X[a]
  nearest = _nearest(X.tobytes(), X.shape, k)
  b = nearest[a, rng.integers(k, size=n)]
  return X[a] + rng.random((n, 1)) * (X[b] - X[a])


@functools.lru_cache(maxsize=4)  # a round probes twice (its guard, the final check)
def _nearest(data: bytes, shape: tuple[int, int], k: int) -> np.ndarray:
  """[N, k] indices of each row's k nearest other rows, features scaled to unit spread
  (0.5 s for 8,000 rows of 10 features on a 2-core box)."""
  from scipy.spatial import cKDTree  # deferred: keeps `import lee_jax.score` light

  X = np.frombuffer(data, np.float64).reshape(shape)
  spread = X.std(axis=0)
  Z = X / np.where(spread > 0, spread, 1.0)
  # k + 1: a row's nearest is usually itself (a duplicate row may take its place; a segment
  # of length 0 is harmless).
  return cKDTree(Z).query(Z, k=k + 1)[1][:, 1:]


def bounded(node: E.Node, probe: Probe, X: np.ndarray, y: np.ndarray,
            factor: float = POLE_FACTOR) -> bool:
  """False if the node is non-finite anywhere on the probe points, or leaves the range it
  and the targets span at the training rows (X, y) by more than `factor` times that span
  there, or by more than CROSSING_FACTOR spans next to a zero of one of its singular parts
  between neighbouring rows (`crosses_pole`): a pole or a blow-up between the data."""
  y_hat = evaluate.evaluate_numpy(node, probe.points)
  if not np.all(np.isfinite(y_hat)):
    return False
  at_rows = evaluate.evaluate_numpy(node, np.asarray(X, np.float64))
  span_of = np.concatenate([np.asarray(y, np.float64), at_rows[np.isfinite(at_rows)]])
  lo, hi = float(span_of.min()), float(span_of.max())
  span = max(hi - lo, 1e-12 * max(abs(lo), abs(hi), 1.0))
  return bool(y_hat.min() >= lo - factor * span and y_hat.max() <= hi + factor * span) and \
      not crosses_pole(node, probe, lo - CROSSING_FACTOR * span, hi + CROSSING_FACTOR * span)


def singular_parts(node: E.Node) -> list[E.Node]:
  """The subtrees whose zero is where the tree may have a pole or stop being defined: each
  division's denominator, each tan's cosine, each log's and sqrt's argument."""
  parts = []
  for nd in E.walk(node):
    if nd.name == "div":
      parts.append(nd.children[1])
    elif nd.name == "tan":
      parts.append(E.op("cos", nd.children[0]))
    elif nd.name in ("log", "sqrt"):
      parts.append(nd.children[0])
  return parts


def crosses_pole(node: E.Node, probe: Probe, lo: float, hi: float) -> bool:
  """True if a singular part changes sign along a probe segment and the tree next to that
  zero (bisected to 2**-BISECTIONS of the segment) is non-finite or outside [lo, hi].

  Sampled points miss a narrow pole (`x tan(x)/995` leaves [lo, hi] within 1e-5 of each
  pole); a sign change does not. Next to a removable zero (sin(x)/x, cos(x)/tan(y) where
  tan(y) is infinite) the tree stays bounded and passes. Per part, CROSSINGS_CHECKED of the
  segments where it changes sign, spread over them."""
  a_idx, b_idx = probe.pairs[:, 0], probe.pairs[:, 1]
  for part in singular_parts(node):
    s = evaluate.evaluate_numpy(part, probe.ends)
    cross = np.flatnonzero(s[a_idx] * s[b_idx] < 0)  # NaN compares False
    if not len(cross):
      continue
    cross = cross[np.unique(np.linspace(0, len(cross) - 1, CROSSINGS_CHECKED).astype(int))]
    a, b = probe.ends[a_idx[cross]], probe.ends[b_idx[cross]]
    sign = np.sign(s[a_idx[cross]])
    t_lo, t_hi = np.zeros(len(cross)), np.ones(len(cross))
    for _ in range(BISECTIONS):
      mid = 0.5 * (t_lo + t_hi)
      same = evaluate.evaluate_numpy(part, a + mid[:, None] * (b - a)) * sign > 0
      t_lo, t_hi = np.where(same, mid, t_lo), np.where(same, t_hi, mid)
    near = a + t_lo[:, None] * (b - a)
    past = a + t_hi[:, None] * (b - a)
    # (an exact zero of the part is no value of the tree: sin(0)/0 is NaN, its limit is not)
    past = past[evaluate.evaluate_numpy(part, past) != 0]
    f = evaluate.evaluate_numpy(node, np.concatenate([near, past]))
    if not (np.all(np.isfinite(f)) and f.min() >= lo and f.max() <= hi):
      return True
  return False


def search_score(r2_train: float, complexity: int, alpha: float) -> float:
  return float(np.clip(r2_train, -1.0, 1.0)) - alpha * complexity


def const_positions(ids: np.ndarray) -> list[int]:
  """Positions in a BOS..EOS id sequence where a constant (sign token or C) starts, in order."""
  out, skip = [], 0
  for pos, i in enumerate(np.asarray(ids).tolist()):
    if i == vocab.EOS:
      break
    if skip:
      skip -= 1
    elif i in (vocab.PLUS_ID, vocab.MINUS_ID):
      out.append(pos)
      skip = vocab.CONST_LEN - 1
    elif i == vocab.C_ID:
      out.append(pos)
  return out


def ids_and_consts(node: E.Node, max_len: int | None) -> tuple[np.ndarray, np.ndarray]:
  """A fitted tree -> (ids [L], consts [L]) for the JAX evaluator at full constant precision
  (L = max_len, or the tree's own length with None).

  The ids carry each constant rounded to its 9 tokens; consts holds the exact fitted value at
  the position where that constant starts.
  """
  ids = E.to_ids(node, max_len)
  consts = np.ones(len(ids), np.float64)
  consts[const_positions(ids)] = E.constants(node)
  return ids, consts


def _bucket(n: int, size: int) -> int:
  return max(size, -(-n // size) * size)


def pad_rows(X: np.ndarray, y: np.ndarray, n_features: int = vocab.MAX_VARIABLES,
             weights: np.ndarray | None = None):
  """(X [N, k], y [N]) -> float32 (X [N', n_features], y [N'], w [N'], inv_scale [], offset [])
  with N' a bucket; w holds the row weights (1 without), 0 on the padding rows; inv_scale a
  power of two near 1/std(y), by which the R2 scales residuals before squaring them; y less
  offset (its mean where that is over OFFSET_RATIO spreads, else 0), which the R2 takes
  from every prediction too."""
  n = len(y)
  m = _bucket(n, ROW_BUCKET)
  Xp = np.zeros((m, n_features), np.float32)
  Xp[:n, :X.shape[1]] = X
  y64 = np.asarray(y, np.float64)
  mean = float(np.average(y64, weights=weights))
  offset = mean if abs(mean) > OFFSET_RATIO * np.std(y64) else 0.0
  yp = np.zeros(m, np.float32)
  yp[:n] = y64 - np.float32(offset)
  wp = np.zeros(m, np.float32)
  # Weights scaled by a power of two, their largest into [0.5, 1): R2 is scale-free and a
  # power of two scales exactly, so the scores are the same, but 1e40 fits in float32.
  wp[:n] = 1.0 if weights is None else np.ldexp(weights, -np.frexp(np.max(weights))[1])
  return Xp, yp, wp, _inv_scale(y), np.float32(offset)


def _inv_scale(y: np.ndarray) -> np.float32:
  """2^-e with 2^e near std(y). Squares of a target's spread in float32 underflow below ~1e-19
  (joules): every candidate, `0` among them, then scored R2 ~1. Residuals times a power of
  two square in range, and scale exactly: for any target that did not underflow, the same
  R2 to the bit."""
  spread = float(np.std(np.asarray(y, np.float64)))
  e = int(np.clip(np.frexp(spread)[1], -120, 120)) if np.isfinite(spread) and spread > 0 else 0
  return np.float32(np.ldexp(1.0, -e))


@jax.jit
def _batched_r2(ids, consts, X, y, w, inv_scale, offset):
  """ids/consts [B, L], X [N, D], y [N], w [N] row weights (0: padding), inv_scale and
  offset (pad_rows) -> (r2 [B], all_finite [B])."""
  y_hat, valid = evaluate.evaluate_jax(ids, consts, jnp.broadcast_to(X, (ids.shape[0],) + X.shape))
  y_hat = y_hat - offset
  used = w > 0
  finite = jnp.all(jnp.isfinite(y_hat) | ~used[None], axis=1) & valid
  y_mean = jnp.sum(jnp.where(used, w * y, 0.0)) / w.sum()
  ss_tot = jnp.sum(jnp.where(used, w * ((y - y_mean) * inv_scale) ** 2, 0.0))
  res = jnp.where(used[None], w[None] * ((y[None] - jnp.where(finite[:, None], y_hat, 0.0))
                                         * inv_scale) ** 2, 0.0)
  r2 = 1.0 - res.sum(axis=1) / jnp.maximum(ss_tot, 1e-30)
  return jnp.where(finite, r2, -jnp.inf), finite


def batched_r2(ids: np.ndarray, consts: np.ndarray, padded_rows) -> np.ndarray:
  """R2 [B] (float64 array; -inf where non-finite or invalid) of B candidates on padded rows.

  padded_rows: the output of pad_rows. B is padded to a power of two (>= 8).
  """
  b = len(ids)
  bp = evaluate.batch_bucket(b)
  ids_p = np.zeros((bp, ids.shape[1]), np.int32)
  ids_p[:b] = ids
  consts_p = np.ones((bp, ids.shape[1]), np.float32)
  with np.errstate(over="ignore"):  # a fitted constant beyond float32 -> inf -> scored -inf
    consts_p[:b] = consts
  r, _ = _batched_r2(ids_p, consts_p, *padded_rows)
  return np.asarray(r, np.float64)[:b]
