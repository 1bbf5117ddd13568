"""Sets where the new rules matter at a noise level: a found pair with |exponent| > 6 (a
squared target's), or a seed over 62 tokens before factoring."""
import json, sys, numpy as np
from lee_jax import datasets, power_sums
power_sums.TOKENS = 10**9
hi = []
orig = power_sums._laws
def laws(*a):
    r = orig(*a)
    if r is not None and max((abs(e) for p in r[1] for e in p.values()), default=0) > 6: hi.append(1)
    return r
power_sums._laws = laws
noise = float(sys.argv[2])
for l in open(sys.argv[1]):
    name = json.loads(l)["dataset"]
    ds = datasets.load_dataset(name); p = datasets.split(ds.X, ds.y, 0, noise)
    rng = np.random.default_rng([0, 1]); n = len(p.y_train); idx = np.sort(rng.choice(n, min(n, 500), replace=False))
    hi.clear()
    seeds = power_sums.power_sum_fits(p.X_train[idx], p.y_train[idx])
    L = [len(power_sums.E.to_prefix(s)) for s in seeds]
    if hi or any(x > 62 for x in L): print(name, noise, len(hi), L, flush=True)
print("done", flush=True)
