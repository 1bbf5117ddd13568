import os, sys, json, time, warnings, traceback
os.environ.setdefault("LEE_JAX_CPU_THREADS", "1")
import numpy as np
from lee_jax import LEERegressor

LAWS = {
  "mul":   (2, lambda X: X[:,0]*X[:,1], (0,1)),
  "ratio": (2, lambda X: X[:,0]/X[:,1]**2, (0,1)),
  "poly":  (2, lambda X: 3*X[:,0] + X[:,1]**2, (0,1)),
  "sinx":  (2, lambda X: np.sin(X[:,0])*X[:,1], (1,)),   # only x1 may be scaled
  "expo":  (2, lambda X: 2.0*np.exp(-0.4*X[:,0])*X[:,1], (1,)),
  "hypot": (2, lambda X: np.sqrt(X[:,0]**2 + X[:,1]**2), (0,1)),
}
CASES = {
  "base": (1.0, 1.0), "y*1e-9": (1.0, 1e-9), "y*1e9": (1.0, 1e9),
  "X*1e-6": (1e-6, 1.0), "X*1e6": (1e6, 1.0), "X*1e3,y*1e-12": (1e3, 1e-12),
  "y*1e-20": (1.0, 1e-20), "X*1e-20": (1e-20, 1.0), "y*1e-15": (1.0, 1e-15), "y*1e-17": (1.0, 1e-17),
}

def make(law, case, n, seed):
  nv, f, cols = LAWS[law]
  sx, sy = CASES[case]
  rng = np.random.default_rng(seed)
  X = rng.uniform(1, 5, size=(n, nv))
  y = f(X) * sy
  Xs = X.copy()
  for c in cols: Xs[:, c] *= sx
  return Xs, y

def run(law, case, out, **kw):
  X, y = make(law, case, 300, 1)
  Xt, yt = make(law, case, 100, 2)
  rec = {"law": law, "case": case, "kw": kw}
  t = time.time()
  with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    try:
      est = LEERegressor(**kw).fit(X, y)
      rec.update(formula=str(est.sympy()), r2=float(est.score(Xt, yt)),
                 complexity=int(est.complexity_), r2_train=float(est.score(X, y)),
                 equations=est.equations_, failures=str(est.failures_))
    except Exception:
      rec["error"] = traceback.format_exc()
    rec["warnings"] = sorted({f"{x.category.__name__}: {str(x.message)[:200]}" for x in w})
  rec["wall"] = time.time() - t
  with open(out, "a") as fh: fh.write(json.dumps(rec) + "\n")
  print(law, case, kw, rec.get("r2"), rec.get("complexity"), rec.get("formula"), rec.get("error","")[-300:], f"{rec['wall']:.0f}s", flush=True)

if __name__ == "__main__":
  out = sys.argv[1]
  laws = sys.argv[2].split(",")
  cases = sys.argv[3].split(";") if len(sys.argv) > 3 else list(CASES)
  kw = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
  for law in laws:
    for case in cases:
      run(law, case, out, **kw)
