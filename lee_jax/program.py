"""Straight-line programs: many expression trees on one dataset, evaluated together.

The stack machine (evaluate.py) evaluates any token sequence, so every lane computes all 15
operators at every position and selects one. When the trees are known on the host -- as for
constant fitting, where a batch of parsed candidates is fitted to one dataset -- the host can
schedule the work instead. Every internal node of every tree gets a row in one value buffer;
nodes are list-scheduled (a node is ready once its children are computed), and ready nodes of
one operator class are packed W to an instruction (W, the lane width, is the caller's
choice). An instruction computes its class (`lax.switch` on a scalar) on W rows at once. A
class is either one transcendental function or a few cheap ones that are all computed and
selected per lane (add/sub/mul/div; sq/cube/abs/neg; sin/cos, which share a sincos), so the
work is about one operator per lane, and the sequential steps about nodes / W plus the depth.
A level schedule (`compile_trees(levels=True)`, for accelerators) instead makes each level
of the trees one wide instruction with a class per lane: every class computed on every lane,
as many sequential steps as the depth.

Buffer rows: 0 holds ones (padding lanes read it), 1..D the variables, then M constant rows
per tree, then W output rows per instruction, written in schedule order so an instruction
writes a contiguous block. Each row is [K, R, N]: channel 0 the value, channels 1..M its
derivatives in the tree's constants (forward mode, for the fitter's Jacobian; K = 1 without),
for R constant vectors (fit restarts) of the same tree on N points.

Semantics equal evaluate.evaluate_numpy: a non-finite value at any node becomes NaN. Sine,
cosine and tangent are polynomial (`sin_cos`): float32-accurate for arguments up to 1e5,
finite but approximate beyond (where float32 arguments have lost the meaning anyway).
"""

from __future__ import annotations

import dataclasses
import heapq

import numpy as np

from lee_jax import evaluate as evaluate_lib  # `evaluate` below is this module's own
from lee_jax import expr as E
from lee_jax import vocab

W = 8  # default lanes per instruction (`compile_trees(width=)`)

# Operator classes: (class name, member operators). A member's lane code is its index here.
CLASSES = (
    ("binary", ("add", "sub", "mul", "div")),
    ("cheap", ("sq", "cube", "abs", "neg")),
    ("sincos", ("sin", "cos")),
    ("tan", ("tan",)), ("tanh", ("tanh",)), ("exp", ("exp",)), ("log", ("log",)),
    ("sqrt", ("sqrt",)),
)
_CLASS_OF = {op: (c, i) for c, (_, members) in enumerate(CLASSES) for i, op in enumerate(members)}
assert set(_CLASS_OF) == set(vocab.OPERATORS)


class ScheduleTooLong(ValueError):
  pass


@dataclasses.dataclass(frozen=True)
class Program:
  """A schedule for B trees (arrays padded to buckets so jitted callers compile rarely)."""
  # [T] int32 operator class of each instruction (index into CLASSES); [T, W] (one per lane)
  # for a level schedule (`compile_trees(levels=True)`)
  classes: np.ndarray
  lanes: np.ndarray  # [T, W] int32 member operator of each lane within its class (W: width)
  args: np.ndarray  # [T, 2, W] int32 buffer rows read (the second unused by unary operators)
  roots: np.ndarray  # [B] int32 buffer row of each tree's value
  n_consts: int  # M constant rows per tree
  used: int  # instructions before padding to the bucket
  # the host's float64 plan (`run_numpy`): (operator, operand rows, output rows, constant-
  # free), one NumPy call each
  host: tuple
  # instructions at the start that compute constant-free nodes only (compile_trees(hoist=
  # True); 0 otherwise): their rows never change, so a caller evaluating many constant
  # vectors runs them once per buffer (`run_on(first=)`)
  pre: int = 0

  @property
  def width(self) -> int:
    return self.lanes.shape[1]

  def arrays(self):
    return self.classes, self.lanes, self.args, self.roots, np.int32(self.used)


