"""Our black-box answers beside SRBench's published per-dataset medians (R2 clipped at 0).

    python experiments/results/interactions_2026-11-30/peers_blackbox.py \
        ../shared/data/srbench_results/blackbox_results_datasets.csv OLD.jsonl NEW.jsonl

Prints, for all sets, the Friedman sets (name holds "fri") and the rest: our clipped mean
test R2 and complexity before and after, and the six best published methods' mean of each
set's median over SRBench's trials with their mean model size (each method's own measure).
"""
import json
import sys

import numpy as np
import pandas as pd

df = pd.read_csv(sys.argv[1])
med = df.groupby(["algorithm", "dataset"]).r2_zero_test.median().unstack(0)
size = df.groupby(["algorithm", "dataset"]).model_size.median().unstack(0)
old, new = ({json.loads(l)["dataset"]: json.loads(l) for l in open(p) if l.strip()}
            for p in sys.argv[2:4])
sets = list(new)
fri = [d for d in sets if "fri" in d]
for name, sel in (("all", sets), ("Friedman", fri), ("other", [d for d in sets if d not in fri])):
  o, n = (np.mean([max(0.0, run[d]["r2_test"]) for d in sel]) for run in (old, new))
  co, cn = (np.mean([run[d]["complexity"] for d in sel]) for run in (old, new))
  top = med.loc[sel].mean().sort_values(ascending=False).head(6)
  print(f"{name} ({len(sel)} sets): ours {o:.3f} -> {n:.3f}, complexity {co:.1f} -> {cn:.1f}; "
        + "; ".join(f"{k} {v:.3f} ({size.loc[sel][k].mean():.0f})" for k, v in top.items()))
