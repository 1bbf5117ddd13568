"""For each cell whose answer came from the power-sum seeds: the seeds on the screen's
500-row draw, refitted; the best by validation R2 (ties to the shorter): its complexity.
    python cx.py OUT.jsonl RECORD...   (run with PYTHONPATH at old or new code)"""
import json, sys, numpy as np
from lee_jax import datasets, power_sums, evaluate, fit, score, complexity, trial
out = open(sys.argv[1], "w")
for rec in sys.argv[2:]:
  for l in open(rec):
    c = json.loads(l)
    if "power_sum" not in str(c.get("origin")): continue
    ds = datasets.load_dataset(c["dataset"]); p = datasets.split(ds.X, ds.y, c["seed"], c["noise"])
    rng = np.random.default_rng([c["seed"], 1])
    n = len(p.y_train); idx = np.sort(rng.choice(n, min(n, 500), replace=False))
    X, y = p.X_train[idx], p.y_train[idx]
    best = None
    for s in power_sums.power_sum_fits(X, y):
        r = fit.fit_constants(s, X, y, 100)
        if not r.ok: continue
        with np.errstate(all="ignore"):
            rv = score.r2(p.y_val, evaluate.evaluate_numpy(r.node, p.X_val))
            rte = score.r2(p.y_test, evaluate.evaluate_numpy(r.node, p.X_test))
        if not np.isfinite(rv): continue
        cx = complexity.complexity(r.node)
        key = (round(rv, 12), -cx)
        if best is None or key > best[0]:
            best = (key, {"r2_val": rv, "r2_test": rte, "complexity": cx, "sympy": str(trial.sympy_of(r.node, ds.feature_names) if hasattr(trial, "sympy_of") else "")})
    o = {"dataset": c["dataset"], "noise": c["noise"], "answer_cx": c["complexity"], "answer": c["expression"], "answer_r2_test": c["r2_test"], "seed": best and best[1]}
    out.write(json.dumps(o) + "\n"); out.flush()
    print(c["dataset"], c["noise"], c["complexity"], best and (best[1]["complexity"], round(best[1]["r2_val"], 9), best[1]["sympy"][:80]), flush=True)
