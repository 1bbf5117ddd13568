"""Latent interpolation between two expressions (paper App. "Latent Space Interpolation", Fig. 4).

    python experiments/interpolate.py --a="x0" --b="sq x0" --steps=11 --checkpoint=DIR
    python experiments/interpolate.py --random_model=tiny      # smoke test: untrained model

A and B (prefix tokens) are each encoded jointly with their own scatter (200 points from
U(-10, 10)^k, as in training): z_A = f(tokens_A, D_A), z_B = f(tokens_B, D_B). For every
alpha in linspace(0, 1, steps), z = (1 - alpha) z_A + alpha z_B is decoded greedily and the
result scored by R2 against A, against B and against the blend (1 - alpha) y_A + alpha y_B on
fresh points. With --samples=S (the paper uses 31 at temperature 0.7) S sampled decodes join
the greedy one and the candidate closest to the blend is kept, as in the paper.
The Engine exposes no evaluation-decoder prediction, so none is recorded.

Writes interpolation.csv and fig4.png (R2 along alpha; the decoded curves on x0 in [-2, 2],
other variables at 0) to --out_dir (default experiments/results/interpolation/).
"""

from __future__ import annotations

import csv
import pathlib
import sys

import jax
import numpy as np
from absl import flags

from lee_jax import cli
from lee_jax import evaluate
from lee_jax import expr as E
from lee_jax import score

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import latent  # noqa: E402  (experiments/latent.py, beside this script)

_A = flags.DEFINE_string("a", "x0", "Expression A, prefix tokens.")
_B = flags.DEFINE_string("b", "sq x0", "Expression B, prefix tokens.")
_STEPS = flags.DEFINE_integer("steps", 11, "Number of alphas in [0, 1], endpoints included.")
_SAMPLES = flags.DEFINE_integer("samples", 0, "Sampled decodes per alpha besides the greedy one.")
_TEMPERATURE = flags.DEFINE_float("temperature", 0.7, "Temperature of the sampled decodes.")
_N_EVAL = flags.DEFINE_integer("n_eval", 1000, "Fresh points the decoded expressions are scored on.")

COLUMNS = ("alpha", "source", "prefix", "infix", "r2_vs_a", "r2_vs_b", "r2_vs_blend", "model")
N_SCATTER = 200  # points given to the encoder, as in training and inference


def parse(prefix: str, max_len: int) -> E.Node:
  """Prefix tokens (space separated) -> tree; ValueError with a one-line reason."""
  try:
    tree = E.from_prefix(prefix.split())
    E.to_ids(tree, max_len)
  except ValueError as e:
    raise ValueError(f"cannot use expression {prefix!r}: {e}") from None
  return tree


def lerp(z_a: np.ndarray, z_b: np.ndarray, alphas: np.ndarray) -> np.ndarray:
  """[S, d_z]: (1 - alpha) z_A + alpha z_B for each alpha."""
  alphas = np.asarray(alphas, np.float32)[:, None]
  return (1 - alphas) * z_a[None] + alphas * z_b[None]