def compile_trees(nodes: list[E.Node], n_vars: int, n_consts: int,
                  n_trees: int | None = None, n_instructions: int | None = None,
                  width: int | None = W, hoist: bool = False, levels: bool = False) -> Program:
  """Schedule `nodes` on data with n_vars variables; constants are numbered per tree in prefix
  order (as E.constants lists them), at most n_consts each. n_trees pads the batch with
  trees whose value is 1; n_instructions pads the schedule to that length (default: the next
  power of two) and raises ScheduleTooLong when it needs more; `width` lanes per
  instruction. hoist=True computes each distinct constant-free subtree once, in the first
  `Program.pre` instructions. levels=True makes each instruction one level of the trees
  (every node whose longest path down to a leaf has that many operators), whatever their
  operators, with a class per lane (`Program.classes` [T, W]): as few sequential steps as
  the depth, for `run(select_all=True)` only; ScheduleTooLong when a level holds more than
  `width` nodes (None: the widest level's count, rounded up to a power of two). No choice
  changes a value: every node computes the same operation on the same inputs."""
  if levels and hoist:
    raise ValueError("a level schedule runs every instruction: nothing to hoist")
  n_trees = len(nodes) if n_trees is None else n_trees
  if n_trees < len(nodes):
    raise ValueError(f"n_trees={n_trees} < {len(nodes)} trees")
  const_base = 1 + n_vars
  # One record per internal-node occurrence (trees may share subtree objects, so nothing is
  # keyed by identity): [operator, child refs]; a ref is (True, buffer row) for a leaf or
  # (False, record index) for an internal node. Hoisting keys constant-free records by
  # (operator, child refs) instead, so equal ones are one record.
  first_out = const_base + n_trees * n_consts  # output rows follow the constant rows
  recs: list[list] = []
  free: list[bool] = []  # the record's subtree holds no constant
  shared: dict = {}  # (operator, child refs) -> record: constant-free records when hoisting
  root_refs = []
  for b, node in enumerate(nodes):
    k = 0

    def visit(nd: E.Node) -> tuple[bool, int]:
      nonlocal k
      if nd.name in ("const", "C"):
        if k >= n_consts:
          raise ValueError(f"tree {b} has more than {n_consts} constants")
        k += 1  # children are visited left to right: prefix order
        return True, const_base + b * n_consts + k - 1
      if vocab.is_variable(nd.name):
        i = vocab.variable_index(nd.name)
        if i >= n_vars:
          raise ValueError(f"tree {b} uses {nd.name} but the data has {n_vars} variables")
        return True, 1 + i
      kids = [visit(c) for c in nd.children]
      is_free = all(not const_base <= ref < first_out if leaf else free[ref]
                    for leaf, ref in kids)
      key = (nd.name, tuple(kids))
      if hoist and is_free and key in shared:  # the same constant-free subtree: computed once
        return False, shared[key]
      recs.append([nd.name, kids])
      free.append(is_free)
      if hoist and is_free:
        shared[key] = len(recs) - 1
      return False, len(recs) - 1

    root_refs.append(visit(node))

  parents: list[list[int]] = [[] for _ in recs]  # one entry per reference (shared records)
  waiting = [0] * len(recs)  # children not yet computed
  level = [1] * len(recs)  # operators on the longest path down to a leaf, itself included
  for r, (op, kids) in enumerate(recs):
    for is_leaf, ref in kids:
      if not is_leaf:
        parents[ref].append(r)
        waiting[r] += 1
        level[r] = max(level[r], level[ref] + 1)  # children are recorded first
  row = [0] * len(recs)  # each record's buffer row, set as it is scheduled

  def row_of(ref) -> int:
    return ref[1] if ref[0] else row[ref[1]]

  if levels:
    return _level_program(recs, level, free, root_refs, row, row_of, first_out, n_trees,
                          n_consts, n_instructions, width)
  # Operators on the longest path from a record to a root, itself included (parents are
  # recorded after their children, so walking backwards meets them first).
  to_root = [1] * len(recs)
  for r in range(len(recs) - 1, -1, -1):
    if parents[r]:
      to_root[r] = 1 + max(to_root[p] for p in parents[r])
  # Ready records per phase (hoisted constant-free ones first) and class, a heap by
  # (farthest from the root first, then the order they became ready).
  pools: list[dict[int, list[tuple[int, int, int]]]] = [{}, {}]
  seq = 0

  def make_ready(r: int) -> None:
    nonlocal seq
    pool = pools[0 if hoist and free[r] else 1]
    heapq.heappush(pool.setdefault(_CLASS_OF[recs[r][0]][0], []), (-to_root[r], seq, r))
    seq += 1

  for r in range(len(recs)):
    if waiting[r] == 0:
      make_ready(r)
  classes, lanes, args = [], [], []

  # List scheduling by critical path: the class holding the ready node farthest from its
  # root goes next (more ready nodes break ties), with its `width` farthest nodes. Against
  # picking the class with the most ready nodes this takes 25-28% fewer instructions on
  # bench_fit's batches (BUILD_NOTES, "Critical-path scheduling").
  pre = 0
  for phase, ready in enumerate(pools):
    while ready:
      cls = max(ready, key=lambda c: (-ready[c][0][0], len(ready[c]), -c))
      heap = ready[cls]
      chunk = [heapq.heappop(heap)[2] for _ in range(min(width, len(heap)))]
      if not heap:
        del ready[cls]
      if n_instructions is not None and len(classes) == n_instructions:
        raise ScheduleTooLong(f"more than {n_instructions} instructions")
      chunk.sort(key=lambda r: _CLASS_OF[recs[r][0]][1])  # lanes of one operator side by side
      a = [[0] * width, [0] * width]  # padding lanes read row 0 (ones)
      lane_ops = [0] * width
      for lane, r in enumerate(chunk):
        lane_ops[lane] = _CLASS_OF[recs[r][0]][1]
        for j, ref in enumerate(recs[r][1]):
          a[j][lane] = row_of(ref)
        row[r] = first_out + len(classes) * width + lane
      classes.append(cls)
      lanes.append(lane_ops)
      args.append(a)
      for r in chunk:
        for p in parents[r]:
          waiting[p] -= 1
          if waiting[p] == 0:
            make_ready(p)
    if phase == 0:
      pre = len(classes)
  used = len(classes)
  T = evaluate_lib.batch_bucket(used, 4) if n_instructions is None else n_instructions
  # padding instructions add ones into rows nothing reads
  class_arr = np.zeros(T, np.int32)
  lane_arr = np.zeros((T, width), np.int32)
  arg_arr = np.zeros((T, 2, width), np.int32)
  if used:
    class_arr[:used], lane_arr[:used], arg_arr[:used] = classes, lanes, args
  roots = np.zeros(n_trees, np.int32)  # padding trees read row 0
  roots[:len(nodes)] = [row_of(ref) for ref in root_refs]
  return Program(class_arr, lane_arr, arg_arr, roots, n_consts, used,
                 _host_plan(recs, level, free, row, row_of), pre)


