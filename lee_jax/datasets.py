"""SRBench datasets (Strogatz, Feynman, PMLB black-box), user tables, and the split protocol.

Shipped data lives in `lee_jax/data/` (see its README.md for provenance and licences), in
PMLB's layout `pmlb/<name>/<name>.tsv.gz` (tab-separated, last column `target`). Feynman rows
are not shipped: PMLB stores them in Git LFS, so they are regenerated from the formula and
variable ranges in PMLB's metadata, with a fixed seed per dataset (same distribution as
PMLB's rows, not the same rows). A `data_dir` that holds a PMLB checkout takes precedence.

  python -m lee_jax.datasets --list
  python -m lee_jax.datasets --show strogatz_shearflow1
  python -m lee_jax.datasets --show my.csv --target y --features a,b
"""

from __future__ import annotations

import csv
import dataclasses
import difflib
import functools
import gzip
import hashlib
import importlib.resources
import io
import keyword
import math
import numbers
import os
import pathlib
import re
import sys
import zlib
from typing import Sequence

from absl import flags
import numpy as np

from lee_jax import cli
from lee_jax import expr as expr_lib
from lee_jax import feature_selection
from lee_jax import vocab

GROUPS = ("strogatz", "feynman", "blackbox", "user")
FEYNMAN_ROWS = 100_000
MIN_ROWS = 10
# The search scores in float32: squares of values beyond this, summed over 10k rows, would
# overflow. Larger columns are an error that asks for a rescale rather than a silent NaN.
MAX_ABS = 1e15
# ... and a target this small is near float32's smallest normal numbers (1.2e-38), which XLA
# flushes to 0; below it, the same rescale is asked for (targets of 1e-20, joules, are fine).
MIN_TARGET = 1e-30
# ... and a target whose spread is below this share of its size is one float32 cannot tell
# apart (1e8 + 2 sin(x) rounds to multiples of 8): the search would score noise.
MIN_SPREAD = 1e-6
MAX_FEATURES = vocab.MAX_VARIABLES
_MISSING = {"", "na", "n/a", "nan", "null", "none", "?"}


class DataError(ValueError):
  """Bad dataset name or table; the message is one line, meant for the user."""


@dataclasses.dataclass(frozen=True)
class Dataset:
  name: str
  group: str
  X: np.ndarray  # float64 [N, k], read-only (shared through the load cache)
  y: np.ndarray  # float64 [N], read-only
  feature_names: tuple[str, ...]
  formula: str | None = None  # ground truth over feature_names, SymPy syntax, where known
  weights: np.ndarray | None = None  # float64 [N] sample weights (a user table's --weights)
  # After select_k_best dropped columns: every input column's name, and the kept ones' indices.
  input_names: tuple[str, ...] | None = None
  selected: tuple[int, ...] | None = None
  target: str = "target"  # the target column's name (a user table's --target)


@dataclasses.dataclass(frozen=True)
class DatasetInfo:
  name: str
  group: str
  rows: int
  features: int
  formula: str | None


@dataclasses.dataclass(frozen=True)
class Split:
  X_train: np.ndarray
  y_train: np.ndarray
  X_val: np.ndarray
  y_val: np.ndarray
  X_test: np.ndarray
  y_test: np.ndarray
  noise_sigma: float  # the target-noise std added to y_train and y_val
  train_index: np.ndarray  # row indices into the X, y given to split()
  val_index: np.ndarray
  test_index: np.ndarray


# --- locating files ------------------------------------------------------------------------

def _package_data():
  return importlib.resources.files("lee_jax") / "data"


def group_of(name: str) -> str:
  if name.startswith("strogatz_"):
    return "strogatz"
  return "feynman" if name.startswith("feynman_") else "blackbox"


def _first_file(candidates):
  return next((f for f in candidates if f.is_file()), None)


def _table_file(name: str, data_dir: str | None):
  """`<name>/<name>.tsv.gz` in data_dir, else in the package data; None if neither has it."""
  roots = ([pathlib.Path(data_dir)] if data_dir else []) + [_package_data() / "pmlb"]
  return _first_file(root / name / f"{name}.tsv.gz" for root in roots)


def _metadata_text(name: str, data_dir: str | None) -> str | None:
  root = _package_data()
  f = _first_file(([pathlib.Path(data_dir) / name / "metadata.yaml"] if data_dir else []) + [
      root / "pmlb" / name / "metadata.yaml", root / "feynman" / f"{name}.metadata.yaml"])
  return f.read_text(encoding="utf-8") if f else None


