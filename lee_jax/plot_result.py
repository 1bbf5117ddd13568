"""A search result as one figure: the equation table, the fit, and the search's progress.

Written by `python -m lee_jax.infer ... --plot fit.png` and `LEERegressor.plot(X, y)`, and
drawn again from a finished run's --out file by

    python -m lee_jax.plot_result RESULT.json [--out fit.png] [--overwrite]

(its rows reloaded and split as the run did; one figure per trial).
Three panels: (1) the Pareto table (validation error against complexity, the answer
starred, each point labelled with its formula); (2) the answer against the data: the curve
over the data for one feature, predicted against true otherwise; (3) every round's best
train R2 over its iterations.
"""

from __future__ import annotations

import os
import pathlib
import re
from typing import Callable, Mapping, Sequence

import numpy as np

from lee_jax import cli

FORMATS = (".png", ".pdf", ".svg")
_FLOOR = 1e-16  # 1 - R2 is drawn on a log axis; an exact fit sits on this floor
_FOLD_COLORS = {"train": "0.6", "val": "C0", "test": "C3"}


class PlotError(ValueError):
  pass


def check_path(path: str | os.PathLike, overwrite: bool = False) -> pathlib.Path:
  """A figure path that can be written: a known format, an existing folder, and no file
  there unless `overwrite`."""
  p = pathlib.Path(path)
  if p.suffix.lower() not in FORMATS:
    raise PlotError(f"{p}: plot format must be one of {', '.join(FORMATS)}")
  try:  # a folder in its place, a missing or read-only folder: before the search, not after
    return cli.output_file(p, overwrite, flag="plot")
  except cli.PathError as e:
    raise PlotError(str(e)) from None


def trial_paths(path: pathlib.Path, trials: int) -> list[pathlib.Path]:
  """One figure per trial: `fit.png` for one trial, `fit_trial1.png`, ... for several."""
  if trials == 1:
    return [path]
  return [path.with_name(f"{path.stem}_trial{t + 1}{path.suffix}") for t in range(trials)]


def _error(r2) -> float:
  """1 - R2, floored for the log axis (None / NaN -> NaN, not drawn)."""
  r2 = np.nan if r2 is None else float(r2)
  return max(1.0 - r2, _FLOOR) if np.isfinite(r2) else np.nan


_NUMBER = re.compile(r"\d+\.\d+(?:e[-+]?\d+)?")


def _short(text: str, width: int = 36) -> str:
  """A table formula as a label: constants at 4 significant figures, at most `width` chars."""
  text = _NUMBER.sub(lambda m: f"{float(m.group(0)):.4g}", text)
  return text if len(text) <= width else text[:width - 1] + "…"


