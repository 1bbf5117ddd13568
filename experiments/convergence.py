"""Paper Fig. 3 (App. "Iterative Convergence"): best-in-pool R2 over iterations, latent path.

    python experiments/convergence.py --preset=paper --workers=1            # a trained model
    python experiments/convergence.py --random_model=tiny --datasets=strogatz_lv1,strogatz_shearflow1 \\
        --pca_dataset=strogatz_shearflow1 --rounds=1 --iters=20             # a smoke run

(a) One trial per dataset (default: the 14 Strogatz datasets). Each round records, after every
batch, the pool champion's score and the best train R2 in the pool (search.RoundResult.history).
A dataset's curve is that best R2 (clipped to [-1, 1] as the search score clips it) averaged
over its rounds; fig3a.png draws the median and interquartile band of the curves across
datasets (--band=std: mean +- 0.5 sd, as the paper's caption states).
(b) On --pca_dataset: the champion's token ids at each history entry, encoded with one fixed
scatter of the training fold, plus the scatter-only z0 = f(pad, D); projected to 2-D by PCA.

Writes to --out_dir: history.csv (dataset, round, iteration, champion_score, best_r2_train),
fig3a.csv (iteration, center, lo, hi, datasets), fig3a.png, trajectory.csv, fig3b.png and
run.json (the settings and the model).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import platform
import sys

import numpy as np
from absl import flags

from lee_jax import cli
from lee_jax import datasets
from lee_jax import engine as engine_lib
from lee_jax import expr as E

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import runner  # noqa: E402  (experiments/runner.py, beside this script)
import sweep_results  # noqa: E402


# --- (a) convergence curves -------------------------------------------------------------------

def history_rows(run: runner.Run) -> list[dict]:
  return [{"dataset": run.name, "round": r.round_index, "iteration": it,
           "champion_score": score, "best_r2_train": best}
          for r in run.result.rounds for it, score, best in r.history]


def curves(rows: list[dict]) -> tuple[np.ndarray, list[str], np.ndarray]:
  """history rows -> (iteration grid, dataset names, best R2 [datasets, grid]).

  Each round is a step function of the iteration (its value holds until the next record);
  a dataset's curve is the mean over its rounds on the union of all recorded iterations.
  """
  grid = np.array(sorted({int(r["iteration"]) for r in rows}))
  names = sorted({r["dataset"] for r in rows})
  out = np.zeros((len(names), len(grid)))
  for i, name in enumerate(names):
    rounds = sorted({r["round"] for r in rows if r["dataset"] == name})
    for rnd in rounds:
      h = sorted((int(r["iteration"]), float(r["best_r2_train"])) for r in rows
                 if r["dataset"] == name and r["round"] == rnd)
      its = np.array([a for a, _ in h])
      vals = np.clip([b for _, b in h], -1.0, 1.0)  # -inf (empty pool) counts as -1
      # Before a round's first record (never, as every round records iteration 0) use it.
      out[i] += vals[np.maximum(np.searchsorted(its, grid, side="right") - 1, 0)]
    out[i] /= len(rounds)
  return grid, names, out


def band(values: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """(center, lo, hi) across datasets (axis 0): median and quartiles, or mean +- 0.5 sd."""
  if kind == "iqr":
    lo, center, hi = np.percentile(values, [25, 50, 75], axis=0)
    return center, lo, hi
  mean, sd = values.mean(axis=0), values.std(axis=0)
  return mean, mean - 0.5 * sd, mean + 0.5 * sd


def plot_convergence(path, grid, names, values, kind: str, title: str) -> None:
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  center, lo, hi = band(values, kind)
  fig, ax = plt.subplots(figsize=(5.5, 4))
  for v in values:
    ax.plot(grid, v, color="0.75", lw=0.7)
  ax.fill_between(grid, lo, hi, alpha=0.3, color="C0",
                  label="interquartile range" if kind == "iqr" else "mean $\\pm$ 0.5 sd")
  ax.plot(grid, center, color="C0", lw=2, label="median" if kind == "iqr" else "mean")
  ax.set(xlabel="iteration", ylabel="best-in-pool $R^2$ (train)",
         title=f"{title} ({len(names)} datasets)")
  ax.legend(loc="lower right")
  ax.grid(alpha=0.3)
  fig.tight_layout()
  fig.savefig(path, dpi=150)
  plt.close(fig)


# --- (b) the champion's path in latent space -----------------------------------------------

def champion_latents(eng: engine_lib.Engine, run: runner.Run, n_scatter: int, seed: int
                     ) -> tuple[list[dict], np.ndarray]:
  """(one row per point, z [points, d_z]): z0, then each round's champion at every record.

  All points are encoded with one scatter, so the path moves only when the champion does.
  """
  scatter = engine_lib.make_scatter(run.data.X_train, run.data.y_train, n_scatter,
                                    eng.cfg.n_features, np.random.default_rng(seed))
  rows = [{"dataset": run.name, "round": -1, "iteration": 0, "kind": "z0", "changed": True,
           "champion_score": float("nan"), "best_r2_train": float("nan"), "expression": ""}]
  ids = []
  for r in run.result.rounds:
    previous = None
    for (it, score, best), champ in zip(r.history, r.champion_ids):
      if champ is None:
        continue
      rows.append({"dataset": run.name, "round": r.round_index, "iteration": it,
                   "kind": "champion", "changed": previous is None or not np.array_equal(champ, previous),
                   "champion_score": score, "best_r2_train": best,
                   "expression": " ".join(E.to_prefix(E.parse_ids(champ)))})
      ids.append(champ)
      previous = champ
  z0 = eng.encode(None, scatter)
  z = np.concatenate([z0, eng.encode(np.stack(ids), scatter)]) if ids else z0
  return rows, z


def pca_2d(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """(points [n, 2], explained variance ratio [2]) of z [n, d] by SVD of the centred data.

  Each axis is signed so its largest-magnitude loading is positive (a deterministic picture);
  missing components (fewer than 3 points, or no spread along them) are zero.
  """
  x = np.asarray(z, np.float64) - np.mean(z, axis=0)
  u, s, vt = np.linalg.svd(x, full_matrices=False)
  # Components at rounding-error size (all points on a line) are dropped, not amplified.
  k = int(np.sum(s[:2] > 1e-6 * s[0])) if len(s) and s[0] > 0 else 0
  signs = np.sign(vt[np.arange(k), np.argmax(np.abs(vt[:k]), axis=1)])
  signs[signs == 0] = 1.0
  points = np.zeros((len(x), 2))
  points[:, :k] = u[:, :k] * s[:k] * signs
  var = s ** 2
  ratio = np.zeros(2)
  if var.sum() > 0:
    ratio[:k] = var[:k] / var.sum()
  return points, ratio


def plot_trajectory(path, rows: list[dict], points: np.ndarray, ratio: np.ndarray) -> None:
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  fig, ax = plt.subplots(figsize=(5.5, 4.5))
  its = np.array([r["iteration"] for r in rows], float)
  rounds = sorted({r["round"] for r in rows if r["kind"] == "champion"})
  sc = None
  for rnd in rounds:
    idx = [i for i, r in enumerate(rows) if r["round"] == rnd]
    ax.plot(points[[0] + idx, 0], points[[0] + idx, 1], color="0.6", lw=0.8, zorder=1)
    sc = ax.scatter(points[idx, 0], points[idx, 1], c=its[idx], cmap="viridis",
                    vmin=0, vmax=max(its.max(), 1), s=22, zorder=2)
    last = rows[idx[-1]]
    ax.annotate(f"$R^2$={last['best_r2_train']:.3f}", points[idx[-1]], fontsize=7,
                xytext=(4, 4), textcoords="offset points")
  ax.scatter(*points[0], marker="*", s=160, color="C3", zorder=3, label="$z_0$ (scatter only)")
  if sc is not None:
    fig.colorbar(sc, ax=ax, label="iteration")
  ax.set(xlabel=f"PC1 ({ratio[0]:.0%})", ylabel=f"PC2 ({ratio[1]:.0%})",
         title=f"pool-champion latents: {rows[0]['dataset']}")
  ax.legend(loc="best", fontsize=8)
  ax.margins(0.15)  # room for the R2 labels
  fig.tight_layout()
  fig.savefig(path, dpi=150)
  plt.close(fig)


# --- entry point ------------------------------------------------------------------------------

def run(setup: runner.Setup, sets: dict, out: pathlib.Path, pca_dataset: str = "",
        noise: float = 0.0, band_kind: str = "iqr") -> list[str]:
  """One trial per dataset in sets ({name: Dataset}); writes the files and returns their names."""
  cli.output_dir(out)  # (a file in its place: one line, not FileExistsError)
  rows, trajectory = [], None
  for i, (name, ds) in enumerate(sets.items()):
    one = runner.run_dataset(setup, ds, noise)
    rows += history_rows(one)
    final = max(h[2] for r in one.result.rounds for h in r.history)
    print(f"[{i + 1}/{len(sets)}] {name}: best train R2 {final:.4f}, "
          f"{one.result.wall_time:.1f}s", file=sys.stderr, flush=True)
    if name == pca_dataset:
      trajectory = champion_latents(setup.eng, one, setup.cfg.n_scatter, setup.seed)
  sweep_results.write_csv(out / "history.csv", rows)
  grid, names, values = curves(rows)
  center, lo, hi = band(values, band_kind)
  sweep_results.write_csv(out / "fig3a.csv", [
      {"iteration": int(g), "center": c, "lo": a, "hi": b, "datasets": len(names)}
      for g, c, a, b in zip(grid, center, lo, hi)])
  plot_convergence(out / "fig3a.png", grid, names, values, band_kind,
                   f"{setup.mode}, noise {noise:g}")
  written = ["history.csv", "fig3a.csv", "fig3a.png"]
  if trajectory is not None:
    traj_rows, z = trajectory
    points, ratio = pca_2d(z)
    for r, (a, b) in zip(traj_rows, points):
      r.update(pc1=a, pc2=b)
    sweep_results.write_csv(out / "trajectory.csv", traj_rows)
    plot_trajectory(out / "fig3b.png", traj_rows, points, ratio)
    written += ["trajectory.csv", "fig3b.png"]
  (out / "run.json").write_text(json.dumps({
      "datasets": list(sets), "pca_dataset": pca_dataset, "noise": noise, "seed": setup.seed,
      "mode": setup.mode, "model": setup.source, "band": band_kind,
      "search_config": dataclasses.asdict(setup.cfg), "platform": platform.platform()},
      indent=1) + "\n")
  return written + ["run.json"]


def _define_flags() -> None:
  runner.define_search_flags("Datasets (default: the 14 Strogatz ones).")
  flags.DEFINE_string("pca_dataset", "strogatz_shearflow1",
                      "Dataset whose champion latents are projected (Fig. 3b); '' for none.")
  flags.DEFINE_float("noise", 0.0, "Target noise level.")
  flags.DEFINE_enum("band", "iqr", ["iqr", "std"],
                    "Fig. 3a band: median + interquartile range, or mean +- 0.5 sd (the paper's).")
  flags.DEFINE_string("out_dir", "experiments/results/convergence", "Where to write.")


def main(argv):
  del argv
  f = flags.FLAGS
  names = datasets.resolve(f.datasets, [runner.STROGATZ])
  sets = runner.load_all(names)
  if f.pca_dataset and f.pca_dataset not in names:
    cli.fail(f"--pca_dataset {f.pca_dataset} is not one of the datasets run "
             f"({', '.join(names)})")
  out = pathlib.Path(f.out_dir)
  written = run(runner.setup_from_flags(), sets, out, f.pca_dataset, f.noise, f.band)
  print(f"wrote {', '.join(written)} to {out}")


if __name__ == "__main__":
  _define_flags()
  cli.run(main, ValueError)