def _host_plan(recs, level, free, row, row_of) -> tuple:
  """The host's float64 pass (`Program.host`) needs no lanes: every node of one operator and
  one level (no node depends on another of its level) is one NumPy call. Constant-free
  nodes are the same for every constant vector: computed once (on one)."""
  groups: dict[tuple[int, bool, str], list[int]] = {}
  for r in range(len(recs)):
    groups.setdefault((level[r], free[r], recs[r][0]), []).append(r)
  host = []
  for (_, is_free, op), rs in sorted(groups.items(), key=lambda g: g[0]):
    ins = np.array([[row_of(ref) for ref in recs[r][1]] for r in rs], np.intp).T
    host.append((op, tuple(ins), np.array([row[r] for r in rs], np.intp), is_free))
  return tuple(host)


def _level_program(recs, level, free, root_refs, row, row_of, first_out: int, n_trees: int,
                   n_consts: int, n_instructions: int | None, width: int | None) -> Program:
  """`compile_trees(levels=True)`: instruction t computes every record of level t + 1 (its
  children are all of lower levels, so computed by earlier instructions)."""
  by_level: list[list[int]] = [[] for _ in range(max(level, default=0))]
  for r in range(len(recs)):
    by_level[level[r] - 1].append(r)
  used = len(by_level)
  widest = max((len(rs) for rs in by_level), default=1)
  if width is None:
    width = evaluate_lib.batch_bucket(widest, 1)
  if widest > width:
    raise ScheduleTooLong(f"a level of {widest} nodes, more than {width} lanes")
  T = evaluate_lib.batch_bucket(used, 4) if n_instructions is None else n_instructions
  if used > T:
    raise ScheduleTooLong(f"{used} levels, more than {n_instructions} instructions")
  # padding lanes and instructions add ones into rows nothing reads
  class_arr = np.zeros((T, width), np.int32)
  lane_arr = np.zeros((T, width), np.int32)
  arg_arr = np.zeros((T, 2, width), np.int32)
  for t, rs in enumerate(by_level):
    for lane, r in enumerate(rs):
      row[r] = first_out + t * width + lane
      class_arr[t, lane], lane_arr[t, lane] = _CLASS_OF[recs[r][0]]
      for j, ref in enumerate(recs[r][1]):
        arg_arr[t, j, lane] = row_of(ref)  # children: rows of earlier levels, already set
  roots = np.zeros(n_trees, np.int32)
  roots[:len(root_refs)] = [row_of(ref) for ref in root_refs]
  return Program(class_arr, lane_arr, arg_arr, roots, n_consts, used,
                 _host_plan(recs, level, free, row, row_of))