def _all_names(data_dir: str | None) -> list[str]:
  root = _package_data()
  names = {d.name for d in (root / "pmlb").iterdir() if d.is_dir()}
  names |= {f.name.removesuffix(".metadata.yaml") for f in (root / "feynman").iterdir()
            if f.name.endswith(".metadata.yaml")}
  if data_dir:
    names |= {p.name for p in pathlib.Path(data_dir).iterdir()
              if (p / f"{p.name}.tsv.gz").is_file()}
  return sorted(names)


# --- metadata (a few lines of text processing instead of a YAML dependency) ----------------

def _description_lines(text: str) -> list[str]:
  """The stripped lines of the `description:` entry (block scalar or one line)."""
  lines = text.splitlines()
  for i, line in enumerate(lines):
    if line.startswith("description:"):
      value = line.split(":", 1)[1].strip()
      if not value.startswith(("|", ">")):
        return [value]
      out = []
      for nxt in lines[i + 1:]:
        if nxt.strip() and not nxt[0].isspace():
          break
        out.append(nxt.strip())
      return out
  return []


_ASSIGN = re.compile(r"^([A-Za-z_]\w*'?)\s*=\s*(.+)$")
_RANGE = re.compile(r"^([A-Za-z_]\w*)\s+in\s+\[\s*([^,\]]+?)\s*,\s*([^\]]+?)\s*\]$")


def _formula_and_ranges(text: str | None) -> tuple[str | None, list[tuple[str, float, float]]]:
  """`x' = cot(y) * cos(x)` / `f = ...` -> right-hand side; `v in [lo,hi]` lines -> ranges."""
  formula, ranges = None, []
  for line in _description_lines(text or ""):
    if formula is None and (m := _ASSIGN.match(line)):
      formula = " ".join(m.group(2).split())
    elif m := _RANGE.match(line):
      ranges.append((m.group(1), float(m.group(2)), float(m.group(3))))
  if formula is not None:
    # SymPy does not know NumPy's arc* names (PMLB's Feynman formulas use them).
    formula = re.sub(r"\barc(sin|cos|tan)\(", r"a\1(", formula)
  return formula, ranges


# --- reading tables ------------------------------------------------------------------------

def _read_text(src) -> str:
  with src.open("rb") as f:
    raw = f.read()
  try:
    if raw[:2] == b"\x1f\x8b":  # gzip magic, whatever the extension says
      raw = gzip.decompress(raw)
    return raw.decode("utf-8-sig")
  except (OSError, EOFError, zlib.error) as e:  # a truncated or corrupt .gz
    raise DataError(f"{src}: not a readable gzip file ({e})") from None
  except UnicodeDecodeError as e:
    raise DataError(f"{src}: not UTF-8 text (byte {e.start}: {raw[e.start:e.start + 1]!r}); "
                    "save the table as UTF-8 CSV") from None


def _to_float(values: list[str], column: str, where: str) -> np.ndarray:
  """One column of cells -> float64; missing cells become NaN, true/false become 1/0."""
  out = np.empty(len(values))
  for i, v in enumerate(values):
    s = v.strip()
    try:
      out[i] = float(s)
    except ValueError:
      if s.lower() in _MISSING:
        out[i] = np.nan
      elif s.lower() in ("true", "false"):
        out[i] = float(s.lower() == "true")
      else:
        raise DataError(f"{where}: column {column!r} is not numeric "
                        f"(data row {i + 1}: {v!r})") from None
  return out


