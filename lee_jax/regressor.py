"""`LEERegressor`: the scikit-learn estimator API over the latent search (usable in SRBench).

    from lee_jax import LEERegressor
    est = LEERegressor(preset="fast").fit(X, y)
    est.predict(X_new); est.sympy(); est.latex(); est.equations_; est.get_best()
    est.predict(X_new, index=0)      # any equation of the Pareto table (0: the simplest)
    est.plot(X, y, "fit.png")        # the table, the fit and the search in one figure
    est.latex_table()                # the Pareto table as a LaTeX tabular (booktabs)
    est.fit(X, y, sample_weight=w)   # weighted squared error in the fits, weighted R2
    f = est.jax(); f["callable"](X_new, f["parameters"])   # a jit/grad-able JAX function

fit() holds out `val_fraction` of the rows as the validation fold (round selection and the
gradient fallback) and searches on the rest. The estimator stores only plain values (the
model is loaded and compiled once per process and cached), so it clones and pickles.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import sys
import warnings

import numpy as np

from lee_jax import configs
from lee_jax import datasets
from lee_jax import engine as engine_lib
from lee_jax import evaluate
from lee_jax import expr as E
from lee_jax import progress as progress_lib
from lee_jax import score
from lee_jax import search
from lee_jax import solution
from lee_jax import sympy_form
from lee_jax import trial as trial_lib


# Rows the search fits constants on after the validation fold is held out: a smaller
# val_fraction than this allows would search on one or two points.
MIN_SEARCH_ROWS = 5
# fit searches a seeded sample of this many rows when given more: SRBench's training cap,
# as the CLI's (datasets.split). The search fits constants on 500 rows and scores on 1,000;
# all of a million rows only cost its validation scoring time and memory (3.3 GB).
MAX_ROWS = 10_000
# Other tools' names for this estimator's parameters (PySR, scikit-learn): an unknown keyword
# argument that is one of these is pointed to ours.
ALIASES = {"random_state": "seed", "niterations": "iterations", "timeout_in_seconds": "max_time",
           "population_size": "pool_size", "procs": "workers", "n_jobs": "workers",
           "verbosity": "verbose", "model_path": "checkpoint", "weights": "sample_weight (in fit)"}


def unknown_parameter(name: str, valid: list[str]) -> str:
  """The message for a keyword argument LEERegressor does not take, naming the likely one."""
  close = ([ALIASES[name]] if name in ALIASES else []) + [
      c for c in difflib.get_close_matches(name, valid, n=3, cutoff=0.6) if c != ALIASES.get(name)]
  hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
  return f"invalid parameter {name!r} for LEERegressor{hint} (valid: {', '.join(valid)})"


class NotFittedError(ValueError, AttributeError):
  """predict/sympy/latex before fit (same bases as sklearn's NotFittedError; raised as a
  subclass of sklearn's own where sklearn is loaded: `_not_fitted`)."""


def _not_fitted(message: str) -> NotFittedError:
  """Where sklearn is loaded (the only place its NotFittedError can be caught), an error
  that is also that class, so `except sklearn.exceptions.NotFittedError` and sklearn's
  checks see it; importing sklearn for this alone would cost ~1 s at every start."""
  sk = sys.modules.get("sklearn.exceptions")
  return (NotFittedError if sk is None else _with_sklearn_base(sk.NotFittedError))(message)


@functools.cache
def _with_sklearn_base(base: type) -> type:
  return type("NotFittedError", (NotFittedError, base), {"__module__": __name__})


class LEERegressor:
  """Symbolic regression with LEE.

  Args:
    checkpoint: trained model directory (None: the one shipped with the package).
    preset: 'paper' (Table 10 plus the polynomial, separable, power-law, factored,
      composite, transformed-target and wave seeds and long sums) or 'fast' (a small budget
      for a 2-core CPU).
    mode: 'combined', 'iterative', 'gradient', 'oneshot' or 'cmaes'.
    rounds, iterations, workers, pool_size, fitter, latent_noise, poly_terms, poly_floor,
      sep_terms, power_seeds, factor_seeds, composite_seeds, transform_seeds, wave_seeds,
      long_terms, parsimony, final_refit,
      simplify: override
      the preset
      when not None (fitter: 'scipy' or 'jax';
      latent_noise s: sampled decodes from mu + s * std * eps, 0 = the paper; poly_terms T:
      the best 1..T-term polynomials of degree <= 3 join each round's pool, 0 = none, the
      paper; poly_floor: those seeds are answer candidates only, never parents; sep_terms
      T: the best 1..T-term sums of products of two one-variable functions join each
      round's pool, 0 = none, the paper; power_seeds: power laws c * x1^a1 * x2^a2 ...
      (whole or half exponents), and sums of two of them of y, y^2, 1/y or 1/y^2
      (m0 / sqrt(1 - v^2/c^2)), join each round's pool, False = the paper; factor_seeds:
      power laws times short sums, M(x) * S(x), join it, False = the paper;
      composite_seeds: sums of functions of products and ratios of variables, alone and
      times power laws (n0 exp(-m g x / (kb T))), join it, False = the paper;
      transform_seeds: sqrt(S), 1/S and exp(S) for seeds S of y^2, 1/y and log|y|
      (sqrt((x2-x1)^2 + (y2-y1)^2)) join it, False = the paper; wave_seeds: A sin(c u +
      phi) + d and its sin and cos forms, the frequency c scanned, u a variable or a product
      or ratio of two or three (2.5 sin(2.3 t)), join it, False = the paper; long_terms
      T: the best sum of up to T such terms or monomials answers instead when its
      validation R2 pays for its extra nodes, 0 = never, the paper; parsimony: the answer
      steps to simpler variants (a summand dropped, constants fixed at an integer or a
      small half, a function the rows see straight replaced by its line) while BIC on its
      training rows falls, and is written in its fewest nodes (the same values on the rows:
      sqrt(a) sqrt(b) as sqrt(a b)), False = the paper; final_refit: once the validation rows have
      chosen the answer, its free constants are fitted again on the training and
      validation rows together, False = the paper (the training rows' fit); simplify:
      'light' ranks candidates by SymPy's simplify without its trig passes, 'full' as the
      paper;
      reported complexities are always the full one). With workers > 1 the worker
      processes stay for the next fit with the same model (lee_jax.trial.shutdown_workers
      ends them); they are spawned and re-run the calling script, so a script must call
      fit under `if __name__ == "__main__":` (else fit raises
      lee_jax.trial.WorkerStartError).
    max_time: seconds for the search (None: no limit); past it the search answers from what it
      has found (the first round's initial pool at least), so results depend on machine speed.
    val_fraction: share of the rows held out for validation.
    select_k_best: keep this many columns of X (1-10; PySR's name), chosen by how well they
      predict y together (lee_jax/feature_selection.py); needed when X has more than 10.
      predict() still takes every column; `selected_features_` lists the kept ones.
    warm_start: refit starts from the previous fit's Pareto formulas (PySR's warm_start):
      they join every round's initial pool, refitted to the new data, and compete there.
    seed: split and search seed.
    verbose: show search progress on stderr.
  """

  def __init__(self, checkpoint: str | None = None, preset: str = "fast", mode: str = "combined",
               rounds: int | None = None, iterations: int | None = None,
               workers: int | None = None, pool_size: int | None = None,
               fitter: str | None = None, latent_noise: float | None = None,
               poly_terms: int | None = None, poly_floor: bool | None = None,
               sep_terms: int | None = None, power_seeds: bool | None = None,
               factor_seeds: bool | None = None, composite_seeds: bool | None = None,
               transform_seeds: bool | None = None, wave_seeds: bool | None = None,
               long_terms: int | None = None, parsimony: bool | None = None,
               final_refit: bool | None = None, simplify: str | None = None,
               max_time: float | None = None, val_fraction: float = 0.2,
               select_k_best: int | None = None, warm_start: bool = False, seed: int = 0,
               verbose: bool = False, **unknown):
    # PySR's way: a misspelt or other tool's keyword gets its likely name (Python's own
    # TypeError names only the argument); scikit-learn ignores **kwargs in get_params.
    if unknown:
      raise TypeError(unknown_parameter(next(iter(unknown)), self._param_names()))
    self.checkpoint = checkpoint
    self.preset = preset
    self.mode = mode
    self.rounds = rounds
    self.iterations = iterations
    self.workers = workers
    self.pool_size = pool_size
    self.fitter = fitter
    self.latent_noise = latent_noise
    self.poly_terms = poly_terms
    self.poly_floor = poly_floor
    self.sep_terms = sep_terms
    self.power_seeds = power_seeds
    self.factor_seeds = factor_seeds
    self.composite_seeds = composite_seeds
    self.transform_seeds = transform_seeds
    self.wave_seeds = wave_seeds
    self.long_terms = long_terms
    self.parsimony = parsimony
    self.final_refit = final_refit
    self.simplify = simplify
    self.max_time = max_time
    self.val_fraction = val_fraction
    self.select_k_best = select_k_best
    self.warm_start = warm_start
    self.seed = seed
    self.verbose = verbose

  @property
  def random_state(self) -> int:
    """`seed` under scikit-learn's name: SRBench's harness seeds each trial with
    `if hasattr(est, 'random_state'): est.random_state = seed`, which reached nothing."""
    return self.seed

  @random_state.setter
  def random_state(self, value: int) -> None:
    self.seed = value

  def __setstate__(self, state: dict) -> None:
    # An estimator pickled before select_k_best existed read every column.
    self.__dict__.update(state)
    # parameters added since:
    for name in ("select_k_best", "poly_terms", "poly_floor", "sep_terms", "power_seeds",
                 "factor_seeds", "composite_seeds", "transform_seeds", "wave_seeds", "long_terms",
                 "parsimony", "final_refit", "simplify"):
      self.__dict__.setdefault(name, None)
    if "n_features_in_" in state and "selected_features_" not in state:
      self.selected_features_ = list(range(state["n_features_in_"]))

  # --- scikit-learn parameter protocol (no sklearn import needed) ----------------------------

  _estimator_type = "regressor"  # what scikit-learn < 1.6 reads (is_regressor, scoring)

  def __sklearn_tags__(self):
    """scikit-learn >= 1.6 asks every estimator for its tags (pipelines, cross-validation,
    MultiOutputRegressor); called only by sklearn, so sklearn is imported here only."""
    from sklearn.utils import InputTags, RegressorTags, Tags, TargetTags
    return Tags(estimator_type="regressor", target_tags=TargetTags(required=True),
                regressor_tags=RegressorTags(), input_tags=InputTags(one_d_array=True))

  @classmethod
  def _param_names(cls) -> list[str]:
    return [n for n, p in inspect.signature(cls.__init__).parameters.items()
            if n != "self" and p.kind != p.VAR_KEYWORD]

  def get_params(self, deep: bool = True) -> dict:
    del deep  # no nested estimators
    return {p: getattr(self, p) for p in self._param_names()}

  def set_params(self, **params) -> "LEERegressor":
    valid = self._param_names()
    for k, v in params.items():
      if k not in valid:
        raise ValueError(unknown_parameter(k, valid))
      setattr(self, k, v)
    return self

  def __repr__(self) -> str:
    defaults = {p.name: p.default for p in inspect.signature(type(self).__init__).parameters.values()
                if p.name != "self"}
    changed = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items() if v != defaults[k])
    return f"LEERegressor({changed})"

  # --- fitting ----------------------------------------------------------------------------

  def search_config(self) -> configs.SearchConfig:
    """The preset, the model's own search defaults (its meta.json), then this estimator's
    overrides."""
    from lee_jax import weights  # deferred: it imports Orbax through checkpoints
    if self.mode not in configs.MODES:
      raise ValueError(f"unknown mode {self.mode!r}; valid modes: {', '.join(configs.MODES)}")
    return configs.get_search_config(self.preset, weights.search_defaults(self.checkpoint),
                                     rounds=self.rounds, iterations=self.iterations,
                                     workers=self.workers, pool_size=self.pool_size,
                                     fitter=self.fitter, latent_noise=self.latent_noise,
                                     poly_terms=self.poly_terms, poly_floor=self.poly_floor,
                                     sep_terms=self.sep_terms, power_seeds=self.power_seeds,
                                     factor_seeds=self.factor_seeds,
                                     composite_seeds=self.composite_seeds,
                                     transform_seeds=self.transform_seeds,
                                     wave_seeds=self.wave_seeds,
                                     long_terms=self.long_terms,
                                     parsimony=self.parsimony,
                                     final_refit=self.final_refit,
                                     simplify=self.simplify)

  def fit(self, X, y, sample_weight=None) -> "LEERegressor":
    """Search for a formula of y in the columns of X. sample_weight (one non-negative weight
    per row): the constant fits minimise the weighted squared error and the search ranks
    by weighted R2; rows of weight 0 are left out. Of more than MAX_ROWS = 10,000 rows the
    search reads a seeded sample of 10,000 (SRBench's cap, as the command line's)."""
    # numpy's own messages for a bad seed or count name none of this
    if not (datasets.is_integer(self.seed) and 0 <= self.seed < 2**32):
      raise ValueError(f"seed must be an integer in [0, 2**32), got {self.seed!r}")
    for name in ("rounds", "iterations", "workers", "pool_size", "poly_terms", "sep_terms",
                 "long_terms"):
      value = getattr(self, name)
      if value is not None and not datasets.is_integer(value):
        raise ValueError(f"{name} must be an integer (or None for the preset's), got {value!r}")
    for name in ("latent_noise", "max_time", "val_fraction"):
      value = getattr(self, name)
      if (value is not None or name == "val_fraction") and not datasets.is_number(value):
        raise ValueError(f"{name} must be a number, got {value!r}")
    # ("yes" would be truthy; the search's own switches are checked so by SearchConfig.
    # verbose takes sklearn's integers too, and PySR's `verbosity` is an alias.)
    if not isinstance(self.warm_start, (bool, np.bool_)):
      raise ValueError(f"warm_start must be True or False, got {self.warm_start!r}")
    if not (isinstance(self.verbose, (bool, np.bool_)) or datasets.is_integer(self.verbose)):
      raise ValueError(f"verbose must be True, False or an integer, got {self.verbose!r}")
    trial_lib.check_max_time(self.max_time)
    if not 0 < self.val_fraction < 1:
      raise ValueError(f"val_fraction must be in (0, 1), got {self.val_fraction}")
    if _is_sparse(X):
      raise ValueError("X is a sparse matrix; LEE reads dense arrays (pass X.toarray(): at "
                       "most 10 columns)")
    names = getattr(X, "columns", None)
    names = [str(c) for c in names] if names is not None else None
    # (rows of weight 0 do not choose the columns either)
    ds = datasets.from_arrays(X, y, names, name="LEERegressor.fit input",
                              select_k_best=self.select_k_best, seed=self.seed,
                              weights=sample_weight, weights_name="sample_weight")
    all_names = ds.input_names or ds.feature_names
    selected = list(range(len(all_names))) if ds.selected is None else list(ds.selected)
    cfg = self.search_config()
    X, y, w = datasets.weighted_rows(ds.X, ds.y, ds.weights)
    if len(y) > MAX_ROWS:
      keep = np.sort(np.random.default_rng([self.seed, 1]).choice(len(y), MAX_ROWS, replace=False))
      X, y, w = X[keep], y[keep], None if w is None else w[keep]
    perm = np.random.default_rng(self.seed).permutation(len(y))
    n_val = max(1, int(round(self.val_fraction * len(y))))
    if len(y) - n_val < MIN_SEARCH_ROWS:
      raise ValueError(f"val_fraction={self.val_fraction} holds out {n_val} of {len(y)} rows, "
                       f"leaving {len(y) - n_val} to search on; at least {MIN_SEARCH_ROWS} "
                       "are needed (lower val_fraction)")
    val, train = perm[:n_val], np.sort(perm[n_val:])
    warm = (tuple(self.equation_nodes_) if self.warm_start and hasattr(self, "equation_nodes_")
            and self.n_features_in_ == len(all_names) and self.selected_features_ == selected
            else ())
    data = search.SearchData(X[train], y[train], X[val], y[val],
                             None if w is None else w[train], None if w is None else w[val],
                             init_nodes=warm)
    engine, bundle = engine_lib.load(self.checkpoint, cfg.constrain)
    bar = (progress_lib.SearchProgress(cfg.rounds, max_time=self.max_time) if self.verbose
           else None)
    result = trial_lib.run_trial(engine, data, cfg, self.mode, self.seed,
                                 progress=bar, bundle=bundle, max_time=self.max_time)
    if bar is not None:
      bar.close(result.timed_out)
    if result.winner is None:  # (the fitted attributes stay those of the last fit)
      raise RuntimeError(f"no valid expression found (failures: {result.failures()}); try "
                         "more iterations or another checkpoint")
    self.history_ = [list(r.history) for r in result.rounds]  # per round, for plot()
    self.failures_ = result.failures()
    self.wall_time_ = result.wall_time
    self.timed_out_ = result.timed_out
    self.feature_names_in_ = np.asarray(all_names, dtype=object)
    self.n_features_in_ = len(all_names)
    self.fit_columns_ = names  # a DataFrame's column names (None for an array): see _rows
    self.selected_features_ = selected  # the columns of X the formulas read, as x0, x1, ...
    self.best_node_ = result.winner.node  # full-precision constants
    self.best_prefix_ = " ".join(E.to_prefix(result.winner.node))
    self.complexity_ = result.winner.complexity
    front = trial_lib.equation_table(result)
    self.equation_nodes_ = [c.node for c in front]  # full precision, for predict(index=...)
    columns = trial_lib.pysr_columns([c.r2_val for c in front], [c.complexity for c in front],
                                     data.y_val, data.w_val)
    names = E.formula_names(ds.feature_names)
    simple = [sympy_form.simplified(c.node, names) for c in front]
    self.equations_ = [
        {"complexity": c.complexity, "r2_val": c.r2_val, "loss": loss, "score": gain,
         "prefix": " ".join(E.to_prefix(c.node)),
         "expression": str(sympy_form.rounded(s)),  # to read: 4 significant figures
         "equation": str(sympy_form.rounded(s, None))}  # full precision (PySR's column name)
        for c, s, (loss, gain) in zip(front, simple, columns)]
    if not result.winner.r2_val > 0:  # (the mean itself is always a candidate)
      warnings.warn(
          f"no formula beats the mean of y on the validation rows (the answer's R2 there: "
          f"{result.winner.r2_val:.3g}): the rows may hold no relation the search can write, "
          "or a few outliers that rule the squared error (sample_weight=0 leaves a row out)",
          UserWarning, stacklevel=2)
    return self

  # --- using the result -------------------------------------------------------------------

  def _node(self, index: int | None = None) -> E.Node:
    """The best expression, or equations_[index] (the Pareto table, simplest first)."""
    if not hasattr(self, "best_node_"):
      raise _not_fitted("this LEERegressor is not fitted yet; call fit(X, y) first")
    if index is None:
      return self.best_node_
    n = len(self.equation_nodes_)
    if not datasets.is_integer(index) or not -n <= index < n:  # (True is no index)
      raise IndexError(f"index {index!r} is not one of the {n} equations in equations_ "
                       f"(0..{n - 1}, or None for the best)")
    return self.equation_nodes_[index]

  def _answer_rows(self) -> list[bool]:
    """Which rows of equations_ are the answer: its own node (prefixes round constants, so a
    twin reads the same); an estimator pickled before the table always held the answer falls
    back to the prefix."""
    self._node()  # NotFittedError before fit
    answer = [n is self.best_node_ for n in self.equation_nodes_]
    return answer if any(answer) else [e["prefix"] == self.best_prefix_ for e in self.equations_]

  def get_best(self) -> dict | None:
    """The answer's row of equations_ (PySR's get_best(): the formula predict() uses)."""
    answer = self._answer_rows()  # (NotFittedError before fit)
    return next((e for e, a in zip(self.equations_, answer) if a), None)

  def predict(self, X, index: int | None = None) -> np.ndarray:
    """Predictions of the best expression, or of equations_[index]."""
    node = self._node(index)
    y = trial_lib.predict(node, self._rows(X)[:, self.selected_features_])
    bad = ~np.isfinite(y)
    if bad.any():  # (sqrt or log of a negative, a pole: the rows left the formula's domain)
      warnings.warn(f"the formula is undefined or infinite at {int(bad.sum())} of {len(y)} "
                    f"rows (the first: row {int(np.argmax(bad))}); predict returns NaN there",
                    RuntimeWarning, stacklevel=2)
    return y

  def _rows(self, X) -> np.ndarray:
    """X as float64 [n_rows, n_features_in_], finite; a DataFrame's columns must be those
    fit saw, in that order (columns are read by position: another order would be a silently
    wrong prediction, so this is an error, as in scikit-learn)."""
    columns = getattr(X, "columns", None)
    fitted = getattr(self, "fit_columns_", None)
    if columns is not None and fitted is not None:
      columns = [str(c) for c in columns]
      if columns != fitted:
        if sorted(columns) == sorted(fitted):
          raise ValueError(f"X's columns are in another order than at fit ({', '.join(fitted)});"
                           f" pass X[{fitted!r}]")
        missing = [c for c in fitted if c not in columns]
        extra = [c for c in columns if c not in fitted]
        raise ValueError("X's columns are not those fit saw: " + "; ".join(
            part for part in (missing and f"missing {', '.join(missing)}",
                              extra and f"unexpected {', '.join(extra)}") if part))
    try:
      X = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as e:
      raise ValueError(f"X must be numeric ({str(e).splitlines()[0]})") from None
    if X.ndim == 1 and self.n_features_in_ == 1:
      X = X[:, None]  # one feature: a flat array is its column
    elif X.ndim == 1:
      raise ValueError(f"X is 1-D (shape {X.shape}); pass [n_rows, {self.n_features_in_}] "
                       "(one row: X.reshape(1, -1))")
    if X.ndim != 2 or X.shape[1] != self.n_features_in_:
      raise ValueError(f"X has shape {X.shape}; expected [n_rows, {self.n_features_in_}]")
    bad = ~np.isfinite(X).all(axis=1)
    if bad.any():
      raise ValueError(f"X holds NaN or inf in {int(bad.sum())} row(s) (the first: row "
                       f"{int(np.argmax(bad))}); the formula needs finite inputs")
    return X

  def score(self, X, y, sample_weight=None) -> float:
    """R2 on (X, y) (weighted by sample_weight if given), as sklearn's r2_score: a constant y
    scores 1 when predicted exactly and 0 otherwise; a prediction that is not finite -inf."""
    y = _target(y)
    y_hat = self.predict(X)
    if y.shape != y_hat.shape:
      raise ValueError(f"y has {len(y)} values; X has {len(y_hat)} rows")
    w = None if sample_weight is None else datasets.check_weights(sample_weight, len(y),
                                                                  "sample_weight")
    counted = y if w is None else y[w > 0]
    if np.all(counted == counted[0]) and np.all(np.isfinite(y_hat)):  # R2 is 0/0 or x/0
      return float(np.array_equal(y_hat if w is None else y_hat[w > 0], counted))
    return score.r2(y, y_hat, w)

  def sympy(self, index: int | None = None, digits: int | None = 4):
    """The best expression (or equations_[index]) simplified in SymPy over the feature names,
    constants at `digits` significant figures (None: full precision)."""
    node = self._node(index)  # NotFittedError before fit
    if digits is not None and not (datasets.is_integer(digits) and digits >= 1):
      raise ValueError(f"digits must be an integer >= 1 (or None: full precision), got {digits!r}")
    names = E.formula_names([self.feature_names_in_[i] for i in self.selected_features_])
    return sympy_form.sympy_of(node, names, digits)

  def latex(self, index: int | None = None) -> str:
    """sympy()'s LaTeX, column names of several letters upright (\\mathrm{mass})."""
    return trial_lib.latex_of(self.sympy(index))

  def latex_table(self, precision: int = 3) -> str:
    """The Pareto table (equations_) as a LaTeX tabular, as PySR's latex_table(): one row per
    equation, simplest first, constants at `precision` significant figures; the answer's
    row in bold."""
    answer = self._answer_rows()  # (NotFittedError before fit)
    rows = []
    for i, e in enumerate(self.equations_):
      expr = trial_lib.latex_of(self.sympy(i, digits=precision))
      r2 = "-" if not np.isfinite(e["r2_val"]) else f"{e['r2_val']:.{precision + 1}f}"
      cells = [f"${expr}$", str(e["complexity"]), r2]
      if answer[i]:
        cells = [f"$\\boldsymbol{{{expr}}}$", f"\\textbf{{{cells[1]}}}", f"\\textbf{{{r2}}}"]
      rows.append(" & ".join(cells) + " \\\\")
    return "\n".join(["\\begin{tabular}{@{}lrr@{}}", "\\toprule",
                      "Equation & Complexity & Validation $R^2$ \\\\", "\\midrule", *rows,
                      "\\bottomrule", "\\end{tabular}"])

  def plot(self, X, y, path=None, index: int | None = None):
    """A figure of the fit (a matplotlib Figure; also written to `path` if given, .png, .pdf
    or .svg, replacing a file there): the equation table with the chosen formula starred,
    that formula against (X, y), and each round's best train R2 over the search."""
    from lee_jax import plot_result
    y = _target(y)
    y_hat = self.predict(X, index)  # checks X's shape
    if y.shape != y_hat.shape:
      raise ValueError(f"y has {len(y)} values; X has {len(y_hat)} rows")
    X = np.asarray(X, np.float64).reshape(len(y), -1)
    c = self.complexity_ if index is None else self.equations_[index]["complexity"]
    fig = plot_result.figure(
        self.equations_, c, lambda Xq: self.predict(Xq, index), {"data": (X, y)},
        list(self.feature_names_in_), self.history_,
        title=f"{self.sympy(index)}  (R2 {score.r2(y, y_hat):.4f})")
    if path is not None:
      plot_result.save(fig, plot_result.check_path(path, overwrite=True))
    return fig

  def symbolic_solution(self, law: str, index: int | None = None) -> dict:
    """SRBench's verdict on the best expression (or equations_[index]) against a known law
    written over the columns' names (or their names as sympy() prints them): a solution
    when the two differ by a constant or their ratio is one, floats rounded to 3 decimals
    (`lee_jax/solution.py`). {'solution': bool, 'reason', 'difference', 'ratio'}."""
    node = self._node(index)  # NotFittedError before fit
    names = [str(n) for n in self.feature_names_in_]
    truth = solution.law(law, names)  # a law that does not parse: ValueError naming it
    return solution.of_tree(node, [names[i] for i in self.selected_features_], truth).as_dict()

  def jax(self, index: int | None = None) -> dict:
    """{'callable': f, 'parameters': p}: f(X, p) -> y in JAX (jit-, grad-, vmap-able), p the
    fitted constants in prefix order, as PySR's jax(). It computes in JAX's default float32
    (predict in float64): to float32 precision only, which a large offset makes coarse
    (x - 1e6 is off by ~0.03; sin(x - 1e7) by 0.6). With
    `jax.config.update("jax_enable_x64", True)` before jax() is called, p and f are float64
    and agree with predict where finite."""
    f, params = evaluate.jax_function(self._node(index))
    if self.selected_features_ != list(range(self.n_features_in_)):
      cols, of_kept = np.asarray(self.selected_features_), f
      f = lambda X, p: of_kept(X[:, cols], p)  # noqa: E731  (X with every input column)
    return {"callable": f, "parameters": params}


def _target(y) -> np.ndarray:
  """y for score/plot as float64 [n]: numbers, finite, at least one (a column (n, 1) is read
  as its values, as fit reads it)."""
  try:
    y = np.asarray(y, np.float64)
  except (TypeError, ValueError) as e:
    raise ValueError(f"y must be numeric ({str(e).splitlines()[0]})") from None
  if y.ndim == 2 and y.shape[1] == 1:
    y = y[:, 0]
  if y.ndim != 1 or len(y) == 0:
    raise ValueError(f"y has shape {y.shape}; expected [n_rows] with n_rows >= 1")
  if not np.all(np.isfinite(y)):
    raise ValueError(f"y holds NaN or inf in {int((~np.isfinite(y)).sum())} value(s)")
  return y


def _is_sparse(X) -> bool:
  # scipy.sparse matrices and arrays, without importing scipy for the check
  return callable(getattr(X, "toarray", None)) and hasattr(X, "nnz")

