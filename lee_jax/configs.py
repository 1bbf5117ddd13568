"""Model presets and the five-phase training schedule (paper App. F Tables 7-8, App. G Table 9).

`MODELS['paper']` is Table 9 verbatim; `small` and `tiny` are our own sizes (for a single-GPU
run and for CPU tests). `PHASES[n]` holds the Table 7 loss weights, the Table 8 step count
and which parts of the model train in phase n.
"""

from __future__ import annotations

import dataclasses
import math

from lee_jax import vocab


ATTENTION_IMPLS = ("auto", "xla", "cudnn")  # the --attention flag's values
FUSED_REFINE = ("auto", "on", "off")  # the --fused_refine flag's values
# the --rng_impl flag's values: JAX's default threefry, or XLA's RngBitGenerator keys
RNG_IMPLS = ("auto", "threefry", "rbg", "unsafe_rbg")


def resolve_attention(choice: str, dtype: str, backend: str) -> str | None:
  """--attention -> ModelConfig.attention_impl: 'auto' is cuDNN flash attention where it runs
  (a GPU with a 16-bit compute dtype), else XLA's (None)."""
  if choice == "auto":
    return "cudnn" if backend == "gpu" and dtype in ("bfloat16", "float16") else None
  return None if choice == "xla" else choice


def resolve_fused_refine(choice: str, backend: str) -> bool:
  """--fused_refine -> losses.total_loss(fused=): 'auto' batches L_refine's passes with the
  others on an accelerator (an H200's `small` phase-3 step 48.9 -> 39.2 ms) and not on a CPU
  (`tiny` 20% slower there: larger blocks, no launch overhead to save). BUILD_NOTES."""
  if choice not in FUSED_REFINE:
    raise ValueError(f"fused_refine must be one of {FUSED_REFINE}, got {choice!r}")
  return backend != "cpu" if choice == "auto" else choice == "on"


def resolve_rng_impl(choice: str, backend: str) -> str:
  """--rng_impl -> the PRNG of a step's draws: 'auto' is rbg on a GPU (an H200's `paper`
  phase-3 step 158.6 -> 151.3 ms, MFU 31.1 -> 32.6%: BUILD_NOTES "Sixth GPU lease") and
  threefry elsewhere (the CPU's tests and runs keep their draws)."""
  if choice not in RNG_IMPLS:
    raise ValueError(f"rng_impl must be one of {RNG_IMPLS}, got {choice!r}")
  if choice == "auto":
    return "rbg" if backend == "gpu" else "threefry"
  return choice


DTYPES = ("bfloat16", "float32")
# ModelConfig's annotations (strings: `from __future__ import annotations`) -> accepted types
_FIELD_TYPES = {"int": (int,), "float": (int, float), "bool": (bool,), "str": (str,),
                "str | None": (str, type(None))}