def _dataset_from_text(text: str, delimiter: str, where: str, name: str, group: str,
                       target: str, features: Sequence[str] | None,
                       formula: str | None, weights: str | None = None,
                       select_k_best: int | None = None) -> Dataset:
  rows = [r for r in csv.reader(io.StringIO(text), delimiter=delimiter) if r]
  if not rows:
    raise DataError(f"{where} is empty")
  header, rows = [h.strip() for h in rows[0]], rows[1:]
  for i, r in enumerate(rows):
    if len(r) != len(header):
      raise DataError(f"{where}: data row {i + 1} has {len(r)} fields but the header has {len(header)}")
  dups = repeated(header)
  if dups:
    raise DataError(f"{where}: duplicate column names: {', '.join(dups)}")
  if "" in header:  # e.g. pandas' index written without a name: not a feature to fit
    raise DataError(f"{where}: column {header.index('') + 1} has no name (an index written "
                    "by pandas? save with index=False, or name it)")
  if target not in header:
    other = next((d for d in ";\t|" if d != delimiter and len(header) == 1 and d in header[0]),
                 None)  # a table split by another character reads as one column
    hint = f" (is the table split by {other!r}? save it with commas)" if other else ""
    raise DataError(f"{where}: no target column {target!r}; columns are: {', '.join(header)}"
                    + hint)
  if weights is not None and (weights not in header or weights == target):
    raise DataError(f"{where}: no weights column {weights!r} besides the target; columns are: "
                    f"{', '.join(header)}")
  if features is None:
    features = [h for h in header if h not in (target, weights)]
  twice = repeated(features)
  if twice:
    raise DataError(f"{where}: feature column(s) named twice: {', '.join(twice)}")
  for role, column in (("the target", target), ("the weights", weights)):
    if column is not None and column in features:
      raise DataError(f"{where}: --features names {role} column {column!r}; a feature cannot "
                      "be it too")
  missing = [f for f in features if f not in header]
  if missing:
    raise DataError(f"{where}: unknown feature column(s) {', '.join(missing)}; "
                    f"columns are: {', '.join(header)}")
  if not features:
    raise DataError(f"{where}: no feature columns besides the target {target!r}")
  if select_k_best is None:
    check_feature_count(len(features), where, "with --features a,b,c, or let --select_k_best K "
                        "choose them")
  if len(rows) < MIN_ROWS:
    raise DataError(f"{where} has {len(rows)} rows; at least {MIN_ROWS} are needed")
  idx = [header.index(c) for c in (*features, target, *([weights] if weights else []))]
  try:  # fast path: every selected cell is a plain number
    data = np.array([[r[i] for i in idx] for r in rows], dtype=np.float64)
  except ValueError:
    data = np.stack([_to_float([r[i] for r in rows], header[i], where) for i in idx], axis=1)
  w = None
  if weights:
    w = check_weights(data[:, -1], len(data), f"{where}: weights column {weights!r}")
    data = data[:, :-1]
  ds = _make_dataset(name, group, data[:, :-1], data[:, -1], tuple(features), formula, where,
                     target)
  return ds if w is None else dataclasses.replace(ds, weights=w)


def check_feature_count(n: int, where: str, how: str) -> None:
  if n > MAX_FEATURES:
    raise DataError(f"{where} has {n} features but LEE's vocabulary has {MAX_FEATURES} "
                    f"variables; select at most {MAX_FEATURES} {how}")


def is_integer(v) -> bool:
  """A Python or NumPy integer, not a bool (True would pass as 1)."""
  return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def is_number(v) -> bool:
  """A real number (Python or NumPy), not a bool."""
  return isinstance(v, numbers.Real) and not isinstance(v, bool)


def repeated(names: Sequence[str]) -> list[str]:
  """The names that occur more than once, sorted."""
  names = list(names)
  return sorted({n for n in names if names.count(n) > 1})


def check_select_k_best(k) -> None:
  if k is not None and not (is_integer(k) and 1 <= k <= MAX_FEATURES):
    raise DataError(f"select_k_best must be an integer from 1 to {MAX_FEATURES} (LEE's "
                    f"variables), got {k!r}")


def select_columns(ds: Dataset, k: int, seed: int = 0, rows: np.ndarray | None = None) -> Dataset:
  """ds with its k most informative columns (feature_selection; in their input order), or ds
  itself when it has at most k. `input_names` and `selected` say what was kept. They are
  chosen on `rows` (indices; default all) that have positive weight where ds has weights:
  a row left out of the fit does not choose its columns either."""
  check_select_k_best(k)
  if ds.X.shape[1] <= k:
    return ds
  rows = np.arange(len(ds.y)) if rows is None else np.asarray(rows)
  if ds.weights is not None:
    rows = rows[ds.weights[rows] > 0]
  return _with_columns(ds, tuple(sorted(
      feature_selection.select_features(ds.X[rows], ds.y[rows], k, seed))))


def _with_columns(ds: Dataset, keep: tuple[int, ...]) -> Dataset:
  """ds with only its columns `keep` (indices), recording which of its names it kept."""
  X = np.ascontiguousarray(ds.X[:, keep])
  X.flags.writeable = False
  return dataclasses.replace(ds, X=X, feature_names=tuple(ds.feature_names[i] for i in keep),
                             input_names=ds.feature_names, selected=keep)