SIN_COS_EXACT = 1e5  # |x| up to this: sin and cos to 1e-6 absolute (1e-7 up to 1e4)


def sin_cos(x):
  """(sin x, cos x) in float32 from one range reduction and two short polynomials (Cephes'
  sinf/cosf coefficients). XLA's CPU sin and cos cost ~3.5 ns per element each, and a
  branch to them for large arguments costs more than the polynomials (8 us per
  instruction): this is about one multiply-add chain and vectorises. Beyond SIN_COS_EXACT
  the three-part reduction of pi/2 loses bits, as the float32 argument itself already has
  (its spacing there is 0.008 and more, so no float32 sine means much); the clip keeps the
  result finite and in [-1, 1] for every finite x. NaN and inf give NaN."""
  import jax.numpy as jnp

  k = jnp.round(x * 0.6366197723675814)  # nearest multiple of pi/2
  r = ((x - k * 1.5703125) - k * 4.837512969970703125e-4) - k * 7.54978995489188216e-8
  r = jnp.clip(r, -0.8, 0.8)  # |r| <= pi/4 + rounding where the reduction works
  r2 = r * r
  s = r + r * r2 * (-1.6666654611e-1 + r2 * (8.3321608736e-3 + r2 * -1.9515295891e-4))
  c = 1.0 - 0.5 * r2 + r2 * r2 * (4.166664568298827e-2 + r2 * (-1.388731625493765e-3
                                                                + r2 * 2.443315711809948e-5))
  q = k - 4.0 * jnp.floor(k * 0.25)  # quadrant 0..3
  odd = (q == 1) | (q == 3)
  bs, bc = jnp.where(odd, c, s), jnp.where(odd, s, c)
  return jnp.where(q >= 2, -bs, bs), jnp.where((q == 1) | (q == 2), -bc, bc)


def _class_fns():
  """Per class: f(a, b, lane) on rows [W, K, R, N] (channel 0 value, 1.. derivatives)."""
  import jax.numpy as jnp

  def pick(lane, options):  # per-lane choice among same-shaped arrays
    out = options[-1]
    for i in range(len(options) - 2, -1, -1):
      out = jnp.where((lane == i).reshape((-1,) + (1,) * (out.ndim - 1)), options[i], out)
    return out

  def unary(value_and_slope):
    def f(a, b, lane):
      v, s = value_and_slope(a[:, :1], lane)
      return jnp.concatenate([v, s * a[:, 1:]], axis=1)
    return f

  def binary(a, b, lane):
    va, vb = a[:, :1], b[:, :1]
    q = va / vb
    value = pick(lane, [va + vb, va - vb, va * vb, q])
    da, db = a[:, 1:], b[:, 1:]
    deriv = pick(lane, [da + db, da - db, da * vb + va * db, (da - q * db) / vb])
    return jnp.concatenate([value, deriv], axis=1)

  def cheap(x, lane):
    return (pick(lane, [x * x, x * x * x, jnp.abs(x), -x]),
            pick(lane, [2 * x, 3 * x * x, jnp.sign(x), -jnp.ones_like(x)]))

  def sincos(x, lane):
    s, c = sin_cos(x)
    return pick(lane, [s, c]), pick(lane, [c, -s])

  def tan(x, lane):
    s, c = sin_cos(x)
    v = s / c
    return v, 1 + v * v

  def tanh(x, lane):
    v = jnp.tanh(x)
    return v, 1 - v * v

  def exp(x, lane):
    v = jnp.exp(x)
    return v, v

  def log(x, lane):
    return jnp.log(x), 1 / x

  def sqrt(x, lane):
    v = jnp.sqrt(x)
    return v, 0.5 / v

  fns = {"binary": binary, "cheap": unary(cheap), "sincos": unary(sincos), "tan": unary(tan),
         "tanh": unary(tanh), "exp": unary(exp), "log": unary(log), "sqrt": unary(sqrt)}
  return [fns[name] for name, _ in CLASSES]