@dataclasses.dataclass(frozen=True)
class ModelConfig:
  """Sizes of the encoder, expression decoder and evaluation decoder (Table 9 names).

  dtype is the compute dtype of the transformer matmuls; params are always param_dtype.
  Layer-norm statistics, softmax, the latent heads, the vocab head and the eval-decoder
  output MLP always run in float32.
  """
  enc_dim: int
  enc_layers: int
  enc_heads: int
  enc_ffn: int
  expr_dim: int
  expr_layers: int
  expr_heads: int
  expr_ffn: int
  eval_dim: int
  eval_layers: int
  eval_heads: int
  eval_ffn: int
  d_z: int = 512
  n_memory: int = 4  # K memory tokens per decoder (Eq. 4, 6)
  dropout: float = 0.1  # residual + embedding dropout; attention weights are not dropped
  mlp_hidden: int = 256  # scatter-embedding and query-embedding MLPs (App. G)
  max_len: int = 64  # token sequence length incl. BOS/EOS/PAD (pipeline.DataConfig.max_len)
  vocab_size: int = vocab.VOCAB_SIZE
  n_points: int = 200  # max scatter points; only documents the encoder's sequence length
  n_features: int = vocab.MAX_VARIABLES  # x columns (unused ones are zero)
  x_scale: float = 4.0  # log-compressed x is divided by this before the MLPs (App. G)
  use_vae: bool = True  # False: z = mu, KL replaced by a ||z||^2 penalty, no align loss
  # Untied: the vocab is 45 tokens, so tying would save 45*d params (<0.01%) while coupling
  # the decoder's input and output geometry; untied also keeps the head in float32.
  tie_output_head: bool = False
  # 'symexp': the eval head predicts v and y_hat = sign(v)*expm1(|v|) (inverse of the input
  # log-compression), so raw-scale targets spanning many decades are reachable and the
  # relative loss |y_hat-y|/max(|y|,1) has O(1) gradients in v. 'linear': y_hat = v.
  eval_output: str = "symexp"
  dtype: str = "bfloat16"  # compute dtype
  param_dtype: str = "float32"
  # jax.nn.dot_product_attention: None/'xla' or 'cudnn'. Training resolves its --attention
  # (default 'auto': cuDNN on a GPU in bf16) into this at run time; stored configs keep None.
  attention_impl: str | None = None

  def __post_init__(self):
    # A meta.json is read into this class: a hand-edited 64.0 or "float8" fails here, in
    # one line, not as a traceback from inside the model.
    for f in dataclasses.fields(self):
      value, kinds = getattr(self, f.name), _FIELD_TYPES[f.type]
      if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise ValueError(f"{f.name} must be {f.type}, got {value!r}")
      if f.type == "int" and value < 1:
        raise ValueError(f"{f.name} must be >= 1, got {value}")
    if not 0 <= self.dropout < 1:
      raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
    for name in ("dtype", "param_dtype"):
      if getattr(self, name) not in DTYPES:
        raise ValueError(f"{name} must be one of {DTYPES}, got {getattr(self, name)!r}")
    for name in ("enc", "expr", "eval"):
      dim, heads = getattr(self, f"{name}_dim"), getattr(self, f"{name}_heads")
      if dim % heads:
        raise ValueError(f"{name}_dim={dim} is not divisible by {name}_heads={heads}")
    if self.eval_output not in ("symexp", "linear"):
      raise ValueError(f"eval_output must be 'symexp' or 'linear', got {self.eval_output!r}")
    if self.attention_impl not in (None,) + ATTENTION_IMPLS[1:]:
      raise ValueError(
          f"attention_impl must be None, 'xla' or 'cudnn', got {self.attention_impl!r}")


MODELS: dict[str, ModelConfig] = {
    # Table 9 exactly. Our count is ~97M, below the table's ~150M "Parameters" row, which
    # does not follow from its own dims (e.g. 6 x 12*768^2 = 42M for the encoder, not 75M).
    "paper": ModelConfig(
        enc_dim=768, enc_layers=6, enc_heads=12, enc_ffn=3072,
        expr_dim=512, expr_layers=8, expr_heads=8, expr_ffn=2048,
        eval_dim=512, eval_layers=4, eval_heads=8, eval_ffn=2048,
        d_z=512, dropout=0.1),
    # PROVISIONAL: sized to fit 48 MiB of fp32 params (~12M); retune from GPU throughput.
    "small": ModelConfig(
        enc_dim=320, enc_layers=4, enc_heads=5, enc_ffn=1280,
        expr_dim=256, expr_layers=4, expr_heads=4, expr_ffn=1024,
        eval_dim=256, eval_layers=2, eval_heads=4, eval_ffn=1024,
        d_z=256, dropout=0.1),
    # CPU tests (< 1M params).
    "tiny": ModelConfig(
        enc_dim=64, enc_layers=2, enc_heads=4, enc_ffn=128,
        expr_dim=64, expr_layers=2, expr_heads=4, expr_ffn=128,
        eval_dim=64, eval_layers=2, eval_heads=2, eval_ffn=128,
        d_z=32, mlp_hidden=64, dropout=0.1),
}


def get_model_config(name: str, **overrides) -> ModelConfig:
  """A preset from MODELS with dataclass fields replaced, e.g. ('tiny', dtype='float32')."""
  if name not in MODELS:
    raise ValueError(f"unknown model config {name!r}; valid names: {', '.join(MODELS)}")
  return dataclasses.replace(MODELS[name], **overrides)