def _make_dataset(name, group, X, y, feature_names, formula, where, target="target") -> Dataset:
  bad = ~(np.isfinite(X).all(axis=1) & np.isfinite(y))
  if bad.any():
    cols = [c for c, b in zip((*feature_names, target), ~np.isfinite(np.c_[X, y]).all(0)) if b]
    raise DataError(f"{where}: {int(bad.sum())} of {len(y)} rows have NaN or inf values "
                    f"(in {', '.join(cols)}); drop those rows first")
  big = (np.abs(np.c_[X, y]) > MAX_ABS).any(axis=0)
  if big.any():
    cols = [c for c, b in zip((*feature_names, target), big) if b]
    raise DataError(f"{where}: column(s) {', '.join(cols)} hold values beyond {MAX_ABS:.0e} "
                    f"in magnitude (max {np.abs(np.c_[X, y]).max():.3g}); LEE computes in "
                    "float32, so rescale them first (e.g. divide by a power of ten)")
  if np.ptp(y) == 0:
    raise DataError(f"{where}: the target is constant ({y[0]:g}); there is nothing to fit")
  if np.abs(y).max() < MIN_TARGET:
    raise DataError(f"{where}: the target's values are all below {MIN_TARGET:.0e} in magnitude "
                    f"(max {np.abs(y).max():.3g}); LEE computes in float32, so rescale it "
                    "first (e.g. multiply by a power of ten)")
  if np.std(y) < MIN_SPREAD * np.abs(y).max():
    raise DataError(f"{where}: the target varies by only {np.std(y):.3g} (std) around "
                    f"{np.mean(y):.9g}, finer than LEE's float32 arithmetic resolves at that "
                    f"size; subtract an offset first (e.g. {target} - {np.mean(y):.6g})")
  X, y = np.ascontiguousarray(X, np.float64), np.ascontiguousarray(y, np.float64)
  # Read-only because load_dataset hands the same cached arrays to every caller.
  X.flags.writeable = y.flags.writeable = False
  return Dataset(name, group, X, y, tuple(feature_names), formula, target=target)


_DELIMITERS = {".csv": ",", ".csv.gz": ",", ".tsv": "\t", ".tsv.gz": "\t"}


def load_table(path: str | os.PathLike, target: str = "target",
               features: Sequence[str] | None = None, weights: str | None = None,
               select_k_best: int | None = None) -> Dataset:
  """A user's CSV/TSV (optionally .gz) with a header row -> Dataset (group 'user').

  `features` picks and orders the input columns (default: all but the target and the
  weights); `weights` names a column of sample weights (finite, non-negative);
  `select_k_best` keeps that many of them (`select_columns`, on the rows of positive
  weight), so a table may have more than LEE's 10.
  """
  ds = _read_table(path, target, features, weights, select_k_best)
  return ds if select_k_best is None else select_columns(ds, select_k_best)


def _read_table(path, target, features, weights, select_k_best) -> Dataset:
  """load_table's every column (select_k_best given: more than 10 may be read)."""
  check_select_k_best(select_k_best)
  p = pathlib.Path(path)
  suffix = next((s for s in sorted(_DELIMITERS, key=len, reverse=True) if p.name.endswith(s)),
                None)
  if suffix is None:
    raise DataError(f"{p}: unknown table format; use .csv or .tsv (optionally .gz)")
  if not p.is_file():
    raise DataError(f"{p}: no such file")
  return _dataset_from_text(_read_text(p), _DELIMITERS[suffix], str(p),
                            p.name.removesuffix(suffix), "user", target, features, None, weights,
                            select_k_best)


def from_arrays(X, y, feature_names: Sequence[str] | None = None, name: str = "data",
                select_k_best: int | None = None, seed: int = 0, weights=None,
                weights_name: str = "weights") -> Dataset:
  """In-memory X [N, k] and y [N] (anything array-like and numeric) -> a validated Dataset.

  The same checks as a table: at most 10 features (unless `select_k_best` keeps that many,
  `select_columns` with `seed`), at least 10 rows, finite values, a non-constant target.
  Integer and bool columns are read as floats. `weights` (one per row; `check_weights`
  under `weights_name`) become the Dataset's: rows of weight 0 do not choose columns.
  """
  check_select_k_best(select_k_best)
  X_in, X = X, None
  try:
    if any(np.iscomplexobj(a) for a in (X_in, y)):  # float64() would drop the imaginary part
      raise DataError(f"{name}: X and y must be real numbers, not complex")
    X = _float_copy(X_in)  # a copy: the Dataset's arrays become read-only
    y = _float_copy(y)
  except DataError:
    raise
  except (TypeError, ValueError) as e:
    # which cell: numpy's message names only the value
    where = _non_numeric(X_in, feature_names, "X") if X is None else _non_numeric(y, None, "y")
    raise DataError(f"{name}: {where}" if where else
                    f"{name}: X and y must be numeric ({str(e).splitlines()[0]})") from None
  if X.ndim == 1:
    X = X[:, None]
  if y.ndim == 2 and y.shape[1] == 1:
    y = y[:, 0]
  if y.ndim == 2 and len(y) == len(X):
    raise DataError(f"{name}: y has {y.shape[1]} columns; LEE fits one target at a time "
                    "(fit one per column, e.g. with sklearn's MultiOutputRegressor)")
  if X.ndim != 2 or y.ndim != 1 or len(X) != len(y):
    raise DataError(f"{name}: need X [n_rows, n_features] and y [n_rows]; got shapes "
                    f"{X.shape} and {y.shape}")
  names = tuple(feature_names) if feature_names is not None else tuple(f"x{i}" for i in range(X.shape[1]))
  if len(names) != X.shape[1]:
    raise DataError(f"{name}: {len(names)} feature names for {X.shape[1]} columns")
  if repeated(names):
    raise DataError(f"{name}: feature names repeat: {', '.join(repeated(names))}")
  if X.shape[1] == 0:
    raise DataError(f"{name}: X has no feature columns")
  if select_k_best is None:
    check_feature_count(X.shape[1], name, "columns, or let select_k_best=K choose them")
  if len(y) < MIN_ROWS:
    raise DataError(f"{name} has {len(y)} rows; at least {MIN_ROWS} are needed")
  ds = _make_dataset(name, "user", X, y, names, None, name)
  if weights is not None:
    ds = dataclasses.replace(ds, weights=check_weights(weights, len(y), weights_name))
  return ds if select_k_best is None else select_columns(ds, select_k_best, seed)


