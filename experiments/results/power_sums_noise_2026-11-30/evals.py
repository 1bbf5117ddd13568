"""Per power_sum_fits call: k, each LM start's nfev/cost, time; which start hit exact."""
import json, sys, time, numpy as np, scipy.optimize
from lee_jax import datasets, power_sums
calls = []
orig = scipy.optimize.least_squares
def wrapped(*a, **kw):
    r = orig(*a, **kw)
    calls.append((int(r.nfev), int(r.njev or 0), float(r.fun @ r.fun), kw.get("max_nfev")))
    return r
power_sums.scipy.optimize.least_squares = wrapped
out = open(sys.argv[2], "w")
names = [json.loads(l)["dataset"] for l in open(sys.argv[1])]
noise = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
for name in names:
    ds = datasets.load_dataset(name); p = datasets.split(ds.X, ds.y, 0, noise)
    rng = np.random.default_rng([0, 1])
    n = len(p.y_train); idx = np.sort(rng.choice(n, min(n, 500), replace=False))
    X, y = p.X_train[idx], p.y_train[idx]
    calls.clear()
    t0 = time.time(); seeds = power_sums.power_sum_fits(X, y); dt = time.time() - t0
    rec = {"dataset": name, "k": X.shape[1], "seconds": dt, "n_seeds": len(seeds), "starts": calls[:],
           "seeds": [" ".join(power_sums.E.to_prefix(s)) for s in seeds]}
    out.write(json.dumps(rec) + "\n"); out.flush()
    print(name, X.shape[1], round(dt, 2), len(calls), sum(c[0] for c in calls), flush=True)
