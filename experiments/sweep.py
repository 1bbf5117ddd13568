"""The sweep behind experiments/srbench.py and experiments/ablations.py (no flags here).

A `Sweep` is every (dataset, noise, trial) cell of one setting: method, model, seed, preset,
mode and the search overrides. Its folder's results.jsonl holds one JSON line per finished
cell, keyed by `cell_key`; a run skips the cells already there. Every line carries the
setting it was run with (`settings`), and a run refuses a folder whose lines were made with
another one, so a resumed cell never mixes two settings in one table row.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import pathlib
import sys
import time
import traceback

import numpy as np

from lee_jax import checkpoints
from lee_jax import configs
from lee_jax import datasets
from lee_jax import engine as engine_lib
from lee_jax import jsonl
from lee_jax import score
from lee_jax import search
from lee_jax import solution
from lee_jax import trial
from lee_jax import weights

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import peers  # noqa: E402  (experiments/peers.py, beside this script)

Cell = tuple[str, float, int]  # (dataset, noise, trial)


class MixedSettingsError(ValueError):
  """A results folder holds cells run with another setting."""


@dataclasses.dataclass(frozen=True)
class Model:
  """A loaded model: the engine, its bundle (for worker processes) and a label."""
  engine: engine_lib.Engine
  bundle: dict
  source: str  # "shipped <size> <checksum>", a checkpoint path, or "untrained <size>"


def model_source(checkpoint: str | None = None, random_model: str | None = None,
                 use_vae: bool = True) -> str:
  """The label a model's cells carry (known before the model loads)."""
  if random_model:
    return f"untrained {random_model}" + ("" if use_vae else " (use_vae=False)")
  # 'shipped <size> <checksum prefix>', or the folder with what it holds ('runs/s/export
  # (small, phase 3, step 900)'): by its path alone, a model retrained in place resumed the
  # old one's sweep
  return checkpoints.model_label(checkpoint)


def search_defaults(checkpoint: str | None = None, random_model: str | None = None
                    ) -> tuple[tuple[str, object], ...]:
  """A checkpoint's own search defaults as Sweep.model_defaults (an untrained model has none).
  Raises checkpoints.CheckpointError (one line) for a missing directory or a bad meta.json."""
  return () if random_model else tuple(sorted(weights.search_defaults(checkpoint).items()))


def load_model(checkpoint: str | None = None, random_model: str | None = None,
               use_vae: bool = True) -> Model:
  """A checkpoint (None: the shipped one), or an untrained model of a preset size.

  use_vae only shapes an untrained model; a checkpoint carries its own model config.
  Raises checkpoints.CheckpointError (one line) when a checkpoint cannot be loaded.
  """
  source = model_source(checkpoint, random_model, use_vae)
  if random_model:
    from flax import nnx

    from lee_jax import model as model_lib
    m = model_lib.LEE(configs.get_model_config(random_model, use_vae=use_vae), rngs=nnx.Rngs(0))
    return Model(engine_lib.Engine(m), engine_lib.to_bundle(m), source)
  eng, bundle = engine_lib.load(checkpoint)
  return Model(eng, bundle, source)


@dataclasses.dataclass(frozen=True)
class Sweep:
  """One setting's cells. overrides: SearchConfig fields replaced in the preset (None: keep)."""
  out_dir: pathlib.Path
  names: tuple[str, ...]
  noises: tuple[float, ...]
  trials: int
  seed: int = 0
  method: str = "lee"
  preset: str = "fast"
  mode: str = "combined"
  overrides: tuple[tuple[str, object], ...] = ()
  # The model's own search defaults (weights.search_defaults), applied before the overrides.
  model_defaults: tuple[tuple[str, object], ...] = ()
  shard_index: int = 0
  num_shards: int = 1
  peer_generations: int | None = None  # a peer's budget (None: its package's default)

  @property
  def results(self) -> pathlib.Path:
    return pathlib.Path(self.out_dir) / "results.jsonl"

  def search_config(self) -> configs.SearchConfig:
    return configs.get_search_config(self.preset, dict(self.model_defaults), **dict(self.overrides))

  def changed(self) -> dict:
    """The search fields that differ from the preset (the model's defaults included), except
    those that only change speed."""
    base = dataclasses.asdict(configs.PRESETS[self.preset])
    cfg = dataclasses.asdict(self.search_config())
    return {k: v for k, v in cfg.items() if v != base[k] and k not in configs.SPEED_ONLY}

  def settings(self, model: str | None) -> dict:
    """What every cell of a folder must share."""
    if self.method != "lee":
      budget = {} if self.peer_generations is None else {"generations": self.peer_generations}
      return {"method": self.method, "seed": self.seed, **budget}
    return {"method": "lee", "model": model, "seed": self.seed, "preset": self.preset,
            "mode": self.mode, "changed": self.changed()}

  def cells(self) -> list[Cell]:
    """This shard's cells (black-box datasets run at noise 0 only, as in SRBench)."""
    return cells(list(self.names), list(self.noises), self.trials)[self.shard_index::self.num_shards]

  def todo(self) -> list[Cell]:
    done = {r["key"] for r in read_results(self.results)}
    return [c for c in self.cells() if cell_key(*c) not in done]


