"""Paper Table 11 (App. "Timing Details"): per-dataset wall time and where the time goes.

    python experiments/timing.py --random_model=small --datasets=strogatz_lv1,strogatz_vdp1
    python experiments/timing.py --runs "fast combined=experiments/results/srbench_fast_combined"

Either runs one trial per dataset and noise here (a short warm-up round first, untimed, so
most one-time jit compilation stays out of the table; batch sizes first met later, and worker
processes, still compile inside it), or reads the cells of srbench.py result folders
(--runs; srbench.py saves each cell's wall_time_s and per-phase timings_s, but not the machine).

Phases are the search's own timers (search.RoundResult.timings): encode, decode, descend (the
gradient segments), fit (constants), score (batched R2), simplify (SymPy complexity), and cmaes
when that mode runs; `other` is the rest of the wall time (parsing, the pool, processes). Rounds
in worker processes overlap, so their phases can add up to more than the wall time; `other` is
then 0. Shares are of the sum of phases plus other.

Writes to --out_dir: timing.md, phases.csv (label, phase, seconds per dataset, share),
wall.csv (label, group, noise, cells, mean and sd of the wall time), timing.png.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import platform
import sys

import jax
import numpy as np
from absl import flags

from lee_jax import cli

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import runner  # noqa: E402  (experiments/runner.py, beside this script)
import sweep_results  # noqa: E402

PHASES = ("encode", "decode", "descend", "fit", "score", "simplify")
DEFAULT_DATASETS = ("strogatz_lv1", "strogatz_shearflow1", "strogatz_vdp1")


def machine() -> str:
  dev = jax.devices()[0]
  return (f"{platform.platform()}, {os.cpu_count()} CPUs, jax {jax.__version__} backend "
          f"{jax.default_backend()} ({len(jax.devices())} x {dev.device_kind})")


# --- timings: measured here or read from sweeps --------------------------------------------

def cell(label: str, group: str, noise: float, wall: float, timings: dict) -> dict:
  return {"label": label, "group": group, "noise": float(noise), "wall_time_s": float(wall),
          "timings_s": {k: float(v) for k, v in timings.items()}}


def measure(setup: runner.Setup, sets: dict, noises: list[float], label: str,
            warmup: bool = True) -> list[dict]:
  """One trial per (dataset, noise) -> timing cells."""
  if warmup and sets:
    cfg = setup.cfg
    # Enough iterations for one scatter refresh and one gradient segment: every shape compiles.
    iters = min(cfg.iterations, max(cfg.decode_period, cfg.parents * cfg.refresh_every))
    # Another seed: the same candidates again would find SymPy's caches warm.
    warm = dataclasses.replace(setup, seed=setup.seed + 1_000_003, cfg=dataclasses.replace(
        cfg, rounds=1, workers=1, iterations=iters))
    runner.run_dataset(warm, next(iter(sets.values())))
  out = []
  for name, ds in sets.items():
    for noise in noises:
      res = runner.run_dataset(setup, ds, noise).result
      total: dict = {}
      for r in res.rounds:
        for k, v in r.timings.items():
          total[k] = total.get(k, 0.0) + v
      out.append(cell(label, ds.group, noise, res.wall_time, total))
      print(f"{name} noise {noise:g}: {res.wall_time:.1f}s", file=sys.stderr, flush=True)
  return out


def read(runs: list[tuple[str, tuple[pathlib.Path, ...]]]) -> list[dict]:
  """Timing cells of srbench.py folders (cells without timings, e.g. peers, are skipped)."""
  return [cell(label, r["group"], r["noise"], r["wall_time_s"], r["timings_s"])
          for label, folders in runs for r in sweep_results.read_rows(folders)
          if isinstance(r.get("timings_s"), dict) and r["timings_s"]
          and r.get("wall_time_s") is not None]


# --- tables ---------------------------------------------------------------------------------

def phase_table(cells: list[dict]) -> list[dict]:
  """Per label: mean seconds per dataset of each phase and `other`, and its share of the total."""
  out = []
  for label in dict.fromkeys(c["label"] for c in cells):
    cs = [c for c in cells if c["label"] == label]
    extra = sorted({k for c in cs for k in c["timings_s"]} - set(PHASES))
    phases = list(PHASES) + extra
    sec = {p: float(np.mean([c["timings_s"].get(p, 0.0) for c in cs])) for p in phases}
    sec["other"] = float(np.mean([max(c["wall_time_s"] - sum(c["timings_s"].values()), 0.0)
                                  for c in cs]))
    total = sum(sec.values())
    out += [{"label": label, "phase": p, "seconds": s, "share": s / total if total else 0.0}
            for p, s in sec.items()]
  return out


def wall_table(cells: list[dict]) -> list[dict]:
  """Per (label, group, noise): the paper's Table 11 cell, mean +- sd of the wall time."""
  keys = dict.fromkeys((c["label"], c["group"], c["noise"]) for c in cells)
  out = []
  for label, group, noise in keys:
    w = [c["wall_time_s"] for c in cells if (c["label"], c["group"], c["noise"]) == (label, group, noise)]
    out.append({"label": label, "group": group, "noise": noise, "cells": len(w),
                "wall_mean_s": float(np.mean(w)), "wall_sd_s": float(np.std(w))})
  return out


