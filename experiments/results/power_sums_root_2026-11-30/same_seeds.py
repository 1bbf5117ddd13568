"""power_sums at OLD (a copy, argv[1]) against the current module on the 119 Feynman, 72
black-box and 14 Strogatz sets at eps 0: the seeds that differ, and the seconds each took."""
import json, sys, time, importlib.util, numpy as np
spec = importlib.util.spec_from_file_location("old_ps", sys.argv[1]); old_ps = importlib.util.module_from_spec(spec); spec.loader.exec_module(old_ps)
from lee_jax import datasets, power_sums, expr as E
R = "experiments/results/final_refit_2026-11-30/"
names = [json.loads(l)["dataset"] for f in ("feynman119", "blackbox72", "strogatz14") for l in open(R + f + ".jsonl")]
to = tn = 0; bad = 0
for name in names:
    ds = datasets.load_dataset(name); p = datasets.split(ds.X, ds.y, 0, 0.0)
    rng = np.random.default_rng([0, 1]); n = len(p.y_train); idx = np.sort(rng.choice(n, min(n, 500), replace=False))
    X, y = p.X_train[idx], p.y_train[idx]
    t = time.time(); o = old_ps.power_sum_fits(X, y); to += time.time() - t
    t = time.time(); nw = power_sums.power_sum_fits(X, y); tn += time.time() - t
    a = [tuple(E.to_prefix(s)) for s in o]; b = [tuple(E.to_prefix(s)) for s in nw]
    if a != b:
        bad += 1
        print("DIFF", name, "old", len(a), "new", len(b), "new only", len(set(b) - set(a)), "old only", len(set(a) - set(b)), flush=True)
print("cells", len(names), "diff", bad, "old s", round(to, 1), "new s", round(tn, 1))