@dataclasses.dataclass(frozen=True)
class LossWeights:
  """lambda_expr, lambda_eval, lambda_KL, lambda_align, lambda_refine (Eq. 7).

  Frozen (hashable), so a train step can take it as a static argument; a weight of 0 means
  the term is not computed at all.
  """
  expr: float = 1.0
  eval: float = 5.0
  kl: float = 0.001
  align: float = 0.0
  refine: float = 0.0
  # 'q_to_p' (Eq. 8, the paper's): KL(q || sg p) pulls the posterior to the scatter-only p.
  # 'p_to_q' (our deviation, off by default): KL(sg q || p) trains p toward q instead, as a
  # CVAE prior network; for models too small to carry the expression through p (BUILD_NOTES).
  align_direction: str = "q_to_p"


ALIGN_DIRECTIONS = ("q_to_p", "p_to_q")  # LossWeights.align_direction
# Where Eq. 8's target p(z|D) comes from (trainer.TrainConfig.align_target): 'ema' is an
# exponential moving average of the encoder's weights, 'online' the encoder being trained.
ALIGN_TARGETS = ("ema", "online")


ALL_MODULES = ("encoder", "expr_decoder", "eval_decoder")  # LEE attribute names


@dataclasses.dataclass(frozen=True)
class PhaseConfig:
  """One row of Table 7 plus its Table 8 step count.

  trainable: LEE submodules whose params the optimizer updates (model.trainable_filter turns
  this into an nnx filter); the others are frozen.
  """
  name: str
  weights: LossWeights
  steps: int
  trainable: tuple[str, ...] = ALL_MODULES


PHASES: dict[int, PhaseConfig] = {
    1: PhaseConfig("basic", LossWeights(1.0, 5.0, 0.001, 0.0, 0.0), 50_000),
    2: PhaseConfig("+align", LossWeights(1.0, 5.0, 0.001, 2.0, 0.0), 30_000),
    3: PhaseConfig("+refine", LossWeights(1.0, 5.0, 0.001, 2.0, 1.0), 50_000),
    4: PhaseConfig("freeze decoders", LossWeights(0.0, 0.0, 0.001, 5.0, 0.0), 30_000,
                   trainable=("encoder",)),
    5: PhaseConfig("unfreeze", LossWeights(1.0, 5.0, 0.001, 2.0, 1.0), 40_000),
}


def phases(use_vae: bool = True) -> tuple[int, ...]:
  """The phases a model trains through, in order. The no-VAE model (App. E: no align loss)
  skips phase 4, whose only other term, its ||z||^2 penalty, then pulls z to 0 unopposed
  (Adam takes full steps: token accuracy 0.63 -> 0.23 in 200 steps); phase 5 follows 3."""
  return tuple(PHASES) if use_vae else tuple(p for p in PHASES if p != 4)


def previous_phase(phase: int, use_vae: bool = True) -> int | None:
  """The phase whose params `phase` starts from (None for the first)."""
  order = phases(use_vae)
  i = order.index(phase)
  return order[i - 1] if i else None


# SearchConfig fields that change how fast a search runs, never what it finds.
SPEED_ONLY = ("workers", "simplify_helpers")

MODES = ("combined", "iterative", "gradient", "oneshot", "cmaes")
FITTERS = ("scipy", "jax")
SIMPLIFY = ("light", "full")


