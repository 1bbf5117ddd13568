"""What the latent-space scripts (interpolate.py, probe.py) share: which model, its label, and
scatter drawn as in training.

The model flags live here, once, so both scripts can be imported into one process (tests).
"""

from __future__ import annotations


import numpy as np
from absl import flags

from lee_jax import checkpoints
from lee_jax import cli
from lee_jax import configs
from lee_jax import engine as engine_lib
from lee_jax import evaluate
from lee_jax import expr as E
from lee_jax import grammar
from lee_jax import pipeline

CHECKPOINT = flags.DEFINE_string("checkpoint", None, "Trained model directory (default: the shipped one).")
RANDOM_MODEL = flags.DEFINE_string(
    "random_model", None, f"An untrained model of this size ({', '.join(configs.MODELS)}); results "
    "are then meaningless except as a smoke test.")
SEED = flags.DEFINE_integer("seed", 0, "Seed of every random draw (points, decoding, splits).",
                            lower_bound=0)
N = flags.DEFINE_integer(
    "n", None, "Held-out expressions to sample (default: probe.py 5000, as in the paper; "
    "quality.py 1000).")
OUT_DIR = flags.DEFINE_string("out_dir", None, "Output folder (each script has its own default).")


def n_or(default: int) -> int:
  """--n, or the calling script's default when it is not given."""
  return default if N.value is None else N.value


def model_label(checkpoint: str | None, random_model: str | None) -> str:
  """How outputs name the model; an untrained one always says 'untrained'."""
  if random_model:
    return f"untrained {random_model} model (random init)"
  return f"checkpoint {checkpoint}" if checkpoint else "shipped checkpoint"


def load_engine(checkpoint: str | None, random_model: str | None) -> engine_lib.Engine:
  """The chosen model; raises ValueError (unknown size) or checkpoints.CheckpointError."""
  if random_model:
    return engine_lib.untrained(random_model)[0]
  return engine_lib.load(checkpoint)[0]


def engine_from_flags() -> tuple[engine_lib.Engine, str]:
  """(Engine, label) from --checkpoint / --random_model; exits with one line on a bad choice."""
  if CHECKPOINT.value and RANDOM_MODEL.value:
    cli.fail("pass --checkpoint or --random_model, not both")
  try:
    eng = load_engine(CHECKPOINT.value, RANDOM_MODEL.value)
  except (ValueError, checkpoints.CheckpointError) as e:
    cli.fail(str(e))
  return eng, model_label(CHECKPOINT.value, RANDOM_MODEL.value)


def n_vars_of(*trees: E.Node) -> int:
  """Variables x0..x{k-1} that the decoder may use: enough for every input expression."""
  return max(max(E.variables_used(t), default=0) + 1 for t in trees)


def uniform_points(rng: np.random.Generator, n: int, n_vars: int) -> np.ndarray:
  """[n, n_vars] from U(-X_SCALE, X_SCALE), the training distribution of scatter points."""
  return rng.uniform(-pipeline.X_SCALE, pipeline.X_SCALE, (n, n_vars))


def scatter_of(tree: E.Node, n_vars: int, n_points: int, n_features: int,
               rng: np.random.Generator) -> engine_lib.Scatter:
  """n_points fresh training-distribution points of `tree` (NaN where undefined, as in training)."""
  X = uniform_points(rng, n_points, n_vars)
  with np.errstate(over="ignore"):
    y = evaluate.evaluate_numpy(tree, X).astype(np.float32)
  return engine_lib.make_scatter(X, y, n_points, n_features, rng)


def heldout_examples(n: int, max_len: int, seed: int) -> list[dict[str, np.ndarray]]:
  """n training-shaped examples (pipeline.make_example) of test-split expressions."""
  cfg = pipeline.DataConfig(max_len=max_len, split="test",
                            grammar=grammar.GrammarConfig(max_len=max_len))
  rng = np.random.default_rng(seed)
  return [pipeline.make_example(i, rng, cfg) for i in range(n)]


def sample_heldout(n: int, max_len: int, seed: int) -> tuple[list[E.Node], np.ndarray,
                                                              engine_lib.Scatter]:
  """n test-split expressions: (trees, token ids [n, L], their scatters [n, P, ...])."""
  exs = heldout_examples(n, max_len, seed)
  stack = lambda key: np.stack([ex[key] for ex in exs])
  trees = [E.parse_ids(ex["tokens"]) for ex in exs]
  return trees, stack("tokens"), engine_lib.Scatter(stack("x"), stack("y"), stack("point_mask"))


def encode_all(eng: engine_lib.Engine, tokens: np.ndarray, scatters: engine_lib.Scatter,
               batch: int) -> np.ndarray:
  """z [n, d_z], `batch` rows per call; the last call is filled up with copies of the last row
  so that every call has the same shape and the encoder compiles once."""
  n = len(tokens)
  out = []
  for s in range(0, n, batch):
    part = np.minimum(np.arange(s, s + batch), n - 1)
    z = eng.encode_each(tokens[part], engine_lib.Scatter(
        scatters.x[part], scatters.y[part], scatters.mask[part]))
    out.append(z[:min(batch, n - s)])
  return np.concatenate(out)