def encode_pair(eng, tree_a: E.Node, tree_b: E.Node,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
  """z_A = f(tokens_A, D_A), z_B = f(tokens_B, D_B), each [d_z] on its own fresh scatter."""
  k = latent.n_vars_of(tree_a, tree_b)
  return tuple(eng.encode(E.to_ids(t, eng.cfg.max_len)[None],
                          latent.scatter_of(t, k, N_SCATTER, eng.cfg.n_features, rng))[0]
               for t in (tree_a, tree_b))


def decode_candidates(eng, zs: np.ndarray, samples: int, temperature: float, n_vars: int,
                      key: jax.Array) -> np.ndarray:
  """[S, 1 + samples, L] ids: the greedy decode of each z, then its sampled decodes."""
  rows = np.concatenate([zs, np.repeat(zs, samples, axis=0)])  # greedy rows first: n_greedy = S
  ids = eng.decode(rows, key, temperature, len(zs), n_vars)
  sampled = ids[len(zs):].reshape(len(zs), samples, ids.shape[1])
  return np.concatenate([ids[:len(zs), None], sampled], axis=1)


def infix(tree: E.Node) -> str:
  """SymPy's infix form, or the prefix when SymPy cannot build it (e.g. exp of a huge power)."""
  try:
    return str(E.to_sympy(tree))
  except (OverflowError, RecursionError, MemoryError, ValueError, TypeError):
    return " ".join(E.to_prefix(tree))


def score_candidate(ids: np.ndarray, X: np.ndarray, y_a: np.ndarray, y_b: np.ndarray,
                    alpha: float) -> dict | None:
  """R2 of one decoded sequence against A, B and their blend; None if it does not parse."""
  try:
    tree = E.parse_ids(ids)
  except E.InvalidExpression:
    return None
  y_hat = evaluate.evaluate_numpy(tree, X)
  return {"tree": tree, "prefix": " ".join(E.to_prefix(tree)),
          "r2_vs_a": score.r2(y_a, y_hat), "r2_vs_b": score.r2(y_b, y_hat),
          "r2_vs_blend": score.r2((1 - alpha) * y_a + alpha * y_b, y_hat)}


def pick(cands: np.ndarray, X, y_a, y_b, alpha: float) -> dict:
  """The greedy candidate, or with samples the one closest to the blend (greedy wins ties)."""
  best = None
  for j, ids in enumerate(cands):
    row = score_candidate(ids, X, y_a, y_b, alpha)
    if row is not None and (best is None or row["r2_vs_blend"] > best["r2_vs_blend"]):
      best = {"source": "greedy" if j == 0 else f"sample {j}", **row}
  if best is None:
    return {"source": "none valid", "prefix": "", "infix": "", "r2_vs_a": np.nan,
            "r2_vs_b": np.nan, "r2_vs_blend": np.nan}
  best["infix"] = infix(best.pop("tree"))  # SymPy only for the kept candidate: it can be slow
  return best


def interpolate(eng, tree_a: E.Node, tree_b: E.Node, steps: int, seed: int, samples: int = 0,
                temperature: float = 0.7, n_eval: int = 1000) -> list[dict]:
  """One row per alpha (see module docstring); deterministic given seed."""
  rng = np.random.default_rng(seed)
  k = latent.n_vars_of(tree_a, tree_b)
  z_a, z_b = encode_pair(eng, tree_a, tree_b, rng)
  alphas = np.linspace(0.0, 1.0, steps)
  cands = decode_candidates(eng, lerp(z_a, z_b, alphas), samples, temperature, k,
                            jax.random.key(seed))
  X = latent.uniform_points(rng, n_eval, k)
  y_a, y_b = evaluate.evaluate_numpy(tree_a, X), evaluate.evaluate_numpy(tree_b, X)
  ok = np.isfinite(y_a) & np.isfinite(y_b)  # score where both targets are defined
  X, y_a, y_b = X[ok], y_a[ok], y_b[ok]
  return [{"alpha": float(a), **pick(c, X, y_a, y_b, float(a))} for a, c in zip(alphas, cands)]


def write_csv(rows: list[dict], label: str, path: pathlib.Path) -> None:
  with path.open("w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=COLUMNS)
    w.writeheader()
    for r in rows:
      w.writerow({**r, "model": label})


def plot(rows: list[dict], a: str, b: str, label: str, path: pathlib.Path) -> None:
  """Left: R2 vs A and vs B along alpha, each point's decoded expression written above it.
  Right (the paper's Fig. 4): decoded curves on x0 in [-2, 2], light -> dark with alpha."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  alphas = np.array([r["alpha"] for r in rows])
  clip = lambda key: np.clip([r[key] for r in rows], -1, 1)  # -inf (non-finite output) -> -1
  fig, (ax, ax_f) = plt.subplots(1, 2, figsize=(13, 5.5), gridspec_kw={"width_ratios": [3, 2]})
  ax.plot(alphas, clip("r2_vs_a"), "o-", label=f"R2 vs A: {a}")
  ax.plot(alphas, clip("r2_vs_b"), "s-", label=f"R2 vs B: {b}")
  for x, y, r in zip(alphas, np.maximum(clip("r2_vs_a"), clip("r2_vs_b")), rows):
    text = r["infix"] if len(r["infix"]) <= 32 else r["infix"][:30] + "..."
    ax.annotate(text or "(invalid)", (x, y), xytext=(0, 6), textcoords="offset points",
                rotation=60, fontsize=7, ha="left", va="bottom")
  ax.set(xlabel="alpha  (z = (1 - alpha) z_A + alpha z_B)", ylabel="R2 (clipped to [-1, 1])",
         ylim=(-1.1, 2.0), xlim=(-0.05, 1.15))
  ax.legend(loc="lower right", fontsize=8)
  tree_a, tree_b = E.from_prefix(a.split()), E.from_prefix(b.split())
  grid = np.zeros((200, latent.n_vars_of(tree_a, tree_b)))
  grid[:, 0] = np.linspace(-2, 2, 200)
  colors = plt.cm.viridis(np.linspace(0.9, 0.1, len(rows)))
  for r, c in zip(rows, colors):
    if r["prefix"]:
      tree = E.from_prefix(r["prefix"].split())
      if max(E.variables_used(tree), default=0) < grid.shape[1]:
        ax_f.plot(grid[:, 0], evaluate.evaluate_numpy(tree, grid), color=c, lw=1.5,
                  label=f"{r['alpha']:.2f}")
  for tree, name, style in ((tree_a, a, "k--"), (tree_b, b, "k:")):
    ax_f.plot(grid[:, 0], evaluate.evaluate_numpy(tree, grid), style, lw=1, label=name)
  ax_f.set(xlabel="x0 (other variables 0)", ylabel="decoded expression")
  ax_f.legend(fontsize=6, ncol=2, title="alpha", title_fontsize=7)
  fig.suptitle(f"Latent interpolation {a} -> {b} -- {label}")
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)


def main(argv):
  del argv
  if _STEPS.value < 2 or _SAMPLES.value < 0 or _N_EVAL.value < 2:
    cli.fail("need --steps >= 2, --samples >= 0 and --n_eval >= 2")
  eng, label = latent.engine_from_flags()
  try:
    tree_a, tree_b = parse(_A.value, eng.cfg.max_len), parse(_B.value, eng.cfg.max_len)
  except ValueError as e:
    cli.fail(str(e))
  out = pathlib.Path(latent.OUT_DIR.value or "experiments/results/interpolation")
  cli.output_dir(out)  # (a file in its place: one line, not FileExistsError)
  rows = interpolate(eng, tree_a, tree_b, _STEPS.value, latent.SEED.value, _SAMPLES.value,
                     _TEMPERATURE.value, _N_EVAL.value)
  write_csv(rows, label, out / "interpolation.csv")
  plot(rows, _A.value, _B.value, label, out / "fig4.png")
  for r in rows:
    print(f"alpha {r['alpha']:.2f}  R2 A {r['r2_vs_a']:8.3f}  B {r['r2_vs_b']:8.3f}  {r['infix']}")
  print(f"model: {label}; wrote {out / 'interpolation.csv'} and {out / 'fig4.png'}")


if __name__ == "__main__":
  cli.run(main, ValueError)
