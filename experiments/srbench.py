"""SRBench runner: every (dataset, noise, trial) cell of a sweep, resumable and shardable.

    python experiments/srbench.py --group=strogatz --noise=0,0.01,0.1 --trials=3 --preset=fast
    python experiments/srbench.py --group=all --shard_index=3 --num_shards=8 ...   # one of 8 jobs

Cells follow SRBench: the 75/25 split with trial seed s_t = seed + 1000 t, target noise on
the training part (ground-truth groups only: black-box runs at noise 0). Each finished cell
is one JSON line appended to OUT_DIR/results.jsonl (flushed and fsynced), so a killed sweep
loses at most the cell in flight and the same command skips what is done. A cell that fails
(bad data, no valid expression) is recorded with its error and the sweep goes on. At the end
(or with --summary_only) it prints, per group and noise: cells, found, mean test R2, mean
complexity, mean wall time and the failure counts.
"""

from __future__ import annotations

import collections
import json
import os
import pathlib
import sys
import time
import traceback

import numpy as np
from absl import app
from absl import flags
from absl import logging

from lee_jax import checkpoints
from lee_jax import configs
from lee_jax import datasets
from lee_jax import engine as engine_lib
from lee_jax import search
from lee_jax import score
from lee_jax import trial

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import peers  # noqa: E402  (experiments/peers.py, beside this script)

_METHOD = flags.DEFINE_enum("method", "lee", ["lee", *peers.PEERS],
                            "lee, or a peer run on the identical splits (experiments/peers.py).")
_GROUP = flags.DEFINE_list("group", ["strogatz"], "strogatz, feynman, blackbox, or all.")
_DATASETS = flags.DEFINE_list("datasets", None, "Explicit dataset names (overrides --group).")
_NOISE = flags.DEFINE_list("noise", ["0"], "Target noise levels (ground-truth groups).")
_TRIALS = flags.DEFINE_integer("trials", 1, "Trials per (dataset, noise).")
_SEED = flags.DEFINE_integer("seed", 0, "Base seed; trial t uses seed + 1000 t.")
_PRESET = flags.DEFINE_enum("preset", "fast", list(configs.PRESETS), "Search preset.")
_MODE = flags.DEFINE_enum("mode", "combined", list(configs.MODES), "Search mode.")
_FITTER = flags.DEFINE_enum("fitter", None, list(configs.FITTERS), "Override the preset's fitter.")
_ROUNDS = flags.DEFINE_integer("rounds", None, "Override the preset's rounds.")
_ITERS = flags.DEFINE_integer("iters", None, "Override the preset's iterations.")
_WORKERS = flags.DEFINE_integer("workers", None, "Override the preset's worker processes.")
_CHECKPOINT = flags.DEFINE_string("checkpoint", None, "Trained model (default: the shipped one).")
_RANDOM = flags.DEFINE_enum("random_model", None, list(configs.MODELS),
                            "An untrained model of this size (smoke tests and timing only).")
_SHARD = flags.DEFINE_integer("shard_index", 0, "This job's shard.")
_SHARDS = flags.DEFINE_integer("num_shards", 1, "Number of shards the cells are split into.")
_OUT = flags.DEFINE_string("out_dir", None, "Results directory (default experiments/results/srbench_<preset>_<mode>).")
_SUMMARY = flags.DEFINE_bool("summary_only", False, "Only print the summary of OUT_DIR.")


def cells(names: list[str], noises: list[float], trials: int) -> list[tuple[str, float, int]]:
  out = []
  for name in names:
    for noise in (noises if datasets.group_of(name) != "blackbox" else [0.0]):
      out.extend((name, noise, t) for t in range(trials))
  return out


def cell_key(name: str, noise: float, t: int) -> str:
  return f"{name}|{noise:g}|{t}"


def read_results(path: pathlib.Path) -> list[dict]:
  """Every complete line of results.jsonl (a line cut short by a kill is ignored)."""
  if not path.exists():
    return []
  rows = []
  for line in path.read_text().splitlines():
    try:
      rows.append(json.loads(line))
    except ValueError:
      continue
  return rows


def append_result(path: pathlib.Path, row: dict) -> None:
  with path.open("a") as f:
    f.write(json.dumps(trial.json_safe(row)) + "\n")
    f.flush()
    os.fsync(f.fileno())


def summary(rows: list[dict]) -> str:
  by = collections.defaultdict(list)
  for r in rows:
    by[(r["group"], r["noise"])].append(r)
  lines = [f"{'group':<9} {'noise':>5} {'cells':>5} {'found':>5} {'errors':>6} {'R2_test':>8} "
           f"{'median':>7} {'cmplx':>6} {'wall_s':>7}  failures"]
  for (group, noise), rs in sorted(by.items()):
    found = [r for r in rs if r.get("found")]
    r2 = [r["r2_test"] if r.get("r2_test") is not None else -1.0 for r in found]
    fails: collections.Counter = collections.Counter()
    for r in rs:
      fails.update(r.get("failures", {}))
    lines.append(
        f"{group:<9} {noise:>5g} {len(rs):>5} {len(found):>5} {sum('error' in r for r in rs):>6} "
        f"{np.mean(r2) if r2 else float('nan'):>8.4f} {np.median(r2) if r2 else float('nan'):>7.4f} "
        f"{np.mean([r['complexity'] for r in found]) if found else float('nan'):>6.1f} "
        f"{np.mean([r.get('wall_time_s', 0) for r in rs]):>7.1f}  {dict(fails)}")
  return "\n".join(lines)


