"""The seeds of power_sums at 700c5e6 (copied to /tmp/s54/old_ps.py: `git show 700c5e6:lee_jax/power_sums.py`)
against the current module on the 119 Feynman and the first 20 black-box sets at eps 0 and 0.1:
the same seeds but those over 62 tokens, and the seconds each took."""
import json, sys, time, numpy as np
sys.path.insert(0, "/tmp/s54")
import old_ps
from lee_jax import datasets, power_sums, expr as E
names=[json.loads(l)["dataset"] for l in open("experiments/results/final_refit_2026-11-30/feynman119.jsonl")]
names += [json.loads(l)["dataset"] for l in open("experiments/results/final_refit_2026-11-30/blackbox72.jsonl")][:20]
to=tn=0; bad=0
for noise in (0.0, 0.1):
  for name in names:
    ds=datasets.load_dataset(name); p=datasets.split(ds.X, ds.y, 0, noise)
    rng=np.random.default_rng([0,1]); n=len(p.y_train); idx=np.sort(rng.choice(n,min(n,500),replace=False))
    X,y=p.X_train[idx],p.y_train[idx]
    t=time.time(); o=old_ps.power_sum_fits(X,y); to+=time.time()-t
    t=time.time(); nw=power_sums.power_sum_fits(X,y); tn+=time.time()-t
    ok=[tuple(E.to_prefix(s)) for s in o if len(E.to_prefix(s))<=62]
    if ok!=[tuple(E.to_prefix(s)) for s in nw]:
        bad+=1; print("DIFF", name, noise, flush=True)
print("cells", 2*len(names), "diff", bad, "old s", round(to,1), "new s", round(tn,1))
