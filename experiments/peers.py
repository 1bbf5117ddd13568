"""Peer SR systems behind one interface, for side-by-side runs on identical splits.

    fit_peer("gplearn", X_train, y_train, seed) -> (sympy expression over x0..x{k-1},
                                                    its predict, seconds)
    fit_peer("operon", X_train, y_train, seed, generations=5)  # a smaller budget

gplearn (0.4) and Operon (pyoperon 0.6) are the pip-installable peers (`pip install
".[peers]"`). Both get LEE's relevant operators (add, sub, mul, div, sin, cos): with their
strict defaults neither has sin/cos and they return rationals or Taylor polynomials on
Strogatz. Everything else is the package default, one thread, seeded. PySR cannot run
offline (its Julia backend is downloaded at first use), so it is not here. `generations`
(None: each package's default, gplearn 20, Operon 1000) shortens a run for a quick look.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np
import sympy

PEERS = ("gplearn", "operon")
_OPS = ("add", "sub", "mul", "div", "sin", "cos")


def _gplearn_sympy(program: str, k: int) -> sympy.Expr:
  local = {f"X{i}": sympy.Symbol(f"x{i}", real=True) for i in range(k)}
  local.update({"add": lambda a, b: a + b, "sub": lambda a, b: a - b,
                "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
                "sin": sympy.sin, "cos": sympy.cos})
  return sympy.sympify(program, locals=local)


def fit_peer(name: str, X: np.ndarray, y: np.ndarray, seed: int,
             generations: int | None = None) -> tuple[sympy.Expr, Callable, float]:
  """Fit a peer on (X, y); returns its model as SymPy over x0..x{k-1} (for its size), its
  own `predict` (for its scores, as SRBench scores it: gplearn's printed program rounds
  constants to 3 decimals and loses its protected division, which moved a Strogatz cell's
  test R2 from 0.314 to -0.073) and the fit seconds."""
  budget = {} if generations is None else {"generations": int(generations)}
  k = X.shape[1]
  names = [f"x{i}" for i in range(k)]
  t = time.perf_counter()
  if name == "gplearn":
    from gplearn.genetic import SymbolicRegressor

    est = SymbolicRegressor(function_set=_OPS, random_state=seed, n_jobs=1, **budget)
    est.fit(X, y)
    expr = _gplearn_sympy(str(est._program), k)
  elif name == "operon":
    from pyoperon.sklearn import SymbolicRegressor

    est = SymbolicRegressor(allowed_symbols=",".join(_OPS) + ",constant,variable",
                            random_state=seed, n_threads=1, **budget)
    est.fit(X, y)
    text = est.get_model_string(est.model_, 8, names)
    expr = sympy.sympify(text, locals={n: sympy.Symbol(n, real=True) for n in names})
  else:
    raise ValueError(f"unknown peer {name!r}; peers: {', '.join(PEERS)}")
  return expr, est.predict, time.perf_counter() - t