@dataclasses.dataclass(frozen=True)
class SearchConfig:
  """Inference hyperparameters (Table 10 names). The fields Table 10 names default to its
  values; the others are ours (BUILD_NOTES "Inference": grad_points, simplify, constrain,
  baselines, probe_points; a model's meta.json may set latent_noise). `PRESETS['paper']`
  is Table 10 plus our polynomial, separable, power-law, factored and
  composite, transformed-target and wave seeds and long sums (poly_terms=0, sep_terms=0,
  power_seeds=False, factor_seeds=False, composite_seeds=False, transform_seeds=False,
  wave_seeds=False, long_terms=0 remove them; parsimony=False keeps the answer as found;
  final_refit=False keeps the constants the training fold gave).

  An iteration re-encodes one parent and decodes n_new children; a batch is `parents`
  iterations processed together, so T=200 iterations are 40 batches per round.
  """
  rounds: int = 10  # R
  iterations: int = 200  # T per round
  pool_size: int = 16  # P
  n_init: int = 32  # decoded from z0 at round start: 1 greedy + n_init-1 sampled
  n_new: int = 3  # children per parent
  parents: int = 5  # k, parents per batch
  refresh_every: int = 5  # batches between scatter resamples (3 fresh candidates each)
  n_refresh: int = 3
  alpha: float = 0.002  # complexity penalty
  temperature: float = 0.7  # tau
  # Our addition (0 = the paper): sampled decodes start from mu + latent_noise * std * eps,
  # std the encoder's posterior spread, instead of from mu (a strong autoencoder gives its
  # parent back from mu).
  latent_noise: float = 0.0
  lbfgs_first: int = 100  # L-BFGS-B max iterations in round 0 ...
  lbfgs_last: int = 300  # ... ramped linearly to this in round R-1
  fit_rows: int = 1000  # rows used for the constant fit
  score_rows: int = 2000  # MAX_SEARCH_POINTS: train rows for the per-candidate R2
  n_scatter: int = 200  # scatter points given to the encoder
  n_grad: int = 50  # Adam steps per gradient segment
  grad_lr: float = 5e-3  # eta
  prox: float = 0.1  # lambda_prox
  # Our deviation (0 = the paper: all n_scatter points): a gradient segment queries g_eval at
  # this many scatter points (the scatter is a random draw, so its first ones are too), the
  # query count g_eval was trained with (pipeline.DataConfig.n_query).
  grad_points: int = 64
  decode_period: int = 25  # iterations between gradient segments
  cmaes_popsize: int = 24
  cmaes_sigma: float = 0.5  # initial CMA-ES step size in z
  fitter: str = "scipy"  # 'scipy' (L-BFGS-B per candidate) or 'jax' (least squares + batched LM)
  lm_steps: int = 20  # Levenberg-Marquardt steps of the jax fitter
  lm_restarts: int = 2  # its starts per candidate (the decoded constants + perturbations)
  # With more than twice this many fit rows, the LM steps run on a random subsample of this
  # size and then fit.POLISH steps on all rows (0: every step on all rows).
  lm_sub_rows: int = 128
  constrain: bool = True  # grammar-constrained decoding (decode.py)
  baselines: bool = True  # seed each pool with c, c*x_i + c (so a round always has an answer)
  # Our addition (0 = the paper): seed each pool with the best 1..poly_terms-term polynomials
  # of degree <= 3, with and without an intercept (polynomial.py).
  poly_terms: int = 0
  # True: the seeds are answer candidates only, like the baselines (never in the pool, never
  # re-encoded as parents), so they cannot pull a non-polynomial search their way.
  poly_floor: bool = False
  # Our addition (0 = the paper): seed each pool with the best 1..sep_terms-term sums of
  # products of two one-variable functions (cos(x)/tan(y), x - cos(y)/x; separable.py).
  sep_terms: int = 0
  # Our addition (False = the paper): seed each pool with power laws c * x_1^a_1 * ... (whole or
  # half exponents, fitted on the logs; q v B / p, n kb T / V; power_law.py), and with sums of
  # two of them of y, y^2, 1/y or 1/y^2 (m0 / sqrt(1 - v^2/c^2); power_sums.py).
  power_seeds: bool = False
  # Our addition (False = the paper): seed each pool with power laws times short sums,
  # M(x) * S(x) (G m1 m2 (1/r2 - 1/r1), n kb T ln(V2/V1); factored.py).
  factor_seeds: bool = False
  # Our addition (False = the paper): seed each pool with separable sums whose functions take
  # products and ratios of variables, alone and times power laws (n0 exp(-m g x / (kb T)),
  # 2 U (1 - cos(k d)); composite.py).
  composite_seeds: bool = False
  # Our addition (False = the paper): seed each pool with sqrt(S), 1/S and exp(S) for seeds S
  # of y^2, 1/y and log|y| (the 2-D distance, the thin lens; transformed.py).
  transform_seeds: bool = False
  # Our addition (False = the paper): seed each pool with A sin(c u + phi) + d and its sin and
  # cos forms, the frequency c scanned, for u a variable or a product or ratio of two or
  # three (2.5 sin(2.3 t), sin^2(2 pi E t / h); waves.py).
  wave_seeds: bool = False
  # Our addition (0 = the paper): once per trial, the best sum of up to long_terms separable
  # or polynomial terms (more than the model's 64 tokens hold) replaces the rounds' answer
  # when its validation R2 pays for its extra nodes at alpha per node (long_sums.py).
  long_terms: int = 0
  # Our addition (False = the paper): the trial's answer steps to simpler variants (a summand
  # dropped, constants fixed at an integer or a small half, a function the rows see straight
  # replaced by its line; the rest refitted) while the information criterion (BIC) on its
  # training rows falls: under noise 0.948 d1 d2 / (0.949 d1 n + 0.936 d2 - 0.0012 d1 d2)
  # becomes d1 d2 / (d1 n + d2) (parsimony.py). Last, after the final refit, the answer is
  # written in its fewest nodes among forms with its values on the rows (rewrite.py).
  parsimony: bool = False
  # Our addition (False = the paper): the answer's free constants are fitted once more on the
  # training and validation rows together, once the validation rows have chosen it
  # (final_refit.py).
  final_refit: bool = False
  probe_points: int = 16384  # pole guard: points between training rows (score.bounded); 0 = off
  workers: int = 1  # rounds run concurrently in this many processes (1: in-process)
  # SymPy simplification (most of a CPU search) spread over this many helper processes
  # besides the round's own; 0 = in-process. The complexities are the same either way.
  simplify_helpers: int = 0
  # Our addition (False = the paper): a batch's SymPy runs in the helpers while the next
  # batch is re-encoded, decoded and fitted, so parents come from the pool one batch behind.
  # Needs simplify_helpers >= 1.
  overlap: bool = False
  # Our deviation ('full' = the paper): the complexity a search ranks candidates by is SymPy's
  # simplification without its trigonometric passes (a third of the time, 97% of counts
  # equal); the complexity of every answer and equation-table entry is the full one.
  simplify: str = "light"

  def __post_init__(self):
    for f in dataclasses.fields(self):  # (annotations are strings: `from __future__`)
      if f.type == "bool" and not isinstance(getattr(self, f.name), bool):
        # "no" would be truthy and switch the setting on
        raise ValueError(f"{f.name} must be True or False, got {getattr(self, f.name)!r}")
      if f.type == "float" and not math.isfinite(getattr(self, f.name)):
        raise ValueError(f"{f.name} must be a finite number, got {getattr(self, f.name)}")
    for name in ("rounds", "iterations", "pool_size", "n_init", "n_new", "parents",
                 "refresh_every", "fit_rows", "score_rows", "n_scatter", "decode_period",
                 "cmaes_popsize", "workers", "lm_steps", "lm_restarts"):
      if getattr(self, name) < 1:
        raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
    for name in ("n_refresh", "n_grad", "lbfgs_first", "lbfgs_last", "probe_points",
                 "simplify_helpers", "lm_sub_rows", "poly_terms", "sep_terms", "grad_points",
                 "long_terms"):
      if getattr(self, name) < 0:
        raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
    if self.overlap and not self.simplify_helpers:
      raise ValueError("overlap needs simplify_helpers >= 1 (the helper processes it overlaps with)")
    if self.simplify not in SIMPLIFY:
      raise ValueError(f"simplify must be one of {', '.join(SIMPLIFY)}, got {self.simplify!r}")
    if self.fitter not in FITTERS:
      raise ValueError(f"fitter must be one of {', '.join(FITTERS)}, got {self.fitter!r}")
    if not self.latent_noise >= 0:
      raise ValueError(f"latent_noise must be >= 0, got {self.latent_noise}")
    if not self.temperature > 0:
      raise ValueError(f"temperature must be > 0, got {self.temperature}")

  def lbfgs_budget(self, round_index: int) -> int:
    """L-BFGS-B iterations for a round: lbfgs_first -> lbfgs_last linearly over the rounds."""
    if self.rounds == 1:
      return self.lbfgs_first
    frac = round_index / (self.rounds - 1)
    return int(round(self.lbfgs_first + frac * (self.lbfgs_last - self.lbfgs_first)))

  def decode_budget(self) -> int:
    """Decodes per round of the iterative mode (what CMA-ES is matched to): n_init, n_new per
    iteration (the last batch may hold fewer than `parents`), n_refresh per scatter refresh."""
    batches = -(-self.iterations // self.parents)
    return (self.n_init + self.iterations * self.n_new
            + (batches // self.refresh_every) * self.n_refresh)


PRESETS: dict[str, SearchConfig] = {
    # Table 10, with rounds 8-way parallel as in App. J (a GPU node; --workers=1 on a laptop),
    # plus the polynomial seeds: Strogatz seed 0 on the CPU 0.725 -> 0.941 at complexity
    # 10.7 -> 11.6 (BUILD_NOTES, "The `paper` preset on the CPU"), the separable and the
    # power-law, the factored, the composite and the transformed-target seeds and the long
    # sums; --poly_terms=0 --sep_terms=0 --nopower_seeds --nofactor_seeds --nocomposite_seeds
    # --notransform_seeds --nowave_seeds --long_terms=0 --noparsimony --nofinal_refit is the
    # paper's search
    # (with --latent_noise=0 where the model's meta.json sets more: the shipped small's 3).
    "paper": SearchConfig(workers=8, poly_terms=3, sep_terms=2, power_seeds=True,
                          factor_seeds=True, composite_seeds=True, transform_seeds=True,
                          wave_seeds=True, long_terms=8, parsimony=True, final_refit=True),
    # A 2-core CPU in well under a minute: 2 of Table 10's rounds (T = 200 iterations each),
    # lighter constant fits. T = 50 (before 2026-11-25) was 1.8x faster and 0.07 worse on
    # Strogatz (BUILD_NOTES, "The fast preset's budget"). Polynomial seeds: Strogatz 0.774 ->
    # 0.891 over 3 trials (BUILD_NOTES, "Polynomial seeds"). Separable seeds: 0.901 -> 0.990
    # at the same complexity over 2 trials (BUILD_NOTES, "Separable seeds"). Power-law seeds:
    # BUILD_NOTES, "Power-law seeds". Factored seeds: BUILD_NOTES, "Factored seeds".
    # Composite seeds: BUILD_NOTES, "Composite seeds". Long sums: BUILD_NOTES, "Long sums"
    # (8 terms: "Long sums of 8 terms").
    # Transformed-target seeds: BUILD_NOTES, "Transformed-target seeds". Wave seeds:
    # BUILD_NOTES, "Wave seeds". Parsimony: BUILD_NOTES, "The answer's parsimony". Final
    # refit: BUILD_NOTES, "The answer refitted on every training row".
    "fast": SearchConfig(rounds=2, iterations=200, lbfgs_first=50, lbfgs_last=100,
                         fit_rows=500, score_rows=1000, simplify_helpers=1, poly_terms=3,
                         sep_terms=2, power_seeds=True, factor_seeds=True,
                         composite_seeds=True, transform_seeds=True, wave_seeds=True,
                         long_terms=8, parsimony=True, final_refit=True),
}


def get_search_config(preset: str, model_defaults: dict | None = None,
                      **overrides) -> SearchConfig:
  """A preset, then the model's own search defaults (its meta.json's "search_defaults",
  weights.search_defaults), then the caller's overrides; overrides that are None keep the
  value before them."""
  if preset not in PRESETS:
    raise ValueError(f"unknown preset {preset!r}; valid presets: {', '.join(PRESETS)}")
  cfg = dataclasses.replace(PRESETS[preset], **(model_defaults or {}))
  return dataclasses.replace(cfg, **{k: v for k, v in overrides.items() if v is not None})


# What a model may recommend for its own search: properties of how it decodes, not budget.
MODEL_SEARCH_FIELDS = ("latent_noise", "temperature")
