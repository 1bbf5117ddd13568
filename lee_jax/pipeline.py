"""Training data: grammar samples -> fixed-shape examples -> grain batches.

Every example is a pure function of (seed, index) through grain's `random_map`, so a batch
is reproducible from its position alone, whatever the number of worker processes, and a
resumed run continues the exact stream (the iterator state is saved with the checkpoint).

Held-out expressions: each prefix sequence hashes to train / val / test (80/10/10); a
stream for one split resamples until it draws an expression of that split, so evaluation
can use expressions never seen in training.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import signal
import sys

import grain
import numpy as np

from lee_jax import evaluate
from lee_jax import expr as E
from lee_jax import grammar
from lee_jax import vocab

SPLITS = ("train", "val", "test")
X_SCALE = 10.0  # scatter and query points are U(-X_SCALE, X_SCALE)^k


@dataclasses.dataclass(frozen=True)
class DataConfig:
  """Shapes and augmentation of one example."""
  max_len: int = 64  # token sequence length, BOS ... EOS PAD...
  n_points: int = 200  # scatter points per example (rows beyond the subsample are masked)
  min_points: int = 128  # augmentation: keep a uniform 128..200 of them
  n_query: int = 64  # query points for the evaluation decoder
  drop_prob: float = 0.15  # refine-loss corruption: token -> MASK
  replace_prob: float = 0.10  # refine-loss corruption: token -> random token
  split: str = "train"
  grammar: grammar.GrammarConfig = grammar.GrammarConfig()

  def __post_init__(self):
    if self.split not in SPLITS:
      raise ValueError(f"split must be one of {SPLITS}, got {self.split!r}")
    if not 0 < self.min_points <= self.n_points:
      raise ValueError("need 0 < min_points <= n_points")
    if self.grammar.max_len > self.max_len:  # the grammar rejects what the tokens cannot hold
      object.__setattr__(self, "grammar",
                         dataclasses.replace(self.grammar, max_len=self.max_len))


def split_of(tokens: list[str] | tuple[str, ...]) -> str:
  """Hash split of a prefix sequence: 80% train, 10% val, 10% test (stable across runs)."""
  h = int.from_bytes(hashlib.blake2b(" ".join(tokens).encode(), digest_size=8).digest(), "little")
  bucket = h % 10
  return "train" if bucket < 8 else ("val" if bucket == 8 else "test")


# Tokens a corruption may substitute: every expression-side token (not PAD/BOS/EOS/UNK/MASK).
_REPLACEMENTS = np.array([i for t, i in vocab.TOKEN_TO_ID.items()
                          if t not in vocab.SPECIAL and t != "MASK"], np.int32)


def corrupt_tokens(ids: np.ndarray, rng: np.random.Generator, drop_prob: float,
                   replace_prob: float) -> np.ndarray:
  """Per body token: drop (-> MASK) with drop_prob, replace with replace_prob, else keep.

  BOS, EOS and PAD stay in place so the corrupted copy has the same layout.
  """
  ids = np.asarray(ids, np.int32)
  body = (ids != vocab.PAD) & (ids != vocab.BOS) & (ids != vocab.EOS)
  u = rng.random(ids.shape)
  out = ids.copy()
  out[body & (u < drop_prob)] = vocab.MASK_ID
  swap = body & (u >= drop_prob) & (u < drop_prob + replace_prob)
  out[swap] = rng.choice(_REPLACEMENTS, size=int(swap.sum()))
  return out


def _points(rng: np.random.Generator, n: int, n_vars: int) -> np.ndarray:
  """[n, MAX_VARIABLES] float32 with the unused columns zero."""
  x = np.zeros((n, vocab.MAX_VARIABLES), np.float32)
  x[:, :n_vars] = rng.uniform(-X_SCALE, X_SCALE, (n, n_vars))
  return x


def sample_expression(rng: np.random.Generator, cfg: DataConfig) -> tuple[E.Node, int]:
  """A grammar sample that belongs to cfg.split."""
  while True:
    tree, k = grammar.sample(rng, cfg.grammar)
    if split_of(E.to_prefix(tree)) == cfg.split:
      return tree, k


def make_example(index, rng: np.random.Generator, cfg: DataConfig) -> dict[str, np.ndarray]:
  """One training example (fixed shapes, NumPy only).

  Keys (P = n_points, Q = n_query, L = max_len, D = 10):
    tokens [L] int32, corrupted [L] int32, n_vars () int32,
    x [P, D] float32, y [P] float32 (may hold NaN/inf: the encoder embeds those),
    point_mask [P] bool, query_x [Q, D] float32, query_y [Q] float32 (NaN where undefined).
  """
  del index  # all randomness comes from rng = f(seed, index)
  tree, k = sample_expression(rng, cfg)
  tokens = E.to_ids(tree, cfg.max_len)
  x = _points(rng, cfg.n_points, k)
  qx = _points(rng, cfg.n_query, k)
  n_keep = int(rng.integers(cfg.min_points, cfg.n_points + 1))
  mask = np.zeros(cfg.n_points, bool)
  mask[rng.permutation(cfg.n_points)[:n_keep]] = True
  with np.errstate(over="ignore"):  # beyond float32 range -> inf, which the encoder embeds
    # One tree walk for scatter and queries together (the walk, not the math, costs here),
    # in float64 on the float32 points the model reads: y of x's float64 draw differed by
    # over 1e-3 on 0.8% of points (sin(exp(.)) trees).
    y_all = evaluate.evaluate_numpy(
        tree, np.concatenate([x, qx]).astype(np.float64)).astype(np.float32)
  y, qy = y_all[:cfg.n_points], y_all[cfg.n_points:]
  return {
      "tokens": tokens,
      "corrupted": corrupt_tokens(tokens, rng, cfg.drop_prob, cfg.replace_prob),
      "n_vars": np.int32(k),
      "x": x,
      "y": y,
      "point_mask": mask,
      "query_x": qx,
      "query_y": qy,
  }


def examples(cfg: DataConfig, seed: int) -> grain.MapDataset:
  """The infinite, random-access example stream: `examples(cfg, seed)[i]` is deterministic."""
  return (grain.MapDataset.range(sys.maxsize)
          .seed(seed)
          .random_map(functools.partial(make_example, cfg=cfg)))


def batches(cfg: DataConfig, seed: int, batch_size: int, workers: int = 0,
            shard: tuple[int, int] = (0, 1), buffer: int = 1) -> grain.IterDataset:
  """Fixed-shape batches as an iterator dataset (checkpointable with get_state/set_state).

  shard = (process_index, process_count): each host reads a disjoint slice of the stream.
  workers > 0 spawns grain worker processes (needs absl flags parsed; see README), each
  holding up to `buffer` finished batches (batches are read from the workers in turn, so a
  deeper buffer lets the others run on while one draws a slow batch; grain's default is 1).
  """
  index, count = shard
  ds = examples(cfg, seed)[index::count].batch(batch_size, drop_remainder=True)
  it = ds.to_iter_dataset(grain.ReadOptions(num_threads=0))
  if workers > 0:
    it = it.mp_prefetch(grain.MultiprocessingOptions(num_workers=workers,
                                                     per_worker_buffer_size=buffer),
                        worker_init_fn=_ignore_ctrl_c)
    it = it.map(_own_memory)
  return it


def _own_memory(batch: dict) -> dict:
  """A worker's batch arrives in shared memory that is freed when its array is. On the CPU
  `jax.device_put` keeps such an array alive without copying it, so the batches still held at
  exit were never freed ("leaked shared_memory objects" at every exit). A copy costs ~1 ms."""
  return {k: np.array(v) for k, v in batch.items()}


def _ignore_ctrl_c(worker_index: int, worker_count: int) -> None:
  """In each grain worker: Ctrl-C reaches the whole process group, and the trainer stops the
  workers itself after its save (a worker killed by it printed a traceback)."""
  del worker_index, worker_count
  signal.signal(signal.SIGINT, signal.SIG_IGN)