def buffer(n_trees: int, n_instructions: int, consts_shape, X, jacobian: bool = False,
           dtype=None, width: int = W):
  """A value buffer for `run_on` (traceable): the ones and variable rows, the constants'
  derivative rows, zeros elsewhere; consts_shape (R, M). A caller that evaluates one program
  many times (the fitter's LM steps) builds it once: `run_on` rewrites the constant values and
  every row it reads, so nothing needs resetting between calls."""
  import jax.numpy as jnp

  R, M = consts_shape
  N, D = X.shape
  dtype = jnp.float32 if dtype is None else dtype
  K = 1 + M if jacobian else 1

  def rows(value, deriv=None):  # value [n, R, N] -> [n, K, R, N]
    if K == 1:
      return value[:, None]
    if deriv is None:
      deriv = jnp.zeros((value.shape[0], M, R, N), dtype)
    return jnp.concatenate([value[:, None], deriv], axis=1)

  const_deriv = jnp.broadcast_to(jnp.tile(jnp.eye(M, dtype=dtype), (n_trees, 1))[:, :, None, None],
                                 (n_trees * M, M, R, N))
  return jnp.concatenate([
      rows(jnp.ones((1, R, N), dtype)),
      rows(jnp.broadcast_to(jnp.asarray(X, dtype).T[:, None, :], (D, R, N))),
      rows(jnp.zeros((n_trees * M, R, N), dtype), const_deriv),
      jnp.zeros((n_instructions * width, K, R, N), dtype)], axis=0)


def run_on(buf, classes, lanes, args, roots, used, consts, jacobian: bool = False,
           select_all: bool = False, unroll: int = 1, first=0):
  """`run` in a buffer from `buffer(...)` (same shapes, same jacobian): (buf, y[, J]).
  The branch path starts at instruction `first`: a buffer whose first instructions already
  ran (`Program.pre`, constant-free) need not run them again (select_all runs them all)."""
  import jax
  import jax.numpy as jnp

  classes, lanes, args = jnp.asarray(classes), jnp.asarray(lanes), jnp.asarray(args)
  B, R, M = consts.shape
  N = buf.shape[-1]
  T, W = lanes.shape
  first_out = buf.shape[0] - T * W
  first_const = first_out - B * M
  value = jnp.broadcast_to(jnp.transpose(consts, (0, 2, 1)).reshape(B * M, 1, R, 1),
                           (B * M, 1, R, N)).astype(buf.dtype)
  buf = jax.lax.dynamic_update_slice(buf, value, (first_const, 0, 0, 0))
  fns = _class_fns()

  per_lane = classes.ndim == 2  # a level schedule: a class per lane
  if per_lane and not select_all:
    raise ValueError("a level schedule (a class per lane) needs select_all=True")

  def operands(buf, arg):  # arg [2, W] rows -> both operands' rows, [W, K, R, N] each
    if per_lane:  # many lanes: one gather for both operands (one kernel, not two)
      ab = jnp.take(buf, arg.reshape(-1), axis=0)
    else:  # 2W dynamic slices: cheaper on the CPU than a gather (in one fusion or one per
      # operand: the same LM time in in-process pairs, /work/scratch/s22/lmab.py)
      ab = jnp.stack([jax.lax.dynamic_index_in_dim(buf, arg[j, i], keepdims=False)
                      for j in range(2) for i in range(W)])
    return ab[:W], ab[W:]

  def step(t, buf):
    cls, lane, arg = classes[t], lanes[t], args[t]
    a, b = operands(buf, arg)
    if per_lane:  # every class on every lane, each lane picks its own (elementwise
      # selects, which XLA fuses with the classes, rather than a gather from a stack)
      outs = [f(a, b, lane) for f in fns]
      v = outs[-1]
      for c in range(len(outs) - 2, -1, -1):
        v = jnp.where((cls == c).reshape((W,) + (1,) * (v.ndim - 1)), outs[c], v)
    elif select_all:
      v = jnp.stack([f(a, b, lane) for f in fns])[cls]
    else:
      v = jax.lax.switch(cls, fns, a, b, lane)
    v = jnp.where(jnp.isfinite(v[:, :1]), v, jnp.nan)
    return jax.lax.dynamic_update_slice_in_dim(buf, v, first_out + t * W, axis=0)

  if select_all:  # a static trip count: no predicate read back per iteration
    # unroll <= 0: the whole schedule as straight-line code (no loop at all; long compiles)
    buf = jax.lax.fori_loop(0, T, step, buf, unroll=T if unroll <= 0 else unroll)
  else:  # search calls hold few trees, so most of a padded schedule is padding: skip it
    buf = jax.lax.fori_loop(first, used, step, buf)
  out = buf[roots]
  if not jacobian:
    return buf, out[:, 0]
  return buf, out[:, 0], jnp.swapaxes(out[:, 1:], 1, 2)


