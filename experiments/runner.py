"""What the search-running figure scripts (convergence.py, timing.py) share: their search
flags, a model, datasets, one trial per dataset.

Flags are defined only when a script runs (define_search_flags in its __main__ block), so
tests can import both scripts into one process. Errors a user can cause (unknown dataset,
unloadable checkpoint) end the script with a one-line `error: ...` and exit status 2.
"""

from __future__ import annotations

import dataclasses
import functools

from absl import flags

from lee_jax import checkpoints
from lee_jax import cli
from lee_jax import configs
from lee_jax import datasets
from lee_jax import engine as engine_lib
from lee_jax import search
from lee_jax import trial

import sweep  # experiments/sweep.py: the scripts importing this put experiments/ on sys.path

STROGATZ = "strogatz"


# The override flags define_search_flags(sweep=True) defines: a sweep runner passes every one
# on (search_overrides(*SWEEP_OVERRIDES)), so none is accepted and then ignored.
SWEEP_OVERRIDES = ("rounds", "iters", "workers", "simplify_helpers", "overlap", "fitter", "simplify",
                   "n_init", "poly_terms", "poly_floor", "sep_terms", "power_seeds",
                   "factor_seeds", "composite_seeds", "transform_seeds", "wave_seeds",
                   "long_terms", "parsimony", "final_refit")


def define_search_flags(datasets_help: str, mode: bool = True, sweep: bool = False) -> None:
  """The flags of every search-running script, defined once here (srbench.py, ablations.py,
  convergence.py, timing.py). mode=False leaves out --mode (ablations.py sets modes itself);
  sweep=True adds the sweep runners' --fitter, --n_init and sharding flags."""
  flags.DEFINE_list("datasets", None, datasets_help)
  # (bounded: a negative seed was recorded as a failed cell in every cell, and the folder
  # then refused the corrected command as another setting)
  flags.DEFINE_integer("seed", 0, "Base seed: trial t uses seed + 1000 t, its round r seed + r.",
                       lower_bound=0, upper_bound=2**31)
  flags.DEFINE_enum("preset", "fast", list(configs.PRESETS), "Search preset.")
  if mode:
    flags.DEFINE_enum("mode", "combined", list(configs.MODES), "Search mode.")
  flags.DEFINE_integer("rounds", None, "Override the preset's rounds.")
  flags.DEFINE_integer("iters", None, "Override the preset's iterations.")
  flags.DEFINE_integer("workers", None, "Override the preset's worker processes.")
  flags.DEFINE_integer("simplify_helpers", None, "Override the preset's SymPy helper processes.")
  flags.DEFINE_bool("overlap", None, "Override the preset's overlap (a batch's SymPy in the "
                    "helpers while the next batch decodes; parents one batch behind).")
  flags.DEFINE_string("checkpoint", None, "Trained model (default: the shipped one).")
  flags.DEFINE_enum("random_model", None, list(configs.MODELS),
                    "An untrained model of this size (smoke tests and timing only).")
  if sweep:
    flags.DEFINE_enum("fitter", None, list(configs.FITTERS), "Override the preset's fitter.")
    flags.DEFINE_enum("simplify", None, list(configs.SIMPLIFY), "Override the preset's search "
                      "simplification (light: without SymPy's trig passes; full = the paper).")
    flags.DEFINE_integer("n_init", None, "Override the preset's n_init (decodes from z0).")
    flags.DEFINE_integer("poly_terms", None, "Override the preset's polynomial seeds (the best "
                         "1..T-term polynomials join each pool; 0 = none, the paper).")
    flags.DEFINE_bool("poly_floor", None, "Override the preset's poly_floor (the polynomial "
                      "seeds are answer candidates only, never parents).")
    flags.DEFINE_integer("sep_terms", None, "Override the preset's separable seeds (the best "
                         "1..T-term sums of products of one-variable functions; 0 = none, the paper).")
    flags.DEFINE_bool("power_seeds", None, "Override the preset's power-law seeds (c * x1^a1 * "
                      "x2^a2 ...; --nopower_seeds = none, the paper).")
    flags.DEFINE_bool("factor_seeds", None, "Override the preset's factored seeds (power laws "
                      "times short sums; --nofactor_seeds = none, the paper).")
    flags.DEFINE_bool("composite_seeds", None, "Override the preset's composite seeds (functions "
                      "of products and ratios of variables; --nocomposite_seeds = none, the "
                      "paper).")
    flags.DEFINE_bool("transform_seeds", None, "Override the preset's transformed-target seeds "
                      "(sqrt, 1/ or exp of seeds of y^2, 1/y, log|y|; --notransform_seeds = "
                      "none, the paper).")
    flags.DEFINE_bool("wave_seeds", None, "Override the preset's wave seeds (A sin(c u + phi) "
                      "+ d, the frequency c scanned; --nowave_seeds = none, the paper).")
    flags.DEFINE_integer("long_terms", None, "Override the preset's long sums (the best sum "
                         "of up to T terms answers when it pays for its nodes; 0 = never, the "
                         "paper).")
    flags.DEFINE_bool("parsimony", None, "Override the preset's parsimony step (the answer "
                      "made simpler while BIC on its training rows falls; --noparsimony = the "
                      "answer as found, the paper).")
    flags.DEFINE_bool("final_refit", None, "Override the preset's final refit (the answer's "
                      "constants fitted again on the training and validation rows once they "
                      "chose it; --nofinal_refit = the training rows' fit, the paper).")
    flags.DEFINE_bool("warmup", False, "First run one short untimed trial (every round, one "
                      "gradient period) on the first cell's data: compilation and the worker "
                      "processes' start stay out of the cells' wall times.")
    flags.DEFINE_integer("shard_index", 0, "This job's shard (of every cell of the sweep).")
    flags.DEFINE_integer("num_shards", 1, "Number of shards the cells are split into.")