def cells(names: list[str], noises: list[float], trials: int) -> list[Cell]:
  """Every (dataset, noise, trial) once: a name or level given twice (`--noise=0,0`) ran and
  recorded the same cell twice, and the summary counted both."""
  out = []
  for name in dict.fromkeys(names):
    for noise in dict.fromkeys(noises if datasets.group_of(name) != "blackbox" else [0.0]):
      out.extend((name, noise, t) for t in range(trials))
  return out


def cell_key(name: str, noise: float, t: int) -> str:
  return f"{name}|{noise:g}|{t}"


def read_results(path: pathlib.Path, strict: bool = True) -> list[dict]:
  """Every cell of results.jsonl once (a line cut short by a kill is skipped; any other line
  that is not JSON is an error naming it: `jsonl.numbered`). A cell recorded twice counts
  as its last record, in the first one's place, as `sweep_results.read_rows` counts it (the
  summary and the ablation tables counted both). strict: a line that is not a cell record
  is a MixedSettingsError naming it (a resumed sweep failed on it with a KeyError); else
  it is kept as it is, for the summary to leave out."""
  if not path.exists():
    return []
  try:
    numbered = jsonl.numbered(path)
  except (jsonl.JsonlError, UnicodeDecodeError, OSError) as e:
    raise MixedSettingsError(f"{path}: cannot read it ({str(e).splitlines()[0]})") from None
  rows = {}
  for n, r in numbered:
    if isinstance(r, dict) and isinstance(r.get("key"), str) and "trial" in r:
      rows[r["key"]] = r
    elif strict:
      raise MixedSettingsError(f"{path} line {n}: not a cell record (no key and trial); "
                               "use another --out_dir or remove the line")
    else:
      rows[("line", n)] = r
  return list(rows.values())


def stats(sweep: Sweep, noise: float, drop_failed: bool) -> dict:
  """Mean test R2 (std over trials), median and clipped-mean test R2, mean complexity,
  failures and decodes over a sweep's cells at one noise level (all shards' cells; those not
  run yet are left out).
  A failed cell (no finite test R2) counts as R2 = 0, or is dropped with drop_failed."""
  want = {cell_key(n, e, t) for n, e, t in cells(list(sweep.names), [noise], sweep.trials)}
  rows = [r for r in read_results(sweep.results) if r["key"] in want]
  by_trial: dict[int, list[dict]] = {}
  for r in rows:
    by_trial.setdefault(r["trial"], []).append(r)
  ok = lambda r: r.get("r2_test") is not None  # noqa: E731
  r2, cx, fails, every = [], [], [], []
  for rs in by_trial.values():
    vals = [r["r2_test"] if ok(r) else 0.0 for r in rs if ok(r) or not drop_failed]
    every += vals
    r2.append(np.mean(vals) if vals else np.nan)
    cx.append(np.mean([r["complexity"] for r in rs if ok(r)]) if any(map(ok, rs)) else np.nan)
    fails.append(sum(not ok(r) for r in rs))
  decodes = [r["candidates"] / r["search"]["rounds"] for r in rows if "candidates" in r]
  nan = float("nan")
  return {"cells": len(rows), "expected": len(want), "failed": sum(fails),
          "r2": float(np.nanmean(r2)) if r2 else nan,
          "r2_std": float(np.nanstd(r2)) if len(r2) > 1 else nan,
          # One extrapolating cell can pull a 14-dataset mean far below zero; the median and
          # the mean of R2 clipped to [0, 1] over all cells (every trial) are robust to it.
          "r2_median": float(np.median(every)) if every else nan,
          "r2_clipped": float(np.mean(np.clip(every, 0.0, 1.0))) if every else nan,
          "complexity": float(np.nanmean(cx)) if cx else nan,
          "complexity_std": float(np.nanstd(cx)) if len(cx) > 1 else nan,
          "failures": float(np.mean(fails)) if fails else nan,
          "decodes": float(np.mean(decodes)) if decodes else nan}


def append_result(path: pathlib.Path, row: dict) -> None:
  jsonl.append(path, trial.json_safe(row), sync=True)