def run_peer(method: str, p: datasets.Split, seed: int) -> dict:
  """A peer on SRBench's training part (train + validation: peers have no use for our
  validation fold), scored like LEE: R2 on each fold, LEE's simplified node count."""
  from lee_jax import expr as E

  X = np.concatenate([p.X_train, p.X_val])
  y = np.concatenate([p.y_train, p.y_val])
  model, seconds = peers.fit_peer(method, X, y, seed)
  names = [f"x{i}" for i in range(X.shape[1])]
  f = E.numpy_function(model, names)
  return {"found": True, "expression": str(model), "wall_time_s": round(seconds, 3),
          "r2_train": score.r2(y, f(X)), "r2_test": score.r2(p.y_test, f(p.X_test)),
          "complexity": E.node_count(E.simplify(model)),
          "complexity_raw": E.node_count(model)}


def _log(i, n, name, noise, t, row, t0) -> None:
  el = time.perf_counter() - t0
  eta = el / (i + 1) * (n - i - 1)
  r2 = row.get("r2_test")
  r2 = r2 if r2 is None or np.isfinite(r2) else None
  print(f"[{i + 1}/{n}] {name} noise {noise:g} trial {t}: "
        + (f"R2 {r2:.4f} C {row.get('complexity')} {row.get('wall_time_s', 0):.1f}s" if r2 is not None
           else row.get("error", "no valid expression or non-finite test predictions"))
        + f"  (elapsed {el / 60:.1f} min, ETA {eta / 60:.1f} min)", file=sys.stderr, flush=True)


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)
  default = (f"srbench_{_PRESET.value}_{_MODE.value}" if _METHOD.value == "lee"
             else f"srbench_{_METHOD.value}")
  out_dir = pathlib.Path(_OUT.value or f"experiments/results/{default}")
  results = out_dir / "results.jsonl"
  if _SUMMARY.value:
    print(summary(read_results(results)))
    return
  if not 0 <= _SHARD.value < _SHARDS.value:
    sys.exit(f"error: need 0 <= --shard_index < --num_shards (got {_SHARD.value}, {_SHARDS.value})")
  groups = list(datasets.GROUPS[:3]) if "all" in _GROUP.value else _GROUP.value
  names = _DATASETS.value or [d.name for d in datasets.list_datasets() if d.group in groups]
  todo = cells(names, [float(n) for n in _NOISE.value], _TRIALS.value)[_SHARD.value::_SHARDS.value]
  out_dir.mkdir(parents=True, exist_ok=True)
  done = {r["key"] for r in read_results(results)}
  todo = [c for c in todo if cell_key(*c) not in done]
  cfg = configs.get_search_config(_PRESET.value, rounds=_ROUNDS.value, iterations=_ITERS.value,
                                  workers=_WORKERS.value, fitter=_FITTER.value)
  if _METHOD.value != "lee":
    eng = bundle = None
    source = _METHOD.value
  elif _RANDOM.value:
    (eng, bundle), source = engine_lib.untrained(_RANDOM.value), f"untrained {_RANDOM.value}"
  else:
    try:
      eng, bundle = engine_lib.load(_CHECKPOINT.value)
    except checkpoints.CheckpointError as e:
      sys.exit(f"error: {e}")
    source = _CHECKPOINT.value or "shipped"
  print(f"{len(done)} cells already in {results}; {len(todo)} to run (shard {_SHARD.value}/"
        f"{_SHARDS.value}); model {source}; preset {_PRESET.value}, mode {_MODE.value}", flush=True)
  t0 = time.perf_counter()
  for i, (name, noise, t) in enumerate(todo):
    seed = _SEED.value + 1000 * t
    row = {"key": cell_key(name, noise, t), "dataset": name,
           "group": datasets.group_of(name), "method": _METHOD.value,
           "noise": noise, "trial": t, "seed": seed, "preset": _PRESET.value, "mode": _MODE.value,
           "model": source}
    try:
      ds = datasets.load_dataset(name)
      p = datasets.split(ds.X, ds.y, seed=seed, noise=noise)
      if _METHOD.value != "lee":
        row.update(run_peer(_METHOD.value, p, seed))
      else:
        data = search.SearchData(p.X_train, p.y_train, p.X_val, p.y_val)
        res = trial.run_trial(eng, data, cfg, _MODE.value, seed, bundle=bundle)
        rep = trial.report(res, p.X_test, p.y_test, data, ds.feature_names)
        rep.pop("rounds", None)  # per-round detail stays out of the sweep table
        row.update(rep)
    except Exception as e:  # noqa: BLE001 -- a sweep records a broken cell and goes on
      row.update({"found": False, "error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                  "traceback": traceback.format_exc(limit=3)})
    append_result(results, row)
    _log(i, len(todo), name, noise, t, row, t0)
  print(summary(read_results(results)))


if __name__ == "__main__":
  app.run(main)