def figure(equations: Sequence[Mapping], best_complexity: int | None,
           predict: Callable[[np.ndarray], np.ndarray],
           folds: Mapping[str, tuple[np.ndarray, np.ndarray]], names: Sequence[str],
           histories: Sequence[Sequence[Sequence[float]]] = (), title: str = ""):
  """The three-panel figure (a matplotlib Figure; the caller saves or shows it).

  equations: the Pareto table ({'complexity', 'r2_val', 'expression'}, simplest first);
  best_complexity: the answer's complexity (starred); predict: X -> the answer's y_hat;
  folds: name -> (X, y), drawn in this order; histories: per round, (iteration, champion
  score, best train R2) rows.
  """
  # A bare Figure, not pyplot: no backend or window is chosen for the caller, nothing global
  # is left open, and notebooks still display it.
  from matplotlib.figure import Figure
  from matplotlib.ticker import MaxNLocator

  if not folds:
    raise PlotError("nothing to plot: no data folds given")
  fig = Figure(figsize=(15, 4.4))
  ax_eq, ax_fit, ax_run = fig.subplots(1, 3)

  # (1) The equation table: accuracy bought by each step of complexity.
  cs = [e["complexity"] for e in equations]
  errs = [_error(e["r2_val"]) for e in equations]
  ax_eq.plot(cs, errs, "o-", color="C0", ms=4, lw=1)
  mid = (min(cs) + max(cs)) / 2 if cs else 0
  for c, err, e in zip(cs, errs, equations):
    if np.isfinite(err):  # labels point inwards, so none runs off the panel
      right = c > mid
      ax_eq.annotate(_short(e["expression"]), (c, err), fontsize=6,
                     xytext=(-4 if right else 4, 3), textcoords="offset points",
                     ha="right" if right else "left")
  best = [(c, err) for c, err in zip(cs, errs) if c == best_complexity]
  if best:
    ax_eq.plot(*best[0], "*", color="C3", ms=14, zorder=3, label="answer")
    ax_eq.legend(fontsize=7, loc="lower left")
  ax_eq.set_yscale("log")
  ax_eq.xaxis.set_major_locator(MaxNLocator(integer=True))
  ax_eq.set(xlabel="complexity (simplified nodes)", ylabel="1 - validation $R^2$",
            title="equations (best at each complexity)")

  # (2) The answer against the data.
  X0 = next(iter(folds.values()))[0]
  one_feature = np.asarray(X0).reshape(len(X0), -1).shape[1] == 1
  if one_feature:
    xs = np.concatenate([np.asarray(X).reshape(-1) for X, _ in folds.values()])
    grid = np.linspace(xs.min(), xs.max(), 512)
    with np.errstate(all="ignore"):
      curve = np.asarray(predict(grid[:, None]), np.float64)
    for name, (X, y) in folds.items():
      ax_fit.scatter(np.asarray(X).reshape(-1), y, s=8, alpha=0.7,
                     color=_FOLD_COLORS.get(name), label=name)
    ax_fit.plot(grid, np.where(np.isfinite(curve), curve, np.nan), color="k", lw=1.2,
                label="formula")
    ax_fit.set(xlabel=names[0], ylabel="y", title="formula over the data")
  else:
    lo, hi = np.inf, -np.inf
    for name, (X, y) in folds.items():
      with np.errstate(all="ignore"):
        y_hat = np.asarray(predict(np.asarray(X, np.float64)), np.float64)
      ax_fit.scatter(y, y_hat, s=8, alpha=0.7, color=_FOLD_COLORS.get(name), label=name)
      lo, hi = min(lo, np.min(y)), max(hi, np.max(y))
    ax_fit.plot([lo, hi], [lo, hi], color="k", lw=0.8, ls="--", label="y = $\\hat{y}$")
    ax_fit.set(xlabel="true y", ylabel="predicted y", title="predicted against true")
    ax_fit.set_ylim(lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo))  # a pole does not squash it
  ax_fit.legend(fontsize=7)

  # (3) How each round's search got there.
  for i, h in enumerate(histories):
    rows = [(it, _error(r2)) for it, _, r2 in h]
    if rows:
      ax_run.plot([r[0] for r in rows], [r[1] for r in rows], lw=1, label=f"round {i + 1}")
  ax_run.set_yscale("log")
  ax_run.set(xlabel="iteration", ylabel="1 - best train $R^2$", title="search, per round")
  if histories and len(histories) <= 10:
    ax_run.legend(fontsize=6, ncol=2)

  for ax in (ax_eq, ax_fit, ax_run):
    ax.grid(alpha=0.3, which="both")
    ax.tick_params(labelsize=7)
  if title:
    fig.suptitle(title, fontsize=10)
  fig.tight_layout()
  return fig


def save(fig, path: str | os.PathLike) -> pathlib.Path:
  """Write atomically: a killed run never leaves half a figure."""
  path = pathlib.Path(path)
  try:
    cli.write_atomically(path, lambda tmp: fig.savefig(tmp, dpi=150,
                                                       format=path.suffix.lstrip(".").lower()))
  except OSError as e:  # e.g. a folder that refuses files (/proc), a full disk
    raise PlotError(f"{path}: cannot write it ({e.strerror or e})") from None
  return path


def trial_figure(rep: Mapping, predict: Callable[[np.ndarray], np.ndarray], parts, names):
  """The figure of one `lee_jax.infer` trial: its report `rep`, its answer as `predict`, over
  the train and test rows of its split `parts` (validation rows are in the table)."""
  r2 = "n/a" if rep["r2_test"] is None else f"{rep['r2_test']:.4f}"
  return figure(
      rep["equations"], rep["complexity"], predict,
      {"train": (parts.X_train, parts.y_train), "test": (parts.X_test, parts.y_test)}, names,
      [r["history"] for r in rep["rounds"]],
      title=f"{rep['dataset']}: {rep['expression']}  (test R2 {r2})")


