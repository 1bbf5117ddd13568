"""The candidate pool: complexity buckets, rank-weighted parents, winner with fallback (App. H).

Pure host-side bookkeeping over `Candidate` records; no model, no data.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from lee_jax import expr as E

BUCKET_EDGES = (5, 10, 20)  # complexity buckets [0,5) [5,10) [10,20) [20,inf)


@dataclasses.dataclass(frozen=True)
class Candidate:
  node: E.Node  # fitted tree
  ids: np.ndarray  # [L] token ids of the fitted tree (constants rounded to 9 tokens)
  consts: np.ndarray  # [L] exact constant values at their start positions
  r2_train: float
  r2_val: float
  complexity: int
  score: float  # clip(r2_train, -1, 1) - alpha * complexity
  origin: str  # 'init', 'iterative', 'refresh', 'gradient', 'cmaes', 'baseline', 'poly',
  # 'separable', 'power', 'warm'
  iteration: int = 0  # search iteration that produced it

  @functools.cached_property  # merges ask for it on every pool entry
  def key(self) -> tuple[str, ...]:
    """Identity in the pool: the prefix tokens (constants at 3 significant figures)."""
    return tuple(E.to_prefix(self.node))


def bucket(complexity: int) -> int:
  return int(np.searchsorted(BUCKET_EDGES, complexity, side="right"))


def rank_weights(n: int) -> np.ndarray:
  """Parent probabilities, best first: p_i proportional to 1/(i+1) for ranks i = 1, 2, ...

  1-based ranks are the reading under which App. H's two statements agree ("p_i ~ 1/(i+1)"
  and "rank-1 is twice as likely as rank-3": 1/2 vs 1/4).
  """
  w = 1.0 / (np.arange(n) + 2.0)
  return w / w.sum()


class Pool:
  """At most `size` candidates, at most ceil(size/4) per complexity bucket, best score first."""

  def __init__(self, size: int):
    if size < 1:
      raise ValueError(f"pool size must be >= 1, got {size}")
    self.size = size
    self.per_bucket = math.ceil(size / 4)
    self.entries: list[Candidate] = []

  def __len__(self) -> int:
    return len(self.entries)

  def full(self) -> bool:
    return len(self.entries) >= self.size

  def could_enter(self, r2_train: float, alpha: float) -> bool:
    """False when a candidate with this train R2 cannot enter at any complexity.

    Its best score in bucket b comes at the bucket's least complexity. `merge` keeps it only
    if fewer than per_bucket entries of its bucket, and fewer than `size` in all, outscore
    it; entries that do stay ahead of it whatever else merges with it. So the search can
    skip SymPy for a candidate that fails this in every bucket and the pool comes out the
    same. (Comparing with the pool's worst score alone charges every candidate C = 1, which
    only the bucket of the shortest formulas allows.)
    """
    r2 = float(np.clip(r2_train, -1.0, 1.0))
    scores = np.array([c.score for c in self.entries])
    buckets = np.array([bucket(c.complexity) for c in self.entries], dtype=int)
    for b, least in enumerate((1,) + BUCKET_EDGES):
      ahead = scores > r2 - alpha * least
      if ahead.sum() < self.size and (ahead & (buckets == b)).sum() < self.per_bucket:
        return True
    return False

  def merge(self, candidates: list[Candidate]) -> int:
    """Add candidates, keep the best per bucket and overall; returns how many entered. Of
    candidates with one key (constants to 3 significant figures) the best ranked that fits
    its bucket stays (the first of equals, entries before newcomers): (x - 1000.4)^2 and a
    worse fit (x - 1000.0)^2 share a key. A newcomer that ranks above its key's entry but
    finds its own bucket full leaves the entry in place (`could_enter` relies on it)."""
    fresh = [c for c in candidates if np.isfinite(c.score)]
    ranked = sorted(self.entries + fresh, key=lambda c: (-c.score, c.complexity))
    counts: dict[int, int] = {}
    kept, keys = [], set()
    for c in ranked:
      b = bucket(c.complexity)
      if (c.key not in keys and counts.get(b, 0) < self.per_bucket
          and len(kept) < self.size):
        counts[b] = counts.get(b, 0) + 1
        kept.append(c)
        keys.add(c.key)
    entered = sum(1 for c in kept if any(c is f for f in fresh))
    self.entries = kept
    return entered

  def parents(self, k: int, rng: np.random.Generator) -> list[Candidate]:
    """k parents drawn (with replacement) with rank weights 1/(i+1)."""
    if not self.entries:
      return []
    idx = rng.choice(len(self.entries), size=k, p=rank_weights(len(self.entries)))
    return [self.entries[i] for i in idx]

  def champion(self) -> Candidate | None:
    return self.entries[0] if self.entries else None


# Validation R2s closer than this are a tie: two exact forms of one law differ by rounding
# (II.21.32 as a 19-node sum of two power laws at 1.0 against its 17-node form at 1 - 2e-16);
# 1e-12 would also tie a law with a constant good to 6 digits (3.14159 for pi).
R2_TIE = 1e-14


def best_by_val(candidates: list[Candidate]) -> Candidate | None:
  """Highest validation R2; ties (within R2_TIE of the highest) go to the higher search
  score, the shorter formula where the fits tie too."""
  ok = [c for c in candidates if np.isfinite(c.r2_val)]
  if not ok:
    return None
  top = max(c.r2_val for c in ok)
  return max((c for c in ok if c.r2_val >= top - R2_TIE), key=lambda c: (c.score, c.r2_val))


def select_winner(candidates: list[Candidate], iterative_best: Candidate | None) -> Candidate | None:
  """The round's answer: the best of `candidates` (the final pool, plus the round's baseline
  floor) by validation R2, with the safety fallback.

  If that winner came from a gradient segment and is worse on validation than the best
  iterative-only entry recorded before the gradient segments (iterative_best), revert to it.
  """
  winner = best_by_val(candidates)
  if (winner is not None and winner.origin == "gradient" and iterative_best is not None
      and iterative_best.r2_val > winner.r2_val):
    return iterative_best
  if winner is None:
    return iterative_best
  return winner
