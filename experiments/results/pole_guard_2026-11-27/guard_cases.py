"""The pole guard on known cases: shearflow1 and glider2 laws (must pass), and the five
pole winners of earlier sweeps (BUILD_NOTES "Winners with poles"; must be rejected where
their test R2 is catastrophic). Rejections in 10 probe draws of N points, per trial split,
for random pairs of rows (old) and k nearest neighbours. Since 2026-11-29 the guard also
follows the segments' sign changes (score.probe, score.crosses_pole): a rerun counts those
too. Usage from the repo root:
    python experiments/results/pole_guard_2026-11-27/guard_cases.py 65536
"""
import numpy as np, sympy, sys
N = int(sys.argv[1])
from lee_jax import datasets, score, expr as E, evaluate

def r2(node, X, y):
  yh = evaluate.evaluate_numpy(node, X)
  return 1 - np.sum((yh - y) ** 2) / np.sum((y - y.mean()) ** 2)

def node_of(text, names):
  ex = E.parse_formula(text, names)
  if "cot" in text: ex = ex.rewrite(sympy.tan)
  return E.from_sympy(ex, names)

CASES = [
  ("strogatz_shearflow1", "cot(y)*cos(x)", "true"),
  ("strogatz_glider2", "x - cos(y)/x", "true"),
  ("strogatz_shearflow1", "-0.02449/x**3", "bad"),
  ("strogatz_shearflow2", "0.2685/x", "bad"),
  ("strogatz_shearflow2", "0.2161/x", "bad"),
  ("strogatz_glider2", "(-0.3689*x*cos(y) + (x + 0.1139)*(x - sin(y)))/(x - sin(y))", "bad"),
  ("strogatz_shearflow1", "((0.26 - 1.03*x)*cos(y) - 0.03)/(x - 0.2572)", "bad"),
]
for name, text, kind in CASES:
  ds = datasets.load_dataset(name)
  node = node_of(text, ds.feature_names)
  for t in range(3):
    p = datasets.split(ds.X, ds.y, seed=1000 * t)
    out = [f"{kind:4s} {name[9:]:11s} {text[:40]:40s} t{t} test R2 {r2(node, p.X_test, p.y_test):10.3g}"]
    for label, fn in [("old", lambda X, n, g: score.probe(X, n, g, neighbours=len(X) - 1))] + [
        (f"k{k}", (lambda k: lambda X, n, g: score.probe(X, n, g, neighbours=k))(k)) for k in (8, 16, 32)]:
      rej = sum(not score.bounded(node, fn(p.X_train, N, np.random.default_rng(s)), p.X_train, p.y_train)
                for s in range(10))
      out.append(f"{label} {rej:2d}")
    print("  ".join(out), flush=True)