def _float_copy(a) -> np.ndarray:
  """a as a new float64 array. pandas objects turn their missing values (pd.NA in the
  nullable Int64 / Float64 columns or in object ones, which float() refuses) into NaN, so
  that the rows are reported as rows with missing values."""
  if type(a).__module__.startswith("pandas"):  # a DataFrame or Series
    a = a.astype(object).where(a.notna(), np.nan).to_numpy()
  return np.array(a, dtype=np.float64)


def _non_numeric(a, names: Sequence[str] | None, what: str) -> str | None:
  """Where the first cell of `a` that is no number is, as an error message ("X column
  'colour' is not numeric (row 0: 'red')"); None when every cell is one (e.g. a ragged list).
  A DataFrame's columns convert one by one, as pandas converts them (its NA reads as NaN)."""
  if hasattr(a, "iloc") and getattr(a, "ndim", 0) == 2:  # a pandas DataFrame
    columns = [a.iloc[:, j] for j in range(a.shape[1])]
  else:
    try:
      obj = np.asarray(a, dtype=object)
    except (TypeError, ValueError):
      return None
    if obj.ndim not in (1, 2):
      return None
    columns = [obj] if obj.ndim == 1 else list(obj.T)
  for j, column in enumerate(columns):
    try:
      np.asarray(column, dtype=np.float64)
      continue
    except (TypeError, ValueError):
      pass
    for i, v in enumerate(np.asarray(column, dtype=object)):
      if type(v).__name__ == "NAType":  # pandas' missing value: a NaN (the finite check's)
        continue
      try:
        if np.asarray(v, dtype=np.float64).ndim == 0:
          continue
        return None  # a row of another length (a ragged list): a shape error, not a cell's
      except (TypeError, ValueError):
        pass
      v = v.item() if isinstance(v, np.generic) else v  # 'red', not np.str_('red')
      if what == "y" and len(columns) == 1:
        col = what
      elif names is not None and j < len(names):
        col = f"{what} column {str(names[j])!r}"
      else:
        col = f"{what} column {j}"
      shown = repr(v) if len(repr(v)) <= 60 else repr(v)[:57] + "..."
      return f"{col} is not numeric (row {i}: {shown})"
  return None


# --- Feynman regeneration ------------------------------------------------------------------

def _feynman(name: str, formula: str, ranges, rows: int) -> Dataset:
  names = [v for v, _, _ in ranges]
  # A Python keyword (e.g. `lambda`) cannot be lambdified and `pi` would read as the
  # constant: rename those for parsing only; feature_names keep the originals.
  safe = {v: f"{v}_var" for v in names if keyword.iskeyword(v) or v == "pi"}
  text = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: safe.get(m.group(0), m.group(0)), formula)
  parse_names = [safe.get(v, v) for v in names]
  fn = expr_lib.numpy_function(expr_lib.parse_formula(text, parse_names), parse_names)
  lo, hi = np.array([r[1] for r in ranges]), np.array([r[2] for r in ranges])
  # crc32 of the name: a seed that is fixed across runs and Python versions (hash() is not).
  X = np.random.default_rng(zlib.crc32(name.encode())).uniform(lo, hi, size=(rows, len(names)))
  return _make_dataset(name, "feynman", X, fn(X), tuple(names), formula, name)


# --- public loading ------------------------------------------------------------------------

def _norm_dir(data_dir) -> str | None:
  if data_dir is not None and not os.path.isdir(data_dir):
    raise DataError(f"data_dir {os.fspath(data_dir)} is not a directory")
  return None if data_dir is None else os.fspath(data_dir)


def load_dataset(name: str, data_dir: str | os.PathLike | None = None,
                 feynman_rows: int = FEYNMAN_ROWS) -> Dataset:
  """A Strogatz, Feynman or black-box dataset by PMLB name (cached in-process)."""
  return _load_cached(name, _norm_dir(data_dir), int(feynman_rows))


