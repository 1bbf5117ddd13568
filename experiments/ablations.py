"""The paper's ablation tables on Strogatz, each setting one resumable srbench sweep.

    python experiments/ablations.py --table=2,3,10 --preset=paper --checkpoint=CKPT
    python experiments/ablations.py --table=vae --checkpoint=CKPT --checkpoint_novae=CKPT_NOVAE
    python experiments/ablations.py --table=2 --shard_index=1 --num_shards=4 ...   # one of 4 jobs
    python experiments/ablations.py --table=2,3,10 --dry_run          # cells and commands only

Tables (LEE paper; rows and noise levels as there, 3 trials by default as in App. H):
  2    search strategy: iterative / gradient / combined, eps = 0 and 0.1
  3    same backbone, eps = 0.1: one-shot / CMA-ES / combined at a matched decode budget:
       one-shot decodes n_init = SearchConfig.decode_budget() candidates from z0 and CMA-ES
       runs until it has made as many decodes (search.py), the per-round decodes of the
       iterative mode; the table shows the decodes per round each setting made
  10   pool size P = 8 / 16 / 32, combined, eps = 0.1
  vae  App. E (Table 5): --checkpoint_novae (a use_vae=False model trained like --checkpoint)
       against --checkpoint, same search, eps = 0.1; failed cells are dropped from the means

The searches run without our polynomial seeds (the paper's search; `--poly_terms=T` adds them
to every setting). Each setting runs in OUT_DIR/<mode>[_<field><value>][_novae] through
experiments/sweep.py, so a setting shared by tables (combined at eps = 0.1) runs once, a
killed run resumes, and a folder never mixes settings. The same folder can be filled by the
srbench.py command that --dry_run prints. Then per table: tableN.md and tableN.csv in
OUT_DIR, our mean test R2 (std over trials) and mean complexity per setting beside the
paper's numbers (experiments/data/paper_ablations.csv). A cell with no finite test R2 counts as R2 = 0
(Tables 2, 3, 10; as experiments/aggregate.py) and is counted in `failed`.
"""

from __future__ import annotations

import csv
import dataclasses
import pathlib
import sys

import numpy as np
from absl import flags
from absl import logging

from lee_jax import cli
from lee_jax import configs
from lee_jax import datasets
from lee_jax import trial

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import runner  # noqa: E402  (experiments/runner.py, beside this script)
import sweep as sweep_lib  # noqa: E402

FLAGS = flags.FLAGS
runner.define_search_flags("Explicit dataset names (overrides --group).", mode=False,
                           sweep=True)
_TABLE = flags.DEFINE_list("table", ["2", "3", "10"], "Tables to run: 2, 3, 10, vae.")
_GROUP = flags.DEFINE_string("group", "strogatz", "Dataset group (the paper's: strogatz).")
_TRIALS = flags.DEFINE_integer("trials", 3, "Trials per (dataset, noise); the paper's ablations use 3.",
                               lower_bound=1)
_NOVAE = flags.DEFINE_string("checkpoint_novae", None, "A use_vae=False model (--table=vae).")
_OUT = flags.DEFINE_string("out_dir", "experiments/results/ablations", "Results directory.")
_DRY = flags.DEFINE_bool("dry_run", False, "Print the cells and srbench.py commands; run nothing.")
_AGG = flags.DEFINE_bool("aggregate_only", False, "Only write the tables from what OUT_DIR holds.")

HERE = pathlib.Path(__file__).resolve().parent


@dataclasses.dataclass(frozen=True)
class Setting:
  """One row of a table: a search mode, its SearchConfig overrides and which checkpoint."""
  key: str  # the row id in experiments/data/paper_ablations.csv
  label: str
  mode: str
  overrides: tuple[tuple[str, int], ...] = ()
  novae: bool = False
  matched_oneshot: bool = False  # n_init := the base config's decode_budget()


@dataclasses.dataclass(frozen=True)
class Table:
  name: str
  title: str
  noises: tuple[float, ...]
  settings: tuple[Setting, ...]
  drop_failed: bool = False  # Table 5 drops failed datasets from the means
  extra: str = ""  # 'decodes' (Table 3) or 'failures' (Table 5)