def row_settings(row: dict) -> dict:
  """A line's setting; lines written before settings were recorded get it from their fields."""
  if "settings" in row:
    return row["settings"]
  seed = row["seed"] - 1000 * row["trial"]
  if row["method"] != "lee":
    return {"method": row["method"], "seed": seed}
  return {"method": "lee", "model": row["model"], "seed": seed, "preset": row["preset"],
          "mode": row["mode"], "changed": {}}


def check_settings(path: pathlib.Path, settings: dict) -> None:
  """Raises MixedSettingsError (one line) if a line of `path` was run with other settings."""
  for row in read_results(path):
    theirs = row_settings(row)
    if theirs != settings:
      diff = {k: (theirs.get(k), settings.get(k)) for k in sorted(set(theirs) | set(settings))
              if theirs.get(k) != settings.get(k)}
      raise MixedSettingsError(
          f"{path} holds cells run with other settings (field: (folder, this run)) {diff}; "
          "use another --out_dir")


def run_peer(method: str, p: datasets.Split, seed: int, generations: int | None = None) -> dict:
  """A peer on SRBench's training part (train + validation: peers have no use for our
  validation fold), scored like LEE: R2 on each fold (of the peer's own predict, as SRBench
  scores it), LEE's simplified node count."""
  from lee_jax import complexity

  X = np.concatenate([p.X_train, p.X_val])
  y = np.concatenate([p.y_train, p.y_val])
  model, predict, seconds = peers.fit_peer(method, X, y, seed, generations)
  return {"found": True, "expression": str(model), "wall_time_s": round(seconds, 3),
          "r2_train": score.r2(y, predict(X)), "r2_test": score.r2(p.y_test, predict(p.X_test)),
          "complexity": complexity.node_count(complexity.simplify(model)),
          "complexity_raw": complexity.node_count(model)}


def run_cell(sweep: Sweep, model: Model | None, cfg: configs.SearchConfig, cell: Cell) -> dict:
  """One cell's results line; a failure is recorded in the line, never raised."""
  name, noise, t = cell
  seed = sweep.seed + 1000 * t
  row = {"key": cell_key(name, noise, t), "dataset": name, "group": datasets.group_of(name),
         "method": sweep.method, "noise": noise, "trial": t, "seed": seed,
         "preset": sweep.preset, "mode": sweep.mode, "model": model.source if model else sweep.method,
         "settings": sweep.settings(model.source if model else None)}
  if sweep.method == "lee":
    row["search"] = dataclasses.asdict(cfg)
  try:
    ds = datasets.load_dataset(name)
    p = datasets.split(ds.X, ds.y, seed=seed, noise=noise)
    if sweep.method != "lee":
      row.update(run_peer(sweep.method, p, seed, sweep.peer_generations))
    else:
      data = search.SearchData.from_split(p)
      res = trial.run_trial(model.engine, data, cfg, sweep.mode, seed, bundle=model.bundle)
      rep = trial.report(res, p.X_test, p.y_test, data, ds.feature_names)
      rep.pop("rounds", None)  # per-round detail stays out of the sweep table
      row.update(rep)
  except Exception as e:  # noqa: BLE001 -- a sweep records a broken cell and goes on
    row.update({"found": False, "error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}",
                "traceback": traceback.format_exc(limit=3)})
  if sweep.method == "lee":  # (a peer's expression is its own package's string)
    verdict = _symbolic_solution(row)
    if verdict is not None:
      row["symbolic_solution"] = verdict
  return row


def _symbolic_solution(row: dict) -> dict | None:
  """SRBench's verdict on a cell's answer where its set has a known law (after the trial,
  untimed; a cell that found nothing or failed is no solution, as SRBench counts it)."""
  try:
    return solution.of_record(row)
  except datasets.DataError:  # (the cell's own error says why)
    return None


def warm_up(sweep: Sweep, model: Model, cfg: configs.SearchConfig, cell: Cell) -> float:
  """trial.warm_up on `cell`'s data (not recorded); returns its seconds."""
  name, noise, t = cell
  ds = datasets.load_dataset(name)
  seed = sweep.seed + 1000 * t
  p = datasets.split(ds.X, ds.y, seed=seed, noise=noise)
  return trial.warm_up(model.engine, search.SearchData.from_split(p), cfg, sweep.mode, seed,
                       bundle=model.bundle)


def other_search(rows: list[dict], cfg: configs.SearchConfig) -> tuple[list[str], list[str]] | None:
  """(keys, fields) of the LEE cells whose recorded search config differs from cfg in what
  can change an answer (not `configs.SPEED_ONLY`; a field a cell predates is not counted);
  None if there are none. The setting check compares only the overrides to today's presets,
  so a preset whose defaults changed resumed an old folder without a word."""
  now = json.loads(json.dumps(trial.json_safe(dataclasses.asdict(cfg))))  # as the lines hold it
  keys, fields = [], set()
  for r in rows:
    diff = {k for k, v in (r.get("search") or {}).items()
            if k in now and k not in configs.SPEED_ONLY and v != now[k]}
    if diff:
      keys.append(r["key"])
      fields |= diff
  return (keys, sorted(fields)) if keys else None


