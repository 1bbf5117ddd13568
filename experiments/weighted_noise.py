"""Sample weights on heteroscedastic data: does weighting by 1/sigma^2 help the search?

    python experiments/weighted_noise.py --datasets=feynman_II_27_18,feynman_III_12_43

Per dataset: SRBench's split (`datasets.split`, --seed, no noise); the training and
validation rows get noise with a per-row sigma: a random --loud_fraction of them
--loud_sigma x RMS(y), the rest --quiet_sigma x RMS(y). The same search (`LEERegressor`,
same seed, --preset) runs twice on those rows: unweighted, and with sample_weight =
1 / sigma^2. Prints the test R2 on the clean test rows and the complexity of both, per
dataset and as means; --json writes the rows.
"""

from __future__ import annotations

import json
import time

import numpy as np
from absl import flags

from lee_jax import LEERegressor
from lee_jax import cli
from lee_jax import datasets

def _define_flags() -> None:
  """Only when the script runs (as runner.py's scripts do): tests import this module beside
  other experiment scripts that define flags of the same names."""
  flags.DEFINE_list("datasets", ["feynman_II_27_18", "feynman_III_12_43", "feynman_II_15_4",
                                 "feynman_III_17_37", "feynman_II_10_9"], "Shipped dataset names.")
  flags.DEFINE_integer("seed", 0, "Split, noise and search seed.", lower_bound=0)
  flags.DEFINE_string("preset", "fast", "Search preset.")
  flags.DEFINE_float("loud_fraction", 0.2, "Share of rows with the large sigma.")
  flags.DEFINE_float("loud_sigma", 1.0, "Their sigma, in units of RMS(y).")
  flags.DEFINE_float("quiet_sigma", 0.01, "The other rows' sigma, in units of RMS(y).")
  flags.DEFINE_string("checkpoint", None, "Model (default: the shipped one).")
  flags.DEFINE_string("json", None, "Also write the rows as JSON here.")


def noisy_rows(y: np.ndarray, rng: np.random.Generator, loud_fraction: float, loud: float,
               quiet: float) -> tuple[np.ndarray, np.ndarray]:
  """(noisy y, per-row sigma): a random loud_fraction of the rows with sigma loud x RMS(y),
  the rest quiet x RMS(y)."""
  rms = float(np.sqrt(np.mean(y ** 2)))
  sigma = np.where(rng.random(len(y)) < loud_fraction, loud, quiet) * rms
  return y + rng.normal(0.0, 1.0, len(y)) * sigma, sigma


def main(argv):
  del argv
  f = flags.FLAGS
  if not f.datasets:
    raise ValueError("--datasets names no dataset")
  if not (0 <= f.loud_fraction <= 1 and f.loud_sigma > 0 and f.quiet_sigma > 0):
    raise ValueError("need 0 <= --loud_fraction <= 1 and --loud_sigma, --quiet_sigma > 0 "
                     "(the weights are 1 / sigma^2)")
  datasets.check_names(f.datasets)
  json_path = None if f.json is None else cli.output_file(f.json, overwrite=False, flag="--json")
  rows = []
  print(f"{'dataset':<22} {'R2 plain':>9} {'R2 wtd':>9} {'C plain':>7} {'C wtd':>6}  "
        f"wtd formula")
  for name in f.datasets:
    ds = datasets.load_dataset(name)
    parts = datasets.split(ds.X, ds.y, seed=f.seed)
    X = np.concatenate([parts.X_train, parts.X_val])
    y_clean = np.concatenate([parts.y_train, parts.y_val])
    y, sigma = noisy_rows(y_clean, np.random.default_rng([f.seed, 7]),
                          f.loud_fraction, f.loud_sigma, f.quiet_sigma)
    row = {"dataset": name, "rows": len(y), "seed": f.seed, "preset": f.preset,
           "loud_fraction": f.loud_fraction, "loud_sigma": f.loud_sigma,
           "quiet_sigma": f.quiet_sigma}
    for label, w in (("plain", None), ("weighted", 1.0 / sigma ** 2)):
      t = time.perf_counter()
      est = LEERegressor(checkpoint=f.checkpoint, preset=f.preset,
                         seed=f.seed).fit(X, y, sample_weight=w)
      row[label] = {"r2_test": est.score(parts.X_test, parts.y_test),
                    "complexity": est.complexity_, "expression": str(est.sympy()),
                    "wall_s": round(time.perf_counter() - t, 1)}
    rows.append(row)
    p, q = row["plain"], row["weighted"]
    print(f"{name:<22} {p['r2_test']:>9.4f} {q['r2_test']:>9.4f} {p['complexity']:>7} "
          f"{q['complexity']:>6}  {q['expression']}", flush=True)
  clip = lambda v: float(np.clip(v, -1.0, 1.0))
  for label in ("plain", "weighted"):
    r2 = [clip(r[label]["r2_test"]) for r in rows]
    c = [r[label]["complexity"] for r in rows]
    print(f"{label}: mean test R2 (clipped to [-1, 1]) {np.mean(r2):.4f}, median "
          f"{np.median(r2):.4f}, mean complexity {np.mean(c):.1f}")
  if json_path is not None:  # (checked before the fits: not over an earlier file)
    json_path.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
  _define_flags()
  cli.run(main, ValueError)
