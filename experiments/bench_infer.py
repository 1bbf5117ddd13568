"""Benchmark: per-dataset search wall time and where it goes.

    python experiments/bench_infer.py --checkpoint runs/small --preset fast
    python experiments/bench_infer.py --random_model small --preset fast --datasets strogatz_lv1

Prints, per dataset, the wall time of one trial and its split between decoding, encoding,
gradient segments, constant fitting (L-BFGS-B), SymPy simplification and batched scoring,
plus test R2 and complexity; then the means. --random_model times an untrained model of
that size (for speed only: its formulas are meaningless). The first dataset includes
compilation; `--warmup` runs one untimed short trial first (in the worker processes the
timed trials reuse) so the table shows steady state.
"""

from __future__ import annotations

import json

import numpy as np
from absl import flags
from absl import logging

from lee_jax import cli
from lee_jax import configs
from lee_jax import datasets
from lee_jax import engine as engine_lib
from lee_jax import search
from lee_jax import trial
from lee_jax import weights

_CHECKPOINT = flags.DEFINE_string("checkpoint", None, "Trained model (default: the shipped one).")
_RANDOM = flags.DEFINE_enum("random_model", None, list(configs.MODELS),
                            "Time an untrained model of this size instead of a checkpoint.")
_PRESET = flags.DEFINE_enum("preset", "fast", list(configs.PRESETS), "Search preset.")
_MODE = flags.DEFINE_enum("mode", "combined", list(configs.MODES), "Search mode.")
_DATASETS = flags.DEFINE_list("datasets", None, "Dataset names (default: all of --group).")
_GROUP = flags.DEFINE_enum("group", "strogatz", list(datasets.GROUPS[:3]), "Dataset group.")
_ROUNDS = flags.DEFINE_integer("rounds", None, "Override the preset's rounds.")
_ITERS = flags.DEFINE_integer("iters", None, "Override the preset's iterations.")
_WORKERS = flags.DEFINE_integer("workers", None, "Override the preset's worker processes.")
_FITTER = flags.DEFINE_enum("fitter", None, list(configs.FITTERS), "Override the preset's fitter.")
_HELPERS = flags.DEFINE_integer("simplify_helpers", None, "Override the preset's SymPy helper processes.")
_OVERLAP = flags.DEFINE_bool("overlap", None, "Override the preset's overlap (SymPy in the helpers "
                             "while the next batch decodes; parents one batch behind).")
_SIMPLIFY = flags.DEFINE_enum("simplify", None, list(configs.SIMPLIFY),
                              "Override the preset's search simplification (full = the paper).")
_WARMUP = flags.DEFINE_bool("warmup", True, "Run one untimed short trial first (compilation; "
                             "the worker processes, which the timed trials reuse).")
_SEED = flags.DEFINE_integer("seed", 0, "Split and search seed.", lower_bound=0)
_JSON = flags.DEFINE_string("json", None, "Also write the rows as JSON here.")
_OVERWRITE = flags.DEFINE_bool("overwrite", False, "Allow --json to replace an existing file.")

_PARTS = ("decode", "encode", "descend", "fit", "simplify", "score", "cmaes")


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)
  if _JSON.value:  # checked now, not after minutes of benchmark
    cli.output_file(_JSON.value, overwrite=_OVERWRITE.value, flag="--json")
  names = datasets.resolve(_DATASETS.value, [_GROUP.value])  # a typo fails before the model loads
  if _RANDOM.value and _CHECKPOINT.value:  # (the checkpoint was once ignored without a word)
    raise ValueError("pass --checkpoint or --random_model, not both")
  if _RANDOM.value:
    eng, bundle = engine_lib.untrained(_RANDOM.value)
    source = f"untrained {_RANDOM.value}"
  else:
    eng, bundle = engine_lib.load(_CHECKPOINT.value)
    source = _CHECKPOINT.value or "shipped checkpoint"
  defaults = {} if _RANDOM.value else weights.search_defaults(_CHECKPOINT.value)
  cfg = configs.get_search_config(_PRESET.value, defaults, rounds=_ROUNDS.value, iterations=_ITERS.value,
                                  workers=_WORKERS.value, fitter=_FITTER.value,
                                  simplify_helpers=_HELPERS.value, overlap=_OVERLAP.value,
                                  simplify=_SIMPLIFY.value)
  print(f"model: {source}; preset {_PRESET.value} ({cfg.rounds} rounds x {cfg.iterations} "
        f"iterations, {cfg.workers} worker(s), {cfg.simplify_helpers} SymPy helper(s), "
        f"{cfg.fitter} fitter, {cfg.simplify} SymPy{', overlapped' if cfg.overlap else ''}), "
        f"mode {_MODE.value}",
        flush=True)
  if _WARMUP.value:
    ds = datasets.load_dataset(names[0])
    p = datasets.split(ds.X, ds.y, seed=_SEED.value)
    seconds = trial.warm_up(eng, search.SearchData.from_split(p), cfg, _MODE.value, _SEED.value,
                            bundle=bundle)
    print(f"warm-up (compilation{', worker processes' if cfg.workers > 1 else ''}) {seconds:.1f}s",
          flush=True)
  header = (f"{'dataset':<28} {'wall_s':>7} " + " ".join(f"{k:>8}" for k in _PARTS)
            + f" {'cands':>6} {'R2_test':>9} {'cmplx':>5}")
  print(header)
  rows = []
  for name in names:
    ds = datasets.load_dataset(name)
    p = datasets.split(ds.X, ds.y, seed=_SEED.value)
    data = search.SearchData.from_split(p)
    res = trial.run_trial(eng, data, cfg, _MODE.value, _SEED.value, bundle=bundle)
    rep = trial.report(res, p.X_test, p.y_test, data, ds.feature_names, {"dataset": name})
    rows.append(rep)
    tm = rep["timings_s"]
    r2 = rep.get("r2_test")
    print(f"{name:<28} {rep['wall_time_s']:7.1f} " + " ".join(f"{tm.get(k, 0):8.2f}" for k in _PARTS)
          + f" {rep['candidates']:6d} {r2 if r2 is not None else float('nan'):9.4f} "
          f"{rep.get('complexity', 0):5d}", flush=True)
  wall = np.mean([r["wall_time_s"] for r in rows])
  total = {k: np.mean([r["timings_s"].get(k, 0) for r in rows]) for k in _PARTS}
  print(f"{'mean':<28} {wall:7.1f} " + " ".join(f"{total[k]:8.2f}" for k in _PARTS))
  summed = sum(total.values())  # rounds in workers overlap, so shares are of the summed parts
  print("share of search time: " + ", ".join(
      f"{k} {100 * v / max(summed, 1e-9):.0f}%" for k, v in total.items() if v > 0))
  r2s = [r["r2_test"] for r in rows if r.get("r2_test") is not None]
  print(f"mean test R2 {np.mean(r2s):.4f} over {len(r2s)} datasets; mean complexity "
        f"{np.mean([r['complexity'] for r in rows if r['found']]):.1f}")
  if _JSON.value:
    with open(_JSON.value, "w") as f:
      json.dump({"model": source, "preset": _PRESET.value, "mode": _MODE.value, "rows": rows}, f, indent=1)


if __name__ == "__main__":
  cli.run(main, ValueError)
