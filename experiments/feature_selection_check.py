"""Does `select_k_best` find the variables of a known law hidden among noise columns?

    python experiments/feature_selection_check.py --group=feynman --width=15

Per ground-truth dataset: --rows rows of its data, padded with uniform noise columns (each
on the range of one of the real columns, so neither scale nor range gives them away) to
--width columns in a seeded random order; then each ranking picks k = the number of real
variables. A dataset counts as recovered when the k picked are exactly the real ones.
Rankings: `feature_selection.select_features` (what `--select_k_best` uses) and, for
comparison, the absolute Pearson and Spearman correlations with the target. Prints the
recovery rate of each and the datasets the nearest-neighbour ranking misses, with the time
it took per dataset.
"""

from __future__ import annotations

import time

import numpy as np
from absl import flags

from lee_jax import cli
from lee_jax import datasets
from lee_jax import feature_selection


def _define_flags() -> None:
  """Only when the script runs: tests import this module beside other experiment scripts."""
  flags.DEFINE_list("group", ["feynman", "strogatz"], "Ground-truth groups.")
  flags.DEFINE_integer("width", 15, "Columns after padding with noise.", lower_bound=2)
  flags.DEFINE_integer("rows", 1000, "Rows per dataset.", lower_bound=10)
  flags.DEFINE_integer("seed", 0, "Row, noise and column-order seed.", lower_bound=0)


def padded(X: np.ndarray, width: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
  """(X with noise columns up to `width`, in a random column order; the real columns' new
  positions). Each noise column is uniform on the range of a randomly chosen real column."""
  n, k = X.shape
  src = rng.integers(0, k, width - k)
  lo, hi = X.min(axis=0)[src], X.max(axis=0)[src]
  noise = rng.uniform(lo, hi, (n, width - k))
  order = rng.permutation(width)
  full = np.concatenate([X, noise], axis=1)[:, order]
  return full, np.sort(np.flatnonzero(order < k))


def correlation_pick(X: np.ndarray, y: np.ndarray, k: int, spearman: bool) -> np.ndarray:
  if spearman:
    X = np.argsort(np.argsort(X, axis=0), axis=0).astype(np.float64)
    y = np.argsort(np.argsort(y)).astype(np.float64)
  Xc, yc = X - X.mean(axis=0), y - y.mean()
  with np.errstate(all="ignore"):
    r = np.abs(Xc.T @ yc) / (np.linalg.norm(Xc, axis=0) * np.linalg.norm(yc))
  return np.sort(np.argsort(-np.nan_to_num(r), kind="stable")[:k])


def main(argv):
  del argv
  f = flags.FLAGS
  names = datasets.resolve(None, f.group)
  hits = {"knn": 0, "pearson": 0, "spearman": 0}
  misses, times, n = [], [], 0
  for name in names:
    ds = datasets.load_dataset(name)
    k = ds.X.shape[1]
    if k >= f.width:
      continue
    rng = np.random.default_rng([f.seed, n])
    rows = rng.choice(len(ds.y), min(f.rows, len(ds.y)), replace=False)
    X, real = padded(ds.X[rows], f.width, rng)
    y = ds.y[rows]
    t0 = time.perf_counter()
    knn = np.sort(feature_selection.select_features(X, y, k, seed=f.seed))
    times.append(time.perf_counter() - t0)
    n += 1
    found = {"knn": knn, "pearson": correlation_pick(X, y, k, False),
             "spearman": correlation_pick(X, y, k, True)}
    for key, picked in found.items():
      hits[key] += bool(np.array_equal(picked, real))
    if not np.array_equal(knn, real):
      misses.append(f"{name} ({k} vars)")
  if n == 0:
    raise ValueError(f"no dataset of {', '.join(f.group)} has fewer than --width={f.width} "
                     "variables: nothing to pad")
  print(f"{n} datasets ({', '.join(f.group)}), padded to {f.width} columns, {f.rows} rows, "
        f"seed {f.seed}")
  for key, h in hits.items():
    print(f"  {key:<9} recovered the real variables exactly in {h}/{n} ({h / n:.1%})")
  print(f"  nearest-neighbour selection: median {np.median(times):.2f} s, max "
        f"{np.max(times):.2f} s per dataset")
  print(f"  missed by nearest-neighbour: {', '.join(misses) or 'none'}")


if __name__ == "__main__":
  _define_flags()
  cli.run(main, ValueError)