def search_overrides(*names: str) -> dict:
  """{SearchConfig field: flag value} for the given override flags that were set."""
  field = {"iters": "iterations"}
  return {field.get(n, n): getattr(flags.FLAGS, n) for n in names
          if getattr(flags.FLAGS, n) is not None}


@dataclasses.dataclass
class Setup:
  """Everything a trial needs besides the data."""
  eng: engine_lib.Engine
  bundle: dict
  source: str  # the model, in words
  cfg: configs.SearchConfig
  mode: str
  seed: int


def setup_from_flags() -> Setup:
  f = flags.FLAGS
  defaults = model_search_defaults(f.checkpoint, f.random_model)
  cfg = configs.get_search_config(f.preset, defaults, rounds=f.rounds, iterations=f.iters,
                                  workers=f.workers, simplify_helpers=f.simplify_helpers,
                                  overlap=f.overlap)
  return Setup(*load_engine(f.checkpoint, f.random_model), cfg, f.mode, f.seed)


def check_shard() -> None:
  """One line and exit 2 unless 0 <= --shard_index < --num_shards (the sweep flags)."""
  f = flags.FLAGS
  if not 0 <= f.shard_index < f.num_shards:
    cli.fail(f"need 0 <= --shard_index < --num_shards (got {f.shard_index}, {f.num_shards})")


def model_search_defaults(checkpoint: str | None, random_model: str | None) -> dict:
  """The checkpoint's own search defaults (sweep.search_defaults); exits on a bad one."""
  try:
    return dict(sweep.search_defaults(checkpoint, random_model))
  except checkpoints.CheckpointError as e:
    cli.fail(str(e))


@functools.cache  # a process (a test session) builds and compiles each size once
def _untrained(name: str) -> tuple[engine_lib.Engine, dict]:
  return engine_lib.untrained(name)


def load_engine(checkpoint: str | None, random_model: str | None
                ) -> tuple[engine_lib.Engine, dict, str]:
  """(Engine, bundle, a description of the model); exits on a checkpoint that cannot load."""
  if random_model and checkpoint:  # (the checkpoint was once ignored without a word)
    cli.fail("pass --checkpoint or --random_model, not both")
  if random_model:
    return *_untrained(random_model), f"untrained {random_model}"
  try:
    eng, bundle = engine_lib.load(checkpoint)
  except checkpoints.CheckpointError as e:
    cli.fail(str(e))
  return eng, bundle, sweep.model_source(checkpoint)


def noise_levels(values: list[str]) -> tuple[float, ...]:
  """--noise as floats; each must be finite and >= 0, checked before any cell runs (a bad one
  would otherwise be recorded as an error cell, or as a NaN cell no summary could sort)."""
  try:
    noises = tuple(float(n) for n in values)
  except ValueError:
    raise ValueError(f"--noise takes numbers, got {','.join(values)}") from None
  if not noises:
    raise ValueError("--noise takes finite levels >= 0, got none")
  for n in noises:
    datasets.check_noise(n, "--noise")  # names the bad level
  return noises


def load_all(names: list[str]) -> dict[str, datasets.Dataset]:
  """Every named dataset, loaded before any search starts so a typo fails at once."""
  if not names:
    cli.fail("no datasets given")
  try:
    return {name: datasets.load_dataset(name) for name in names}
  except datasets.DataError as e:
    cli.fail(str(e))


def fast_rounds(names: list[str], iterations: int, seed: int, checkpoint: str | None,
                round_cls=search.Round, **overrides) -> list[search.Round]:
  """One finished `fast` round (mode combined, round 0, seed) of `iterations` on the SRBench
  split of each named dataset: what the benchmarks record a real search from. round_cls: a
  search.Round subclass that records what it sees; overrides: SearchConfig fields."""
  sets = load_all(names)  # the loaders exit with one line on a bad name or model
  eng, _, _ = load_engine(checkpoint, None)
  cfg = configs.get_search_config("fast", model_search_defaults(checkpoint, None), rounds=1,
                                  iterations=iterations, **overrides)
  rounds = []
  for ds in sets.values():
    p = datasets.split(ds.X, ds.y, seed=seed)
    r = round_cls(eng, search.SearchData.from_split(p), cfg, "combined", 0, seed)
    r.run()
    rounds.append(r)
  return rounds


@dataclasses.dataclass
class Run:
  name: str
  noise: float
  data: search.SearchData
  result: trial.TrialResult


def run_dataset(setup: Setup, ds: datasets.Dataset, noise: float = 0.0) -> Run:
  """One trial on the SRBench split of ds (the split srbench.py uses for this seed)."""
  p = datasets.split(ds.X, ds.y, seed=setup.seed, noise=noise)
  data = search.SearchData.from_split(p)
  return Run(ds.name, noise, data,
             trial.run_trial(setup.eng, data, setup.cfg, setup.mode, setup.seed,
                             bundle=setup.bundle))
