"""`python -m lee_jax.infer --dataset NAME`: symbolic regression on one dataset.

Loads the dataset (a shipped SRBench set, or --data file.csv --target col), applies the
SRBench protocol per trial (75/25 split, 20% of train as validation, target noise on
train/val; trial t uses seed s_t = seed + 1000 t), runs the latent search with a trained
checkpoint and prints the best expression with its R2 on every fold. --out writes the full
result (every trial, round, failure count and timing) as JSON.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import sys

import numpy as np
from absl import flags

from lee_jax import checkpoints
from lee_jax import cli
from lee_jax import configs
from lee_jax import datasets
from lee_jax import engine as engine_lib
from lee_jax import expr as E
from lee_jax import fit
from lee_jax import plot_result
from lee_jax import progress as progress_lib
from lee_jax import search
from lee_jax import solution
from lee_jax import trial as trial_lib
from lee_jax import weights

_DATASET = flags.DEFINE_string("dataset", None, "Shipped dataset name (see `python -m lee_jax.datasets --list`).")
_DATA = flags.DEFINE_string("data", None, "A .csv/.tsv(.gz) table instead of --dataset.")
_TARGET = flags.DEFINE_string("target", "target", "Target column of --data.")
_FEATURES = flags.DEFINE_list("features", None, "Feature columns of --data (default: all others).")
_WEIGHTS = flags.DEFINE_string("weights", None,
                               "Sample-weight column of --data (finite, >= 0): weighted squared "
                               "error in the fits, weighted R2 in the search and the report.")
_SELECT = flags.DEFINE_integer("select_k_best", None,
                               "Keep this many feature columns (1-10), chosen by how well they "
                               "predict the target together (nearest-neighbour, leave-one-out), "
                               "as PySR's select_k_best; needed for tables with more than 10.")
_DATA_DIR = flags.DEFINE_string("data_dir", None, "PMLB-layout directory searched before the shipped data.")
_NOISE = flags.DEFINE_float("noise", 0.0, "Target noise level eps: sigma = eps * RMS(y_train).")
_SEED = flags.DEFINE_integer("seed", 0, "Base seed: trial t uses seed + 1000 t (split and search).")
_TRIALS = flags.DEFINE_integer("trials", 1, "Independent trials (different splits and search seeds).")
_PRESET = flags.DEFINE_enum("preset", "fast", list(configs.PRESETS),
                            "Search budget: paper = Table 10 (+ our seeds, long sums and parsimony "
                            "step, each of which a --no flag or 0 turns off); fast = 2 rounds x 200 "
                            "iterations, ~60 s per dataset on a 2-core CPU.")
_MODE = flags.DEFINE_enum("mode", "combined", list(configs.MODES), "Refinement mode.")
_ROUNDS = flags.DEFINE_integer("rounds", None, "Rounds per trial (default: the preset's).")
_ITERS = flags.DEFINE_integer("iters", None, "Iterations per round (default: the preset's).")
_WORKERS = flags.DEFINE_integer("workers", None, "Processes running rounds concurrently (default: the preset's).")
_HELPERS = flags.DEFINE_integer("simplify_helpers", None,
                                "Helper processes for SymPy simplification, besides the search's own "
                                "(default: the preset's; 0 = in-process).")
_OVERLAP = flags.DEFINE_bool("overlap", None,
                              "Simplify a batch's candidates (SymPy) in the helper processes while "
                              "the next batch decodes; its parents then come from the pool one "
                              "batch behind (default: the preset's, off = the paper). Pays off "
                              "where the model runs on an accelerator and the CPU has cores to spare.")
_FITTER = flags.DEFINE_enum("fitter", None, list(configs.FITTERS),
                            "Constant fitter: scipy (L-BFGS-B per candidate) or jax (least squares "
                            "where constants enter linearly, batched Levenberg-Marquardt on the "
                            "device for the rest) (default: the preset's).")
_SIMPLIFY = flags.DEFINE_enum("simplify", None, list(configs.SIMPLIFY),
                              "The complexity the search ranks candidates by: light = SymPy's "
                              "simplify without its trigonometric passes (a third of the time), "
                              "full = the paper. Reported complexities are always full "
                              "(default: the preset's).")
_LATENT_NOISE = flags.DEFINE_float(
    "latent_noise", None, "Sampled decodes start from mu + s * std * eps, std the encoder's "
    "posterior spread (default: the model's, 3 for the shipped small, else the preset's; "
    "0 = the paper). Helps a model that decodes its parent back (BUILD_NOTES 'Latent noise').")
_POLY = flags.DEFINE_integer("poly_terms", None,
                             "Seed each round's pool with the best 1..T-term polynomials of "
                             "degree <= 3 (with and without an intercept); 0 = none, the paper "
                             "(default: the preset's).")
_POLY_FLOOR = flags.DEFINE_bool("poly_floor", None,
                                "The polynomial seeds are answer candidates only (never parents "
                                "of new decodes), like the constant and linear baselines "
                                "(default: the preset's).")
_SEP = flags.DEFINE_integer("sep_terms", None,
                            "Seed each round's pool with the best 1..T-term sums of products of "
                            "two one-variable functions (cos(x)/tan(y)); 0 = none, the paper "
                            "(default: the preset's).")
_POWER = flags.DEFINE_bool("power_seeds", None,
                           "Seed each round's pool with power laws c * x1^a1 * x2^a2 ... (whole or "
                           "half exponents, fitted on the logs) and sums of two of them of y, y^2, "
                           "1/y or 1/y^2 (m0/sqrt(1-v^2/c^2)); --nopower_seeds = none, the paper "
                           "(default: the preset's).")
_FACTOR = flags.DEFINE_bool("factor_seeds", None,
                            "Seed each round's pool with power laws times short sums, M(x) * S(x) "
                            "(G m1 m2 (1/r2 - 1/r1)); --nofactor_seeds = none, the paper "
                            "(default: the preset's).")
_COMPOSITE = flags.DEFINE_bool("composite_seeds", None,
                               "Seed each round's pool with short sums of functions of products "
                               "and ratios of variables, alone and times power laws "
                               "(n0 exp(-m g x / (kb T))); --nocomposite_seeds = none, the paper "
                               "(default: the preset's).")
_TRANSFORM = flags.DEFINE_bool("transform_seeds", None,
                               "Seed each round's pool with sqrt(S), 1/S and exp(S) for seeds S of "
                               "y^2, 1/y and log|y| (sqrt((x2-x1)^2 + (y2-y1)^2)); "
                               "--notransform_seeds = none, the paper (default: the preset's).")
_WAVE = flags.DEFINE_bool("wave_seeds", None,
                          "Seed each round's pool with A sin(c u + phi) + d and its sin and cos "
                          "forms, the frequency c scanned, u a variable or a product or ratio of "
                          "two or three (2.5 sin(2.3 t)); --nowave_seeds = none, the paper "
                          "(default: the preset's).")
_LONG = flags.DEFINE_integer("long_terms", None,
                             "Once per trial, the best sum of up to T one-variable or product "
                             "terms (or monomials) answers instead when its validation R2 pays "
                             "for its extra nodes at alpha per node; 0 = never, the paper "
                             "(default: the preset's).")
_PARSIMONY = flags.DEFINE_bool("parsimony", None,
                               "The answer steps to simpler variants (a summand dropped, "
                               "constants fixed at an integer or a small half, a function the "
                               "rows see straight replaced by its line; the rest refitted) "
                               "while BIC on its training rows falls, and is written in its "
                               "fewest nodes (the same values on the rows: sqrt(a)*sqrt(b) as "
                               "sqrt(a*b)); --noparsimony = the answer as found, the paper "
                               "(default: the preset's).")
_FINAL_REFIT = flags.DEFINE_bool("final_refit", None,
                                 "Once the validation rows have chosen the answer, its free "
                                 "constants are fitted again on the training and validation "
                                 "rows together; --nofinal_refit = the training rows' fit, the "
                                 "paper (default: the preset's).")
_MAX_TIME = flags.DEFINE_float("max_time", None,
                               "Seconds per trial (default: no limit). Past it the search stops "
                               "refining and answers from what it has; round 1 always builds its "
                               "initial pool. Results then depend on the machine's speed.")
_CHECKPOINT = flags.DEFINE_string("checkpoint", None,
                                  "Trained model: a training workdir, its export/ folder, or a "
                                  "`python -m lee_jax.weights` folder (default: the one shipped "
                                  "with the package).")
_OUT = flags.DEFINE_string("out", None, "Write the full result as JSON here.")
_PLOT = flags.DEFINE_string("plot", None,
                            "Draw the result here (.png, .pdf or .svg): the equation table, the "
                            "answer against the data, each round's progress. Several trials: "
                            "NAME_trial1.png, ...")
_OVERWRITE = flags.DEFINE_bool("overwrite", False, "Allow --out and --plot to replace existing files.")
_QUIET = flags.DEFINE_bool("quiet", False, "No progress display.")


def input_spec() -> dict:
  """Where the rows come from, as the flags say (`datasets.load_input`'s arguments; also
  written into --out, so `python -m lee_jax.plot_result` can draw the result again)."""
  if (_DATASET.value is None) == (_DATA.value is None):
    raise datasets.DataError("pass exactly one of --dataset NAME or --data FILE")
  if _DATA.value is not None:
    return {"data": _DATA.value, "target": _TARGET.value,
            "features": _FEATURES.value, "weights": _WEIGHTS.value,
            "select_k_best": _SELECT.value}
  # A shipped dataset has fixed columns: a column flag would be ignored, so say so instead.
  for flag, given in (("weights", _WEIGHTS.value is not None),
                      ("features", _FEATURES.value is not None),
                      ("target", _TARGET.value != _TARGET.default)):
    if given:
      raise datasets.DataError(f"--{flag} names a column of a --data table (not of --dataset)")
  return {"dataset": _DATASET.value, "data_dir": _DATA_DIR.value,
          "select_k_best": _SELECT.value}


def weights_of(ds: datasets.Dataset, rows: np.ndarray) -> np.ndarray | None:
  return None if ds.weights is None else ds.weights[rows]


def search_config() -> configs.SearchConfig:
  try:
    cfg = configs.get_search_config(_PRESET.value, weights.search_defaults(_CHECKPOINT.value),
                                     rounds=_ROUNDS.value, iterations=_ITERS.value,
                                     workers=_WORKERS.value, fitter=_FITTER.value,
                                     simplify_helpers=_HELPERS.value, overlap=_OVERLAP.value,
                                     latent_noise=_LATENT_NOISE.value, poly_terms=_POLY.value,
                                     poly_floor=_POLY_FLOOR.value, sep_terms=_SEP.value,
                                     power_seeds=_POWER.value, factor_seeds=_FACTOR.value,
                                     composite_seeds=_COMPOSITE.value,
                                     transform_seeds=_TRANSFORM.value, wave_seeds=_WAVE.value,
                                     long_terms=_LONG.value, parsimony=_PARSIMONY.value,
                                     final_refit=_FINAL_REFIT.value, simplify=_SIMPLIFY.value)
    if cfg.fitter == "jax":
      fit.fit_backend()  # $LEE_JAX_FIT_BACKEND names a platform here, before any search
    return cfg
  except ValueError as e:
    raise datasets.DataError(str(e)) from None


def model_settings(cfg: configs.SearchConfig) -> str:
  """', latent noise 3 (the model's default)' where the model's meta.json set a search field
  that the command line did not."""
  own = weights.search_defaults(_CHECKPOINT.value)
  shown = [f"{k.replace('_', ' ')} {getattr(cfg, k):g}" + (" (the model's default)" if (
      getattr(cfg, k) == v) else "") for k, v in sorted(own.items())]
  return "".join(f", {s}" for s in shown)


def check_out_path() -> pathlib.Path | None:
  if _OUT.value is None:
    return None
  # a folder in its place, a missing or read-only folder: before the search, not after it
  return cli.output_file(_OUT.value, _OVERWRITE.value)


def check_plot_paths(trials: int) -> list[pathlib.Path] | None:
  if _PLOT.value is None:
    return None
  try:
    # only the files that will be written (fit_trial1.png, ... for several trials) must be new
    path = plot_result.check_path(_PLOT.value, overwrite=True)
    return [plot_result.check_path(p, _OVERWRITE.value)
            for p in plot_result.trial_paths(path, trials)]
  except plot_result.PlotError as e:
    raise datasets.DataError(f"--plot: {e}") from None


def check_distinct(out_path: pathlib.Path | None, plot_paths) -> None:
  """No output in the place of another, or of the input table (which --overwrite would
  replace with a result)."""
  named = [("--data", None if _DATA.value is None else pathlib.Path(_DATA.value)),
           ("--out", out_path)] + [("--plot", p) for p in plot_paths or ()]
  seen: dict[pathlib.Path, str] = {}
  for flag, p in named:
    if p is None:
      continue
    key = p.resolve()
    if key in seen:
      raise datasets.DataError(f"{seen[key]} and {flag} name the same file {p}; give each "
                               "its own")
    seen[key] = flag


def draw(path: pathlib.Path, rep: dict, result, parts: datasets.Split, names) -> None:
  fig = plot_result.trial_figure(rep, lambda X: trial_lib.predict(result.winner.node, X), parts,
                                 names)
  print(f"plot written to {plot_result.save(fig, path)}")


def write_json(path: pathlib.Path, obj: dict) -> None:
  text = json.dumps(obj, indent=1)
  cli.write_atomically(path, lambda tmp: tmp.write_text(text))


def _r2(value: float | None) -> str:
  """An R2 as printed; the report holds None where it is not finite (-inf: a fold whose
  target is constant, unless the answer is exact there)."""
  return "n/a" if value is None else f"{value:.6f}"


def print_trial(rep: dict, names) -> None:
  if not rep["found"]:
    print(f"no valid expression found ({rep['candidates']} candidates; failures {rep['failures']})")
    return
  if rep.get("timed_out"):
    done = sum(1 for r in rep["rounds"] if not r["timed_out"])
    total = rep.get("config", {}).get("rounds", len(rep["rounds"]))
    print(f"time limit reached: {done} of {total} rounds finished; the answer is the best so far")
  print(f"best expression: {rep['expression']}")
  print(f"latex: {rep['latex']}")
  # no round when the trial's long sum answers (long_sums.py)
  where = "the long sum" if rep["winner_round"] is None else f"round {rep['winner_round'] + 1}"
  weighted = f"weighted by {rep['weights']}: " if rep.get("weights") else ""
  print(f"{weighted}R2 train {_r2(rep['r2_train'])}  val {_r2(rep['r2_val'])}  "
        f"test {_r2(rep['r2_test'])}  "
        f"complexity {rep['complexity']}  wall {rep['wall_time_s']:.1f}s "
        f"({where}, {rep['candidates']} candidates)")
  if "as_found" in rep:  # the parsimony step changed it (parsimony.py)
    a = rep["as_found"]
    print(f"as found: {a['expression']}  (val {_r2(a['r2_val'])}, complexity {a['complexity']})")
  if "before_refit" in rep:  # final_refit.py: val above is the held-out R2 from before it
    print(f"constants refitted on the training and validation rows; on the training rows "
          f"alone: {rep['before_refit']['expression']}")
  if "symbolic_solution" in rep:  # solution.py: SRBench's check against the known law
    v = rep["symbolic_solution"]
    print(f"SRBench symbolic solution of the known law: {'yes' if v['solution'] else 'no'} "
          f"({v['reason']})")
  if rep["equations"]:
    print("equations (best validation R2 at each complexity):")
    for e in rep["equations"]:
      print(f"  {e['complexity']:>4}  {_r2(e['r2_val']):>9}  {e['expression']}")


def main(argv):
  del argv
  spec = input_spec()
  every = datasets.load_input(**spec)  # every column: select_k_best chooses per trial
  if spec.get("data") is not None:  # (the record is read from anywhere)
    spec["data"] = str(pathlib.Path(spec["data"]).absolute())
  cfg = search_config()
  if _TRIALS.value < 1:
    raise datasets.DataError(f"--trials must be >= 1, got {_TRIALS.value}")
  last_seed = _SEED.value + 1000 * (_TRIALS.value - 1)  # each trial's, before any trial runs
  if not 0 <= _SEED.value <= last_seed < 2**32:
    raise datasets.DataError(f"--seed + 1000 * (--trials - 1) must be in [0, 2**32), got "
                             f"{_SEED.value} and {_TRIALS.value} trials")
  try:
    trial_lib.check_max_time(_MAX_TIME.value)  # before the model loads
  except ValueError as e:
    raise datasets.DataError(f"--{e}") from None
  datasets.check_noise(_NOISE.value, "--noise")  # before the table is described
  out_path = check_out_path()
  plot_paths = check_plot_paths(_TRIALS.value)
  check_distinct(out_path, plot_paths)
  # Each trial's columns are chosen on its own training rows (never its test fold); the
  # table shows the first trial's.
  ds = datasets.trial_columns(every, spec["select_k_best"], _SEED.value)
  print(datasets.describe(ds))
  renamed = [f"{name!r} as {f}" for name, f in zip(ds.feature_names,
                                                   E.formula_names(ds.feature_names)) if f != name]
  if renamed:  # ("a b" and "a_b" would otherwise both read as some a_b)
    print(f"in formulas: {', '.join(renamed)}")
  first = datasets.split(ds.X, ds.y, seed=_SEED.value, noise=_NOISE.value)
  print(f"split (seed {_SEED.value}, noise {_NOISE.value}): train {len(first.y_train)}, "
        f"val {len(first.y_val)}, test {len(first.y_test)} rows; noise sigma {first.noise_sigma:.4g}")
  engine, bundle = engine_lib.load(_CHECKPOINT.value, cfg.constrain)
  model = checkpoints.model_label(_CHECKPOINT.value)
  print(f"model: {model}")  # (a run with another checkpoint looked the same)
  reports = []
  # A table's rows, for plot_result to tell an edited table (a shipped dataset is fixed by its
  # name: Feynman's rows, computed from the formula, can differ in the last bits by machine)
  rows_digest = {"rows_sha256": datasets.fingerprint(every)} if spec.get("data") else {}
  first_ds = ds
  for t in range(_TRIALS.value):
    seed = _SEED.value + 1000 * t
    ds = first_ds if t == 0 else datasets.trial_columns(every, spec["select_k_best"], seed)
    if ds.feature_names != first_ds.feature_names:
      print(f"select_k_best kept {', '.join(ds.feature_names)} on this trial's training rows")
    parts = first if t == 0 else datasets.split(ds.X, ds.y, seed=seed, noise=_NOISE.value)
    print(f"trial {t + 1}/{_TRIALS.value} (seed {seed}): preset {_PRESET.value}, mode {_MODE.value}, {cfg.rounds} rounds x {cfg.iterations} "
          f"iterations, {cfg.workers} worker(s)" + model_settings(cfg), flush=True)
    data = search.SearchData.from_split(parts, w_train=weights_of(ds, parts.train_index),
                                        w_val=weights_of(ds, parts.val_index))
    bar = None if _QUIET.value else progress_lib.SearchProgress(cfg.rounds,
                                                                max_time=_MAX_TIME.value)
    result = trial_lib.run_trial(engine, data, cfg, _MODE.value, seed,
                                 progress=bar, bundle=bundle, max_time=_MAX_TIME.value)
    if bar is not None:
      bar.close(result.timed_out)
    rep = trial_lib.report(result, parts.X_test, parts.y_test, data, ds.feature_names, {
        "dataset": ds.name, "trial": t, "seed": seed, "noise": _NOISE.value,
        "preset": _PRESET.value, "mode": _MODE.value, "model": model,
        "config": dataclasses.asdict(cfg),
        **({"weights": _WEIGHTS.value} if _WEIGHTS.value else {}),
        # the columns this trial read (plot_result draws it again from them)
        **({"features": list(ds.feature_names)} if ds.selected is not None else {})},
        w_test=weights_of(ds, parts.test_index))
    reports.append(rep)
    record = {"dataset": ds.name, "formula": ds.formula, "input": spec, **rows_digest,
              "trials": reports}
    if out_path is not None:  # after every trial, so a long run keeps what it finished (first:
      # nothing after it can lose the trial)
      write_json(out_path, record)
    # a set with a known law: SRBench's check of the answer against it (the law over every
    # column: select_k_best may have left one of its variables out)
    verdict = solution.of_report(rep, ds.feature_names, every.formula,
                                 law_names=every.feature_names)
    if verdict is not None:
      rep["symbolic_solution"] = verdict
      if out_path is not None:
        write_json(out_path, record)  # (`reports` holds this trial's report itself)
    print_trial(rep, ds.feature_names)
    if plot_paths is not None and rep["found"]:
      draw(plot_paths[t], rep, result, parts, ds.feature_names)
  if len(reports) > 1:
    tests = [r["r2_test"] for r in reports if r.get("r2_test") is not None]
    print(f"mean test R2 over {len(tests)} trial(s): {np.mean(tests):.6f}" if tests else "no trial found an expression")
  if out_path is not None:
    print(f"results written to {out_path}")
  sys.stdout.flush()


if __name__ == "__main__":
  cli.run(main, datasets.DataError, checkpoints.CheckpointError)