def run(sweep: Sweep, model: Model | None, warmup: bool = False) -> int:
  """Runs this shard's missing cells, appending each line as it finishes; returns how many ran.

  model is None for a peer method. Raises MixedSettingsError before running anything if the
  folder holds another setting's cells. warmup: first `warm_up` on the first missing cell.
  """
  cfg = sweep.search_config()
  check_settings(sweep.results, sweep.settings(model.source if model else None))
  pathlib.Path(sweep.out_dir).mkdir(parents=True, exist_ok=True)
  rows = read_results(sweep.results)
  done = len(rows)
  todo = sweep.todo()
  if model is not None and todo:
    stale = other_search(rows, cfg)
    if stale:  # the setting is the same, but a preset's defaults moved since those cells ran
      print(f"warning: {len(stale[0])} cell(s) of {sweep.results} ran with another search "
            f"config ({', '.join(stale[1][:6])} differ); the folder will mix the two",
            file=sys.stderr, flush=True)
  print(f"{done} cells already in {sweep.results}; {len(todo)} to run (shard {sweep.shard_index}/"
        f"{sweep.num_shards}); model {model.source if model else sweep.method}; preset "
        f"{sweep.preset}, mode {sweep.mode}" + (f", {sweep.changed()}" if sweep.changed() else ""),
        flush=True)
  if warmup and model is not None and todo:
    print(f"warm-up (compilation, worker processes) {warm_up(sweep, model, cfg, todo[0]):.1f}s",
          flush=True)
  t0 = time.perf_counter()
  for i, cell in enumerate(todo):
    row = run_cell(sweep, model, cfg, cell)
    append_result(sweep.results, row)
    _log(i, len(todo), cell, row, t0)
  return len(todo)


def summary(rows: list[dict]) -> str:
  by = collections.defaultdict(list)
  for r in rows:
    by[(r["group"], r["noise"])].append(r)
  lines = [f"{'group':<9} {'noise':>5} {'cells':>5} {'found':>5} {'errors':>6} {'R2_test':>8} "
           f"{'median':>7} {'cmplx':>6} {'wall_s':>7} {'solved':>7}  failures"]
  for (group, noise), rs in sorted(by.items()):
    found = [r for r in rs if r.get("found")]
    # every cell, one without a test R2 (nothing found, NaN predictions) as 0: as
    # sweep_results.aggregate counts it (only the found ones made a failed cell vanish)
    r2 = [r["r2_test"] if r.get("r2_test") is not None else 0.0 for r in rs]
    fails: collections.Counter = collections.Counter()
    for r in rs:
      fails.update(r.get("failures", {}))
    lines.append(
        f"{group:<9} {noise:>5g} {len(rs):>5} {len(found):>5} {sum('error' in r for r in rs):>6} "
        f"{np.mean(r2) if r2 else float('nan'):>8.4f} {np.median(r2) if r2 else float('nan'):>7.4f} "
        f"{np.mean([r['complexity'] for r in found]) if found else float('nan'):>6.1f} "
        f"{np.mean([r.get('wall_time_s', 0) for r in rs]):>7.1f} {_solved(rs):>7}  {dict(fails)}")
  return "\n".join(lines)


def _solved(rows: list[dict]) -> str:
  """SRBench's symbolic solutions among the cells checked (`k/n`; "-" where none was: a
  black-box group, a peer, or cells from before the check)."""
  checked = [r["symbolic_solution"] for r in rows if isinstance(r.get("symbolic_solution"), dict)]
  return f"{sum(bool(v.get('solution')) for v in checked)}/{len(checked)}" if checked else "-"


def _log(i, n, cell, row, t0) -> None:
  name, noise, t = cell
  el = time.perf_counter() - t0
  eta = el / (i + 1) * (n - i - 1)
  r2 = row.get("r2_test")
  r2 = r2 if r2 is None or np.isfinite(r2) else None
  print(f"[{i + 1}/{n}] {name} noise {noise:g} trial {t}: "
        + (f"R2 {r2:.4f} C {row.get('complexity')} {row.get('wall_time_s', 0):.1f}s" if r2 is not None
           else row.get("error", "no valid expression or non-finite test predictions"))
        + f"  (elapsed {el / 60:.1f} min, ETA {eta / 60:.1f} min)", file=sys.stderr, flush=True)