TABLES = {
    "2": Table("2", "Search-strategy ablation on Strogatz (paper Table 2)", (0.0, 0.1), (
        Setting("iterative", "iterative refinement", "iterative"),
        Setting("gradient", "gradient refinement", "gradient"),
        Setting("combined", "iterative + gradient refinement", "combined"))),
    "3": Table("3", "Same-backbone search comparison, Strogatz eps=0.1, matched decode budget "
               "(paper Table 3)", (0.1,), (
        Setting("oneshot", "(a) one-shot decode from z0", "oneshot", matched_oneshot=True),
        Setting("cmaes", "(b) CMA-ES on z (R2 fitness)", "cmaes"),
        Setting("combined", "(c) LEE iterative + gradient", "combined")), extra="decodes"),
    "10": Table("10", "Pool size sensitivity, Strogatz eps=0.1 (paper Table 10)", (0.1,), (
        Setting("pool8", "P=8", "combined", (("pool_size", 8),)),
        Setting("pool16", "P=16 (default)", "combined", (("pool_size", 16),)),
        Setting("pool32", "P=32", "combined", (("pool_size", 32),)))),
    "vae": Table("vae", "VAE architecture ablation, Strogatz eps=0.1 (paper Table 5, App. E)",
                 (0.1,), (
        Setting("novae", "non-VAE variant (use_vae=False)", "combined", novae=True),
        Setting("vae", "full LEE (VAE)", "combined")), drop_failed=True, extra="failures"),
}


@dataclasses.dataclass
class Job:
  """One folder: a setting's sweep over the union of the noise levels its tables need."""
  setting: Setting
  sweep: sweep_lib.Sweep


def base_overrides() -> dict:
  """The flags every setting shares. The polynomial, separable, power-law, factored,
  composite, transformed-target and wave seeds, the long sums and the parsimony step are off
  unless --poly_terms / --sep_terms / --power_seeds / --factor_seeds / --composite_seeds /
  --transform_seeds / --wave_seeds / --long_terms / --parsimony / --final_refit is given: the tables
  compare the paper's search components, and the seeds would put the same answers under
  every row."""
  return {"poly_terms": 0, "sep_terms": 0, "power_seeds": False, "factor_seeds": False,
          "composite_seeds": False, "transform_seeds": False, "wave_seeds": False,
          "long_terms": 0, "parsimony": False, "final_refit": False,
          **runner.search_overrides(*runner.SWEEP_OVERRIDES)}


def model_defaults(novae: bool) -> tuple[tuple[str, object], ...]:
  """The search defaults of one side's checkpoint (sweep.search_defaults)."""
  return sweep_lib.search_defaults(_NOVAE.value if novae else FLAGS.checkpoint, FLAGS.random_model)


def setting_overrides(s: Setting, base: dict) -> dict:
  """The setting's own fields (a preset's own value is dropped: P=16 is the default run)."""
  preset = configs.get_search_config(FLAGS.preset, dict(model_defaults(s.novae)), **base)
  own = dict(s.overrides)
  if s.matched_oneshot:
    own["n_init"] = preset.decode_budget()
  return {k: v for k, v in own.items() if getattr(preset, k) != v}


def folder_name(s: Setting, own: dict) -> str:
  return s.mode + "".join(f"_{k}{v}" for k, v in sorted(own.items())) + ("_novae" if s.novae else "")


def plan(tables: list[Table], names: list[str]) -> dict[str, Job]:
  """{folder: Job} for every setting of the tables (settings shared by tables run once)."""
  base = base_overrides()
  jobs: dict[str, Job] = {}
  noises: dict[str, set] = {}
  for table in tables:
    for s in table.settings:
      own = setting_overrides(s, base)
      folder = folder_name(s, own)
      noises.setdefault(folder, set()).update(table.noises)
      jobs[folder] = Job(jobs[folder].setting if folder in jobs else s, sweep_lib.Sweep(
          pathlib.Path(_OUT.value) / folder, tuple(names), tuple(sorted(noises[folder])),
          _TRIALS.value, seed=FLAGS.seed, preset=FLAGS.preset, mode=s.mode,
          overrides=tuple(sorted({**base, **own}.items())), model_defaults=model_defaults(s.novae),
          shard_index=FLAGS.shard_index,
          num_shards=FLAGS.num_shards))
  return jobs


def source(novae: bool) -> str:
  return sweep_lib.model_source(_NOVAE.value if novae else FLAGS.checkpoint, FLAGS.random_model,
                                use_vae=not novae)


def command(job: Job) -> str:
  """The srbench.py command that fills the same folder."""
  sw, args = job.sweep, ["python experiments/srbench.py"]
  args.append(f"--datasets={','.join(sw.names)}" if FLAGS.datasets else f"--group={_GROUP.value}")
  args += [f"--noise={','.join(f'{n:g}' for n in sw.noises)}", f"--trials={sw.trials}",
           f"--seed={sw.seed}", f"--preset={sw.preset}", f"--mode={sw.mode}"]
  flag = {"iterations": "iters"}
  args += [f"--{flag.get(k, k)}={v}" for k, v in sw.overrides]
  if FLAGS.random_model:
    args.append(f"--random_model={FLAGS.random_model}")
  elif job.setting.novae or FLAGS.checkpoint:
    args.append(f"--checkpoint={_NOVAE.value if job.setting.novae else FLAGS.checkpoint}")
  args.append(f"--out_dir={sw.out_dir}")
  if sw.num_shards > 1:
    args += [f"--shard_index={sw.shard_index}", f"--num_shards={sw.num_shards}"]
  note = "  # untrained use_vae=False: ablations.py only" if FLAGS.random_model and job.setting.novae else ""
  return " ".join(args) + note