def run(classes, lanes, args, roots, used, consts, X, jacobian: bool = False,
        select_all: bool = False, unroll: int = 1):
  """Evaluate a schedule (traceable: the arrays may be jax arrays).

  classes/lanes/args/roots/used from Program.arrays(); consts [B, R, M]; X [N, D].
  Returns y [B, R, N] (NaN wherever a node was non-finite), and with jacobian=True also
  dy/dconsts [B, R, M, N] (rows last, as the fitter contracts them). By default each
  instruction branches to its class and only the first `used` instructions run (a loop
  bound read from data: the padding to the shape bucket costs nothing). select_all has no
  data-dependent control flow: every class is computed and selected, and the whole padded
  schedule runs (for accelerators, where a branch or a data-bound loop iteration can cost
  a host round trip, more than the work); there `unroll` instructions run per loop
  iteration (fewer iterations, a longer compile; 0: all of them, no loop).
  """
  import jax.numpy as jnp

  consts = jnp.asarray(consts)
  B, R, M = consts.shape
  buf = buffer(B, jnp.shape(classes)[0], (R, M), X, jacobian, consts.dtype,
               width=jnp.shape(lanes)[1])
  out = run_on(buf, classes, lanes, args, roots, used, consts, jacobian, select_all, unroll)
  return out[1:] if jacobian else out[1]


def host_buffer(prog: Program, X: np.ndarray, n_starts: int = 1) -> np.ndarray:
  """A float64 buffer for `run_numpy` on X [N, D] with n_starts constant vectors per tree:
  the ones and variable rows, and every constant-free node (`Program.host` marks them) filled
  in. Those are the same for any constants, so a caller can compute them before it knows
  any, and once for several `run_numpy` calls (each rewrites every other row it reads)."""
  X = np.asarray(X, np.float64)
  N, D = X.shape
  rows = 1 + D + len(prog.roots) * prog.n_consts
  buf = np.empty((rows + prog.used * prog.width, n_starts, N))
  buf[0] = 1.0
  buf[1:1 + D] = X.T[:, None, :]
  _run_host(prog, buf, free=True)
  return buf


def _run_host(prog: Program, buf: np.ndarray, free: bool) -> None:
  with np.errstate(all="ignore"):
    for op, ins, out, is_free in prog.host:
      if is_free == free:  # constant-free nodes: computed on one start, stored to all
        value = vocab.NUMPY_FN[op](*(buf[i][:, :1] if free else buf[i] for i in ins))
        value[~np.isfinite(value)] = np.nan
        buf[out] = value


def run_numpy(prog: Program, consts: np.ndarray, X: np.ndarray,
              buf: np.ndarray | None = None) -> np.ndarray:
  """`run` on the host in float64, values only: consts [B, R, M], X [N, D] -> y [B, R, N].

  Same semantics as evaluate.evaluate_numpy on each tree (non-finite nodes are NaN), at the
  cost of a few NumPy calls per (level, operator) of the whole batch (`Program.host`)
  instead of a tree walk per (tree, start): the fitter's final float64 check of a call.
  buf: `host_buffer(prog, X, R)`, reused (its constant-free rows are not recomputed).
  """
  consts = np.asarray(consts, np.float64)
  B, R, M = consts.shape
  if buf is None:
    buf = host_buffer(prog, X, R)
  first_const = 1 + np.shape(X)[1]
  buf[first_const:first_const + B * M] = np.transpose(consts, (0, 2, 1)).reshape(B * M, R, 1)
  _run_host(prog, buf, free=False)
  return buf[prog.roots]


def evaluate(nodes: list[E.Node], X: np.ndarray, select_all: bool = False,
             levels: bool = False) -> np.ndarray:
  """Trees with their own constants on X [N, D] -> y [len(nodes), N] (float32). levels=True:
  a level schedule (which runs select_all)."""
  X = np.asarray(X, np.float32)
  M = max([len(E.constants(n)) for n in nodes] + [1])
  prog = compile_trees(nodes, X.shape[1], M, width=None if levels else W, levels=levels)
  select_all = select_all or levels
  consts = np.ones((len(nodes), 1, M), np.float32)
  for b, n in enumerate(nodes):
    c = E.constants(n)
    consts[b, 0, :len(c)] = c
  return np.asarray(run(*prog.arrays(), consts, X, select_all=select_all)[:, 0])