@functools.lru_cache(maxsize=16)
def _load_cached(name: str, data_dir: str | None, feynman_rows: int) -> Dataset:
  group = group_of(name)
  formula, ranges = _formula_and_ranges(_metadata_text(name, data_dir))
  f = _table_file(name, data_dir)
  if f is not None:
    return _dataset_from_text(_read_text(f), "\t", name, name, group, "target", None, formula)
  if group == "feynman" and formula and ranges:
    return _feynman(name, formula, ranges, feynman_rows)
  raise _unknown(name, _all_names(data_dir))


def _unknown(name: str, names: list[str]) -> DataError:
  close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
  hint = f"; did you mean {', '.join(close)}?" if close else ""
  return DataError(f"unknown dataset {name!r}{hint} (`python -m lee_jax.datasets --list` shows all {len(names)})")


def check_names(names: Sequence[str], data_dir: str | os.PathLike | None = None) -> None:
  """DataError for the first name that is not a dataset (without loading any): a sweep
  checks its whole list before it starts."""
  known = _all_names(_norm_dir(data_dir))
  for name in names:
    if name not in known:
      raise _unknown(name, known)


def resolve(names: Sequence[str] | None, groups: Sequence[str]) -> list[str]:
  """The datasets a sweep runs: `names` if given (each checked), else every dataset of
  `groups` ('all': the three SRBench groups), in listing order. DataError on an unknown
  group or name, or when nothing is left."""
  if names is not None and not [n for n in names if n.strip()]:
    # (--datasets= is an empty list: it once ran the whole default group)
    raise DataError("--datasets names no dataset; leave it out to run whole --group(s)")
  if names:
    check_names(names)
    return list(names)
  srbench = GROUPS[:3]
  wanted = set(srbench) if "all" in groups else set(groups)
  bad = sorted(wanted - set(srbench))
  if bad or not wanted:
    raise DataError(f"unknown group {', '.join(bad) or '(none)'}; groups are {', '.join(srbench)} or all")
  return [d.name for d in list_datasets() if d.group in wanted]


def _table_shape(f) -> tuple[int, int]:
  text = _read_text(f)
  first = text.split("\n", 1)[0]
  return text.count("\n") - 1 + (not text.endswith("\n")), first.count("\t")


@functools.lru_cache(maxsize=4)
def _list_cached(data_dir: str | None) -> tuple[DatasetInfo, ...]:
  out = []
  for name in _all_names(data_dir):
    group = group_of(name)
    formula, ranges = _formula_and_ranges(_metadata_text(name, data_dir))
    f = _table_file(name, data_dir)
    # Row counts come from a decompress-and-count, never from regenerating Feynman rows.
    rows, feats = _table_shape(f) if f is not None else (FEYNMAN_ROWS, len(ranges))
    out.append(DatasetInfo(name, group, rows, feats, formula))
  return tuple(sorted(out, key=lambda d: (GROUPS.index(d.group), d.name)))


def list_datasets(data_dir: str | os.PathLike | None = None) -> list[DatasetInfo]:
  """Every shipped dataset (plus those in data_dir), sorted by group then name."""
  return list(_list_cached(_norm_dir(data_dir)))


# --- the SRBench protocol ------------------------------------------------------------------

def check_weights(weights, n: int, what: str) -> np.ndarray:
  """Sample weights as float64 [n]: numbers, one per row, finite, non-negative, not all
  zero (a one-line DataError about `what` otherwise), scaled to a largest weight of 1: only
  their ratios count, and weights near 1e308 overflowed the weighted sums."""
  try:
    w = np.asarray(weights, np.float64)
  except (TypeError, ValueError):
    raise DataError(f"{what} must be numbers, one per row") from None
  if w.shape != (n,):
    raise DataError(f"{what} has shape {w.shape}; expected ({n},), one per row")
  if not np.all(np.isfinite(w)) or np.any(w < 0) or not np.any(w > 0):
    raise DataError(f"{what} must be finite and non-negative, and not all zero")
  # (a positive weight stays positive: 1e-30 beside 1e300 was 0, a row left out)
  return np.where(w > 0, np.maximum(w / w.max(), np.finfo(np.float64).smallest_subnormal), 0.0)


