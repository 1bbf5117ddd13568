"""Which sets could the power-sum seeds change? For each cell of a record: the seeds on a
500-row draw of the training fold, refitted on it, scored; flag when a seed's validation
R2 is within 1e-6 of 1, or its score (r2_train - alpha C) is within 0.02 of the answer's
(seeds over MAX_C nodes are not counted: 24 unless given; the search's own cap,
power_sums.MAX_COMPLEXITY, is 32).

    python experiments/results/power_sums_2026-11-30/screen.py RECORD.jsonl OUT.jsonl [MAX_C]
"""
import json, sys, time, numpy as np
from lee_jax import datasets, power_sums, evaluate, fit, score, complexity
out = open(sys.argv[2], "w")
MAX_C = int(sys.argv[3]) if len(sys.argv) > 3 else 24
for l in open(sys.argv[1]):
    c = json.loads(l)
    ds = datasets.load_dataset(c["dataset"]); p = datasets.split(ds.X, ds.y, c["seed"], c["noise"])
    rng = np.random.default_rng([c["seed"], 1])
    n = len(p.y_train); idx = np.sort(rng.choice(n, min(n, 500), replace=False))
    X, y = p.X_train[idx], p.y_train[idx]
    t0 = time.time(); seeds = power_sums.power_sum_fits(X, y); dt = time.time() - t0
    ans_score = (c.get("r2_train") or -1) - 0.002 * c["complexity"]
    best = None
    for s in seeds:
        r = fit.fit_constants(s, X, y, 100)
        if not r.ok: continue
        with np.errstate(all="ignore"):
            rt = score.r2(p.y_train, evaluate.evaluate_numpy(r.node, p.X_train))
            rv = score.r2(p.y_val, evaluate.evaluate_numpy(r.node, p.X_val))
            rte = score.r2(p.y_test, evaluate.evaluate_numpy(r.node, p.X_test))
        cx = complexity.complexity(r.node)
        if cx > MAX_C or not np.isfinite(rv): continue
        sc = rt - 0.002 * cx
        if best is None or rv > best["r2_val"]:
            best = {"r2_val": rv, "r2_test": rte, "score": sc, "complexity": cx}
    flag = best is not None and (best["r2_val"] >= 1 - 1e-6 or best["score"] >= ans_score - 0.02)
    rec = {"dataset": c["dataset"], "noise": c["noise"], "flag": bool(flag), "seconds": dt, "answer": {"r2_val": c["r2_val"], "r2_test": c["r2_test"], "score": ans_score}, "seed": best}
    out.write(json.dumps(rec) + "\n"); out.flush()
    print(c["dataset"], c["noise"], flag, round(dt, 2), best and round(best["r2_val"], 6), round(c["r2_val"], 6), flush=True)