def load(novae: bool) -> sweep_lib.Model:
  """The model of one side of the VAE ablation, checked to be that side."""
  model = sweep_lib.load_model(_NOVAE.value if novae else FLAGS.checkpoint, FLAGS.random_model,
                               use_vae=not novae)
  if model.engine.cfg.use_vae == novae:
    flag = "--checkpoint_novae" if novae else "--checkpoint"
    raise ValueError(f"{flag}={model.source} has use_vae={model.engine.cfg.use_vae}; "
                     f"{flag} needs use_vae={not novae}")
  return model


def check(jobs: dict[str, Job]) -> None:
  """A folder of cells run with other settings fails before any model loads, cell runs or
  table is written (--aggregate_only wrote another setting's cells under this one's label)."""
  for job in jobs.values():
    sweep_lib.check_settings(job.sweep.results, job.sweep.settings(source(job.setting.novae)))


def run(jobs: dict[str, Job]) -> None:
  models: dict[bool, sweep_lib.Model] = {}
  for folder, job in jobs.items():
    if not job.sweep.todo():
      print(f"{folder}: all {len(job.sweep.cells())} cells of this shard done", flush=True)
      continue
    if job.setting.novae not in models:
      models[job.setting.novae] = load(job.setting.novae)
    print(f"{folder}: {job.setting.label}", flush=True)
    sweep_lib.run(job.sweep, models[job.setting.novae], warmup=FLAGS.warmup)


# --- tables ---------------------------------------------------------------------------------


def load_paper(table: str) -> list[dict]:
  lines = [l for l in (HERE / "data" / "paper_ablations.csv").read_text().splitlines()
           if not l.startswith("#")]
  return [r for r in csv.DictReader(lines) if r["table"] == table]


def _pm(mean, std, digits) -> str:
  if mean is None or mean == "" or not np.isfinite(float(mean)):
    return "-"
  s = f"{float(mean):.{digits}f}"
  return s + (f" ± {float(std):.{digits}f}" if std not in (None, "") and np.isfinite(float(std)) else "")


