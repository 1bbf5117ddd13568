"""`python -m lee_jax.infer --dataset NAME`: symbolic regression on one dataset.

Loads the dataset (shipped SRBench set, or --data file.csv --target col), applies the
SRBench protocol (60/15/25 split, target noise on train/val), and runs the latent search
with a trained checkpoint. Until a checkpoint is shipped in the package (lee_jax/weights/),
it prints the dataset summary and says so.
"""

from __future__ import annotations

import importlib.resources
import pathlib

from absl import flags

from lee_jax import cli
from lee_jax import datasets

_DATASET = flags.DEFINE_string("dataset", None, "Shipped dataset name (see `python -m lee_jax.datasets --list`).")
_DATA = flags.DEFINE_string("data", None, "A .csv/.tsv(.gz) table instead of --dataset.")
_TARGET = flags.DEFINE_string("target", "target", "Target column of --data.")
_FEATURES = flags.DEFINE_list("features", None, "Feature columns of --data (default: all others).")
_DATA_DIR = flags.DEFINE_string("data_dir", None, "PMLB-layout directory searched before the shipped data.")
_NOISE = flags.DEFINE_float("noise", 0.0, "Target noise level eps: sigma = eps * RMS(y_train).")
_SEED = flags.DEFINE_integer("seed", 0, "Split and search seed.")


def shipped_checkpoint() -> pathlib.Path:
  return pathlib.Path(str(importlib.resources.files("lee_jax") / "weights"))


def load_input() -> datasets.Dataset:
  if (_DATASET.value is None) == (_DATA.value is None):
    raise datasets.DataError("pass exactly one of --dataset NAME or --data FILE")
  if _DATA.value is not None:
    return datasets.load_table(_DATA.value, _TARGET.value, _FEATURES.value)
  return datasets.load_dataset(_DATASET.value, _DATA_DIR.value)


def main(argv):
  del argv
  ds = load_input()
  parts = datasets.split(ds.X, ds.y, seed=_SEED.value, noise=_NOISE.value)
  print(datasets.describe(ds))
  print(f"split (seed {_SEED.value}, noise {_NOISE.value}): train {len(parts.y_train)}, "
        f"val {len(parts.y_val)}, test {len(parts.y_test)} rows; noise sigma {parts.noise_sigma:.4g}")
  ckpt = shipped_checkpoint()
  if not ckpt.exists():
    print(f"no trained checkpoint is shipped with this build yet ({ckpt} is missing), "
          "so no search runs: the dataset summary above is all this version does.")


if __name__ == "__main__":
  cli.run(main, datasets.DataError)