def markdown(phases: list[dict], walls: list[dict], header: list[str]) -> str:
  lines = ["# LEE timing (paper Table 11 style)", ""] + [f"- {h}" for h in header] + [""]
  lines += ["## Wall time per dataset (seconds, mean +- sd over cells)", "",
            "| run | group | eps | cells | wall s |", "|---|---|---|---|---|"]
  lines += [f"| {w['label']} | {w['group']} | {w['noise']:g} | {w['cells']} | "
            f"{w['wall_mean_s']:.2f} +- {w['wall_sd_s']:.2f} |" for w in walls]
  lines += ["", "## Where the time goes (seconds per dataset, share)", "",
            "| run | phase | seconds | share |", "|---|---|---|---|"]
  lines += [f"| {p['label']} | {p['phase']} | {p['seconds']:.3f} | {p['share']:.1%} |"
            for p in phases]
  return "\n".join(lines) + "\n"


def plot(path, phases: list[dict]) -> None:
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  labels = list(dict.fromkeys(p["label"] for p in phases))
  names = list(dict.fromkeys(p["phase"] for p in phases))
  fig, ax = plt.subplots(figsize=(7, 1.6 + 0.5 * len(labels)))
  left = np.zeros(len(labels))
  for i, name in enumerate(names):
    share = np.array([next((p["share"] for p in phases if p["label"] == l and p["phase"] == name), 0.0)
                      for l in labels])
    ax.barh(labels, share, left=left, color=f"C{i}", label=name)
    left += share
  ax.set(xlim=(0, 1), xlabel="share of the time per dataset")
  ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
  fig.savefig(path, dpi=150, bbox_inches="tight")
  plt.close(fig)


def write(cells: list[dict], out: pathlib.Path, header: list[str]) -> list[str]:
  """Tables and the plot of timing cells; returns the file names."""
  cli.output_dir(out)  # (a file in its place: one line, not FileExistsError)
  phases, walls = phase_table(cells), wall_table(cells)
  (out / "timing.md").write_text(markdown(phases, walls, header))
  sweep_results.write_csv(out / "phases.csv", phases)
  sweep_results.write_csv(out / "wall.csv", walls)
  plot(out / "timing.png", phases)
  return ["timing.md", "phases.csv", "wall.csv", "timing.png"]


# --- entry point ------------------------------------------------------------------------------

def _define_flags() -> None:
  runner.define_search_flags(f"Datasets to time (default: {','.join(DEFAULT_DATASETS)}).")
  flags.DEFINE_list("noise", ["0"], "Target noise levels.")
  flags.DEFINE_list("runs", [], "LABEL=FOLDER srbench.py folders to read instead of running.")
  flags.DEFINE_bool("warmup", True, "Run one untimed round first (compilation).")
  flags.DEFINE_string("out_dir", "experiments/results/timing", "Where to write.")


def main(argv):
  del argv
  f = flags.FLAGS
  out = pathlib.Path(f.out_dir)
  if f.runs:
    try:
      runs = sweep_results.parse_runs(f.runs)
    except sweep_results.SweepError as e:
      cli.fail(str(e))
    cells = read(runs)
    if not cells:
      cli.fail(f"no cell with timings in {', '.join(str(p) for _, p in runs)}")
    header = ["machine: not recorded by srbench.py (table written on " + machine() + ")",
              "source: " + ", ".join(f"{label} = {'+'.join(map(str, folders))}" for label, folders in runs)]
  else:
    # (--datasets= is no datasets, not the defaults; --noise= and --noise=abc are errors)
    sets = runner.load_all(list(DEFAULT_DATASETS) if f.datasets is None else f.datasets)
    noises = list(runner.noise_levels(f.noise))
    setup = runner.setup_from_flags()
    label = f"{setup.mode}, {setup.source}"
    cells = measure(setup, sets, noises, label, f.warmup)
    c = setup.cfg
    header = [f"machine: {machine()}",
              f"source: measured here; model {setup.source}, mode {setup.mode}, preset "
              f"{f.preset}: {c.rounds} rounds x {c.iterations} iterations, {c.workers} worker(s), "
              f"fitter {c.fitter}; datasets {', '.join(sets)}; "
              + ("compilation excluded (warm-up round)" if f.warmup else "compilation included")]
  written = write(cells, out, header)
  print(f"wrote {', '.join(written)} to {out}")


if __name__ == "__main__":
  _define_flags()
  cli.run(main, ValueError)