def write_table(table: Table, jobs: dict[str, Job], out: pathlib.Path) -> str:
  """tableN.md and tableN.csv: our rows, then the paper's. Returns the Markdown."""
  base = base_overrides()
  ours = {s.key: jobs[folder_name(s, setting_overrides(s, base))] for s in table.settings}
  sources = sorted({source(s.novae) for s in table.settings})
  extra = {"decodes": "decodes/round", "failures": "failed/trial"}.get(table.extra)
  head = ["setting"] + [f"eps={n:g} {k}" for n in table.noises
                        for k in ("R2", "median R2", "clipped R2", "C")]
  head += ["cells", "failed"] + ([extra] if extra else [])
  md = [f"### {table.title}", ""]
  if FLAGS.random_model:
    md += [f"**UNTRAINED MODEL ({', '.join(sources)}): a smoke run; these numbers say nothing "
           "about LEE.**", ""]
  md += [f"Ours: model {', '.join(sources)}; preset {FLAGS.preset}"
         + (f" with {base}" if base else "") + f"; {_TRIALS.value} trial(s) per cell"
         + (f"; {len(next(iter(ours.values())).sweep.names)} datasets" if ours else "") + ".", "",
         "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
  csv_rows = []
  for s in table.settings:
    job = ours[s.key]
    stats = [sweep_lib.stats(job.sweep, n, table.drop_failed) for n in table.noises]
    cells = [f"{_pm(st['r2'], st['r2_std'], 3)} | {_pm(st['r2_median'], None, 3)} | "
             f"{_pm(st['r2_clipped'], None, 3)} | {_pm(st['complexity'], st['complexity_std'], 1)}"
             for st in stats]
    tail = [f"{sum(st['cells'] for st in stats)}/{sum(st['expected'] for st in stats)}",
            str(sum(st["failed"] for st in stats))]
    if extra:
      tail.append(_pm(stats[-1][table.extra], None, 1))
    md.append(f"| {s.label} ({job.sweep.out_dir.name}) | " + " | ".join(cells + tail) + " |")
    for n, st in zip(table.noises, stats):
      csv_rows.append({"table": table.name, "setting": s.key, "label": s.label, "source": "ours",
                       "model": source(s.novae), "folder": job.sweep.out_dir.name, "noise": n,
                       **{k: st[k] for k in ("r2", "r2_std", "r2_median", "r2_clipped", "complexity",
                                             "complexity_std", "cells", "failed", "failures",
                                             "decodes")}})
  paper = load_paper(table.name)
  for s in table.settings:
    prs = {float(r["noise"]): r for r in paper if r["setting"] == s.key}
    cells = [f"{_pm(prs[n]['r2'], prs[n]['r2_std'], 3)} | - | - | "  # the paper gives means only
             f"{_pm(prs[n]['complexity'], prs[n]['complexity_std'], 1)}"
             if n in prs else "- | - | - | -" for n in table.noises]
    tail = ["", ""] + ([_pm(prs[table.noises[-1]]["failures"], prs[table.noises[-1]]["failures_std"], 1)
                        if table.extra == "failures" and table.noises[-1] in prs else ""] if extra else [])
    label = prs[table.noises[-1]]["label"] if table.noises[-1] in prs else s.label
    md.append(f"| {label} [paper] | " + " | ".join(cells + tail) + " |")
    for n, r in prs.items():
      csv_rows.append({"table": table.name, "setting": s.key, "label": r["label"], "source": "paper",
                       "model": "paper", "folder": "", "noise": n, "r2": r["r2"], "r2_std": r["r2_std"],
                       "r2_median": "", "r2_clipped": "",
                       "complexity": r["complexity"], "complexity_std": r["complexity_std"],
                       "cells": "", "failed": "", "failures": r["failures"], "decodes": ""})
  note = {"2": "A cell with no finite test R2 counts as R2 = 0.",
          "3": f"Matched budget: one-shot decodes n_init = {configs.get_search_config(FLAGS.preset, dict(model_defaults(False)), **base).decode_budget()} "
               "from z0; CMA-ES stops at that many decodes after n_init (whole generations); "
               "combined also decodes n_new per gradient segment. A failed cell counts as R2 = 0.",
          "10": "A cell with no finite test R2 counts as R2 = 0.",
          "vae": "Failed cells (no valid expression) are dropped from the means, as in the paper; "
                 "failed/trial counts them."}[table.name]
  md += ["", note + " Std is over trials (of per-trial means over datasets); the median and the "
         "clipped mean (each R2 clipped to [0, 1] first) are over every cell (dataset x trial). "
         "The paper reports means only.", ""]
  text = "\n".join(md)
  (out / f"table{table.name}.md").write_text(text)
  with (out / f"table{table.name}.csv").open("w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(csv_rows[0]))
    w.writeheader()
    w.writerows(trial.json_safe(r) for r in csv_rows)
  return text


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)
  unknown = [t for t in _TABLE.value if t not in TABLES]
  if unknown or not _TABLE.value:
    cli.fail(f"--table takes {', '.join(TABLES)} (got {','.join(_TABLE.value)})")
  runner.check_shard()
  if FLAGS.random_model and (FLAGS.checkpoint or _NOVAE.value):
    cli.fail("--random_model replaces the checkpoints; give one or the other")
  if "vae" in _TABLE.value and not (_NOVAE.value or FLAGS.random_model):
    cli.fail("--table=vae needs --checkpoint_novae (a use_vae=False model trained like "
              "--checkpoint: python -m lee_jax.train --use_vae=false ...); there is none to compare")
  names = datasets.resolve(FLAGS.datasets, [_GROUP.value])
  tables = [TABLES[t] for t in _TABLE.value]
  jobs = plan(tables, names)  # a ValueError (CheckpointError is one) is one line via cli.run
  if _DRY.value:
    for folder, job in jobs.items():
      cells, todo = job.sweep.cells(), job.sweep.todo()
      print(f"{folder}: {job.setting.label}; noise {','.join(f'{n:g}' for n in job.sweep.noises)}; "
            f"{len(cells)} cells in shard {FLAGS.shard_index}/{FLAGS.num_shards}, "
            f"{len(cells) - len(todo)} done, {len(todo)} to run\n  {command(job)}")
    return
  # A dry run writes nothing; otherwise an unwritable --out_dir fails here, before any cell.
  out = cli.output_dir(_OUT.value)
  check(jobs)
  if not _AGG.value:
    run(jobs)
  for table in tables:
    print(write_table(table, jobs, out))
  print(f"tables written to {out}/table{{{','.join(t.name for t in tables)}}}.{{md,csv}}")


if __name__ == "__main__":
  cli.run(main, ValueError)
