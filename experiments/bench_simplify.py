"""Benchmark: the full SymPy simplification vs the light one (no trig passes), same candidates.

    python experiments/bench_simplify.py --datasets=strogatz_glider1,strogatz_shearflow1

A search ranks candidates by the node count of a simplification (`complexity.py`); the
`light` one (the default, `--simplify=light`) leaves out SymPy's trigsimp and exptrigsimp.
This runs one `fast` round of --iterations with the shipped model on each dataset, takes
the distinct constant patterns of every candidate it scored (what the search hands SymPy),
and counts each with both simplifications, taking turns, uncached and in this process.
Prints the time per simplification of each, the speed-up, and how often the counts agree.
"""

from __future__ import annotations

import collections
import pathlib
import sys
import time

import numpy as np
from absl import flags
from absl import logging

from lee_jax import cli
from lee_jax import complexity
from lee_jax import expr as E

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import runner  # noqa: E402  (experiments/runner.py, beside this script)

_DATASETS = flags.DEFINE_list("datasets", "strogatz_glider1,strogatz_shearflow1,strogatz_vdp1",
                              "Datasets whose search candidates are simplified.")
_ITERATIONS = flags.DEFINE_integer("iterations", 50, "Iterations of each recorded round.")
_CHECKPOINT = flags.DEFINE_string("checkpoint", None, "Model for the recorded rounds "
                                  "(default: the shipped one).")
_SEED = flags.DEFINE_integer("seed", 0, "Split and search seed.", lower_bound=0)


def search_prefixes(names: list[str], iterations: int, seed: int, checkpoint: str | None
                    ) -> list[tuple[str, ...]]:
  """The distinct constant-pattern prefixes of every candidate one `fast` round (mode
  combined, full simplification, in-process SymPy) scored on each dataset."""
  rounds = runner.fast_rounds(names, iterations, seed, checkpoint, simplify="full",
                              simplify_helpers=0)
  return list(dict.fromkeys(tuple(E.to_prefix(complexity.constant_pattern(c.node)))
                            for r in rounds for c in r.seen.values() if c is not None))


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)
  print(f"recording: one fast round of {_ITERATIONS.value} iterations on "
        f"{', '.join(_DATASETS.value)}", flush=True)
  prefixes = search_prefixes(_DATASETS.value, _ITERATIONS.value, _SEED.value, _CHECKPOINT.value)
  seconds = {"full": [], "light": []}
  counts = {"full": [], "light": []}
  for i, prefix in enumerate(prefixes):
    order = ("full", "light") if i % 2 == 0 else ("light", "full")  # taking turns
    for mode in order:
      t = time.perf_counter()
      counts[mode].append(complexity.count_simplified(prefix, light=mode == "light"))
      seconds[mode].append(time.perf_counter() - t)
  full, light = (np.asarray(seconds[m]) for m in ("full", "light"))
  diff = collections.Counter(b - a for a, b in zip(counts["full"], counts["light"]))
  same = diff.get(0, 0)
  print(f"{len(prefixes)} distinct candidates (constant patterns)")
  for mode, t in (("full", full), ("light", light)):
    print(f"  {mode:5s}: {t.sum():7.1f} s, {1e3 * t.mean():6.1f} ms per simplification "
          f"(median {1e3 * np.median(t):.1f}, 90th percentile {1e3 * np.percentile(t, 90):.1f})")
  print(f"  light is {full.sum() / light.sum():.2f}x faster; equal counts "
        f"{same}/{len(prefixes)} ({100 * same / len(prefixes):.1f}%); light - full: "
        + (", ".join(f"{d:+d}: {n}" for d, n in sorted(diff.items()) if d) or "none"))


if __name__ == "__main__":
  cli.run(main, ValueError)