def redraw(result_file: str | os.PathLike, out: str | os.PathLike | None = None,
           overwrite: bool = False) -> list[pathlib.Path]:
  """The figures of a `lee_jax.infer --out` file, one per trial that found a formula (to
  `out`, default the file's name with .png; several trials: NAME_trial1.png, ...)."""
  import json

  from lee_jax import datasets
  from lee_jax import expr as E
  from lee_jax import trial as trial_lib

  src = pathlib.Path(result_file)
  try:
    run = json.loads(src.read_text())
    spec, trials = run.get("input"), list(run["trials"])
  except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as e:
    why = getattr(e, "strerror", None) or str(e).splitlines()[0]
    raise PlotError(f"{src}: not a `python -m lee_jax.infer --out` file ({why})") from None
  if spec is None:  # written before the input was recorded: a shipped dataset's name will do
    spec = {"dataset": run.get("dataset")}
    if spec["dataset"] not in {d.name for d in datasets.list_datasets()}:
      raise PlotError(f"{src} does not say which table its rows came from (written before "
                      "infer recorded it); run infer again with --plot")
  path = check_path(out if out is not None else src.with_suffix(".png"), overwrite=True)
  paths = [check_path(p, overwrite) for p in trial_paths(path, len(trials))]
  try:
    ds = datasets.load_input(**spec)
  except TypeError as e:
    raise PlotError(f"{src}: its \"input\" is not one infer writes ({e})") from None
  if run.get("rows_sha256") not in (None, datasets.fingerprint(ds)):  # (older files lack it)
    raise PlotError(f"{src}: the rows of {spec.get('data') or spec.get('dataset')} are not the "
                    "ones the run read (edited since?); run infer again with --plot")
  written = []
  for t, (rep, p) in enumerate(zip(trials, paths), 1):
    try:
      if not rep.get("found"):
        continue
      node = E.from_prefix(rep["prefix"].split())
      if rep.get("constants") is not None:  # full precision (the prefix holds 3 digits)
        node = E.with_constants(node, rep["constants"])
      tds = trial_columns(ds, spec, rep)
      parts = datasets.split(tds.X, tds.y, seed=rep["seed"], noise=rep["noise"])
      fig = trial_figure(rep, lambda X, node=node: trial_lib.predict(node, X), parts,
                         tds.feature_names)
    except (KeyError, TypeError, AttributeError, ValueError) as e:  # a hand-edited record
      raise PlotError(f"{src}: trial {t} is not a record infer writes ({type(e).__name__}: "
                      f"{str(e).splitlines()[0] if str(e) else ''})") from None
    written.append(save(fig, p))
  if not written:
    raise PlotError(f"{src}: no trial found a formula; nothing to draw")
  return written


def trial_columns(ds, spec: dict, rep: dict):
  """The columns a trial read: those it recorded (infer's select_k_best chose them on the
  trial's training rows); a record from before that read the columns chosen on every row."""
  from lee_jax import datasets
  if rep.get("features") is not None:
    return datasets.columns_named(ds, rep["features"])
  k = spec.get("select_k_best")
  return ds if k is None else datasets.select_columns(ds, k)


def main(argv):
  from absl import flags
  if len(argv) != 2:
    raise PlotError("usage: python -m lee_jax.plot_result RESULT.json [--out fit.png] "
                    "[--overwrite]")
  for p in redraw(argv[1], flags.FLAGS.out, flags.FLAGS.overwrite):
    print(f"plot written to {p}")


if __name__ == "__main__":
  from absl import flags

  flags.DEFINE_string("out", None, "Figure path (.png, .pdf or .svg; default: RESULT with .png).")
  flags.DEFINE_bool("overwrite", False, "Allow the figures to replace existing files.")
  from lee_jax import datasets as _datasets
  cli.run(main, PlotError, _datasets.DataError, positional=1)