def load_input(dataset: str | None = None, data: str | None = None, target: str = "target",
               features: Sequence[str] | None = None, weights: str | None = None,
               select_k_best: int | None = None, data_dir: str | None = None) -> Dataset:
  """The rows a search runs on: a shipped (or --data_dir) dataset by name, or a user's table
  (its target, feature and weight columns; rows of weight 0 left out), every column of it:
  with select_k_best (which lets a table have more than 10) each trial keeps that many,
  chosen on its own training rows (`trial_columns`). What `lee_jax.infer` records in its
  --out as "input"."""
  if (dataset is None) == (data is None):
    raise DataError("name exactly one of a dataset or a data table")
  if data is not None:
    ds = _read_table(data, target, features, weights, select_k_best)
    X, y, w = weighted_rows(ds.X, ds.y, ds.weights)  # rows of weight 0 leave
    return dataclasses.replace(ds, X=X, y=y, weights=w)
  check_select_k_best(select_k_best)
  return load_dataset(dataset, data_dir)


def trial_columns(ds: Dataset, k: int | None, seed: int) -> Dataset:
  """ds with the k columns `select_columns` chooses on the rows `split(seed)` gives the
  search (its training and validation folds: never the test fold, whose targets would
  otherwise choose what the search may read); ds itself when k is None."""
  if k is None:
    return ds
  return select_columns(ds, k, seed, rows=_train_test_indices(len(ds.y), seed)[0])


def columns_named(ds: Dataset, names: Sequence[str]) -> Dataset:
  """ds with the columns of these names, as a trial that recorded them chose (`trial_columns`)."""
  missing = [n for n in names if n not in ds.feature_names]
  if missing:
    raise DataError(f"no column(s) {', '.join(missing)} in {ds.name}")
  keep = tuple(ds.feature_names.index(n) for n in names)
  return ds if keep == tuple(range(len(ds.feature_names))) else _with_columns(ds, keep)


def weighted_rows(X: np.ndarray, y: np.ndarray, weights: np.ndarray | None):
  """(X, y, weights) without the rows of weight 0; weights None when they are all equal (the
  unweighted search exactly). DataError if fewer than MIN_ROWS rows are left, or if y is
  constant on them."""
  if weights is None:
    return X, y, None
  keep = weights > 0
  if keep.sum() < MIN_ROWS:
    raise DataError(f"the weights leave {int(keep.sum())} rows of positive weight; at least "
                    f"{MIN_ROWS} are needed")
  w, y = weights[keep], y[keep]
  if np.ptp(y) == 0:  # (as `_make_dataset` says of a constant target)
    raise DataError(f"the target is constant ({y[0]:g}) on the rows of positive weight; there "
                    "is nothing to fit")
  return X[keep], y, (None if np.all(w == w[0]) else w)


def check_noise(noise: float, what: str = "noise") -> None:
  """SRBench's target noise level (a share of the target's RMS): finite and >= 0 (NaN fails)."""
  if not 0 <= noise < math.inf:
    raise DataError(f"{what} must be a finite level >= 0, got {noise}")


def _train_test_indices(n: int, seed: int, max_train_samples: int | None = 10_000):
  """split's steps 1 and 2: the training part's row indices (capped) and the test fold's."""
  n_test, n_train = math.ceil(0.25 * n), math.floor(0.75 * n)
  if n_train < 2 or n_test < 1:
    raise DataError(f"{n} rows are too few to split")
  perm = np.random.RandomState(seed).permutation(n)
  test_idx, train_idx = perm[:n_test], perm[n_test:n_test + n_train]
  if max_train_samples is not None and len(train_idx) > max_train_samples:
    keep = np.random.default_rng([seed, 1]).choice(len(train_idx), max_train_samples, replace=False)
    train_idx = train_idx[np.sort(keep)]
  return train_idx, test_idx


def split(X: np.ndarray, y: np.ndarray, seed: int, noise: float = 0.0,
          max_train_samples: int | None = 10_000, val_fraction: float = 0.2) -> Split:
  """SRBench's train/test split, training-row cap and target noise, plus a validation fold.

  1. 75/25 as sklearn's train_test_split(X, y, train_size=0.75, test_size=0.25,
     random_state=seed) (its ShuffleSplit index logic, reimplemented without sklearn).
  2. If the training part has more than max_train_samples rows, a random subsample of them.
  3. Target noise on the training part (train + val): sigma = noise * RMS(y of that part).
  4. val_fraction of the training part becomes the validation fold (60/15/25 by default);
     the remaining train rows keep SRBench's order. The test fold is never touched.
  """
  X, y = np.asarray(X, np.float64), np.asarray(y, np.float64)
  if X.ndim != 2 or y.ndim != 1 or len(X) != len(y):
    raise DataError(f"split needs X [N, k] and y [N]; got {X.shape} and {y.shape}")
  if not (isinstance(seed, (int, np.integer)) and 0 <= seed < 2**32):
    raise DataError(f"seed must be an integer in [0, 2**32), got {seed!r}")
  check_noise(noise)
  if not 0 <= val_fraction < 1:  # (NaN fails too)
    raise DataError(f"val_fraction must be in [0, 1), got {val_fraction}")
  train_idx, test_idx = _train_test_indices(len(y), seed, max_train_samples)
  y_part = y[train_idx]
  sigma = float(noise * np.sqrt(np.mean(np.square(y_part))))
  if sigma > 0:
    y_part = y_part + np.random.default_rng([seed, 2]).normal(0.0, sigma, len(y_part))
  n_val = min(int(round(val_fraction * len(train_idx))), len(train_idx) - 1)
  pos = np.random.default_rng([seed, 3]).permutation(len(train_idx))
  val_pos, fit_pos = pos[:n_val], np.sort(pos[n_val:])
  return Split(X[train_idx[fit_pos]], y_part[fit_pos], X[train_idx[val_pos]], y_part[val_pos],
               X[test_idx], y[test_idx], sigma, train_idx[fit_pos], train_idx[val_pos], test_idx)


