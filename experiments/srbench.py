"""SRBench runner: every (dataset, noise, trial) cell of a sweep, resumable and shardable.

    python experiments/srbench.py --group=strogatz --noise=0,0.01,0.1 --trials=3 --preset=fast
    python experiments/srbench.py --group=all --shard_index=3 --num_shards=8 ...   # one of 8 jobs

Cells follow SRBench: the 75/25 split with trial seed s_t = seed + 1000 t, target noise on
the training part (ground-truth groups only: black-box runs at noise 0). Each finished cell
is one JSON line appended to OUT_DIR/results.jsonl (flushed and fsynced), so a killed sweep
loses at most the cell in flight and the same command skips what is done. A cell that fails
(bad data, no valid expression) is recorded with its error and the sweep goes on. At the end
(or with --summary_only) it prints, per group and noise: cells, found, mean test R2, mean
complexity, mean wall time and the failure counts. Each line records its setting (model,
seed, preset, mode and every search field that differs from the preset, e.g. --pool_size), and
a folder holding another setting's cells is refused: use one --out_dir per setting. The sweep
itself is experiments/sweep.py (shared with experiments/ablations.py).
"""

from __future__ import annotations

import math
import numbers
import pathlib
import sys

from absl import flags
from absl import logging

from lee_jax import cli
from lee_jax import datasets

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import peers  # noqa: E402  (experiments/peers.py, beside this script)
import runner  # noqa: E402
import sweep as sweep_lib  # noqa: E402

FLAGS = flags.FLAGS
_METHOD = flags.DEFINE_enum("method", "lee", ["lee", *peers.PEERS],
                            "lee, or a peer run on the identical splits (experiments/peers.py).")
runner.define_search_flags("Explicit dataset names (overrides --group).", sweep=True)
_PEER_GENERATIONS = flags.DEFINE_integer(
    "peer_generations", None, "A peer's generations (default: its package's, gplearn 20, "
    "Operon 1000); recorded, so a folder never mixes budgets.", lower_bound=1)
_GROUP = flags.DEFINE_list("group", ["strogatz"], "strogatz, feynman, blackbox, or all.")
_NOISE = flags.DEFINE_list("noise", ["0"], "Target noise levels (ground-truth groups).")
_TRIALS = flags.DEFINE_integer("trials", 1, "Trials per (dataset, noise).", lower_bound=1)
_POOL = flags.DEFINE_integer("pool_size", None, "Override the preset's pool size P.")
_TEMPERATURE = flags.DEFINE_float("temperature", None, "Override the preset's sampling temperature tau.")
_LATENT_NOISE = flags.DEFINE_float("latent_noise", None, "Override the preset's latent noise "
                                   "(sampled decodes from mu + s * std * eps; 0: the paper).")
_OUT = flags.DEFINE_string("out_dir", None, "Results directory (default experiments/results/srbench_<preset>_<mode>).")
_SUMMARY = flags.DEFINE_bool("summary_only", False, "Only print the summary of OUT_DIR.")

# Kept importable from here for callers of the pre-split module.
cells, cell_key, read_results, summary = (sweep_lib.cells, sweep_lib.cell_key,
                                          sweep_lib.read_results, sweep_lib.summary)


def _summary(path: pathlib.Path) -> str:
  """The summary of a results.jsonl, leaving out (with one warning) lines it cannot place: a
  line of an older run may hold a null or NaN noise level, or not be a cell at all."""
  rows = read_results(path, strict=False)
  ok = [r for r in rows if isinstance(r, dict) and isinstance(r.get("group"), str)
        and isinstance(r.get("noise"), numbers.Real) and math.isfinite(r["noise"])]
  if len(ok) < len(rows):
    print(f"warning: {path}: {len(rows) - len(ok)} line(s) without a group and a finite noise "
          "level left out of the summary", file=sys.stderr)
  return summary(ok)


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)
  default = (f"srbench_{FLAGS.preset}_{FLAGS.mode}" if _METHOD.value == "lee"
             else f"srbench_{_METHOD.value}")
  out_dir = pathlib.Path(_OUT.value or f"experiments/results/{default}")
  if _SUMMARY.value:
    if not (out_dir / "results.jsonl").is_file():
      raise ValueError(f"{out_dir} holds no results.jsonl (is it a sweep's --out_dir?)")
    print(_summary(out_dir / "results.jsonl"))
    return
  noises = runner.noise_levels(_NOISE.value)
  if _METHOD.value == "lee" and _PEER_GENERATIONS.value is not None:
    raise ValueError("--peer_generations sets a peer's budget: use it with --method=gplearn or "
                     "--method=operon")
  runner.check_shard()
  names = datasets.resolve(FLAGS.datasets, _GROUP.value)
  overrides = runner.search_overrides(*runner.SWEEP_OVERRIDES, "pool_size", "temperature",
                                      "latent_noise")
  # A ValueError here (a bad override, a folder of another setting, a model that cannot
  # load: CheckpointError is one) becomes one line through cli.run, before any cell runs.
  sweep = sweep_lib.Sweep(
      out_dir, tuple(names), noises, _TRIALS.value,
      seed=FLAGS.seed, method=_METHOD.value, preset=FLAGS.preset, mode=FLAGS.mode,
      overrides=tuple(overrides.items()),
      model_defaults=sweep_lib.search_defaults(FLAGS.checkpoint, FLAGS.random_model) if (
          _METHOD.value == "lee") else (),
      shard_index=FLAGS.shard_index, num_shards=FLAGS.num_shards,
      peer_generations=_PEER_GENERATIONS.value)
  sweep.search_config()  # a bad override or a mixed folder fail before the model loads
  lee = _METHOD.value == "lee"
  sweep_lib.check_settings(sweep.results, sweep.settings(
      sweep_lib.model_source(FLAGS.checkpoint, FLAGS.random_model) if lee else None))
  # Every check above leaves the folder alone; now make sure it can be written before the
  # model loads (a path under a file or /proc would fail only at the first cell).
  cli.output_dir(out_dir)
  model = sweep_lib.load_model(FLAGS.checkpoint, FLAGS.random_model) if lee else None
  sweep_lib.run(sweep, model, warmup=FLAGS.warmup)
  print(_summary(sweep.results))


if __name__ == "__main__":
  cli.run(main, ValueError)