# --- CLI -----------------------------------------------------------------------------------

def format_listing(infos: Sequence[DatasetInfo]) -> str:
  w = max(len(d.name) for d in infos)
  return "\n".join(f"{d.name:<{w}}  {d.group:<8}  {d.rows:>7}  {d.features:>2}  {d.formula or '-'}"
                   for d in infos)


def fingerprint(ds: Dataset) -> str:
  """A digest of the rows a run read (columns, values, weights; 16 hex digits of a SHA-256):
  `plot_result` redraws a result from its table again and refuses a table edited since (it
  drew the new rows under the old answer's title)."""
  h = hashlib.sha256()
  h.update("\x1f".join(ds.feature_names).encode())
  for a in (ds.X, ds.y, ds.weights):
    h.update(b"-" if a is None else np.ascontiguousarray(a, np.float64).tobytes())
  return h.hexdigest()[:16]


def describe(ds: Dataset) -> str:
  """A dataset's size, formula and per-column min/mean/max/std."""
  lines = [f"{ds.name}  ({ds.group}, {len(ds.y)} rows, {len(ds.feature_names)} features)"]
  if ds.formula:  # the known law (a shipped set's); a user's table has none to show
    lines.append(f"formula: {ds.formula}")
  if ds.selected is not None:
    dropped = [n for i, n in enumerate(ds.input_names) if i not in ds.selected]
    lines.append(f"select_k_best kept {len(ds.selected)} of {len(ds.input_names)} columns; "
                 f"dropped: {', '.join(dropped)}")
  cols = list(zip((*ds.feature_names, ds.target), (*ds.X.T, ds.y)))
  w = max(6, *(len(c) for c, _ in cols))
  lines.append(f"{'column':<{w}}  " + "  ".join(f"{s:>12}" for s in ("min", "mean", "max", "std")))
  for c, v in cols:
    lines.append(f"{c:<{w}}  " + "  ".join(f"{s:>12.5g}" for s in
                                          (v.min(), v.mean(), v.max(), v.std())))
  return "\n".join(lines)


def _define_flags() -> None:
  # Defined only when run as a script, so importing this module registers no absl flags
  # (and cannot clash with flags of the same name in the training scripts).
  flags.DEFINE_bool("list", False, "List every dataset: name, group, rows, features, formula.")
  flags.DEFINE_string("show", None, "Dataset name, or a .csv/.tsv(.gz) path, to summarise.")
  flags.DEFINE_string("data_dir", None, "PMLB-layout directory searched before the shipped data.")
  flags.DEFINE_string("target", "target", "Target column of a --show table.")
  flags.DEFINE_list("features", None, "Feature columns of a --show table (default: all others).")
  flags.DEFINE_integer("select_k_best", None, "Keep the K most informative columns of a --show "
                       "table (as `lee_jax.infer --select_k_best`), for one of over 10.")


def main(argv: Sequence[str]) -> None:
  del argv
  FLAGS = flags.FLAGS
  try:
    if FLAGS.list:
      print(format_listing(list_datasets(FLAGS.data_dir)))
    elif FLAGS.show:
      is_table = FLAGS.show.endswith(tuple(_DELIMITERS)) or os.path.isfile(FLAGS.show)
      source = ({"data": FLAGS.show, "target": FLAGS.target, "features": FLAGS.features}
                if is_table else {"dataset": FLAGS.show, "data_dir": FLAGS.data_dir})
      ds = load_input(**source, select_k_best=FLAGS.select_k_best)
      print(describe(trial_columns(ds, FLAGS.select_k_best, seed=0)))  # infer's first trial's
    else:
      raise DataError("nothing to do; pass --list or --show NAME")
  except BrokenPipeError:  # `--list | head` closed the pipe early; not an error
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
  _define_flags()
  cli.run(main, DataError)
