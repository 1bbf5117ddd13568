"""The cells of a screen (screen.py's OUT) whose best seed would join the pool and win:
its score above the recorded answer's (or validation R2 within 1e-6 of 1) and its
validation R2 above the answer's. The pool's champion scores at least the answer, so
this is the most a seed could change.

    python experiments/results/power_sums_noise_2026-11-30/joins.py SCREEN.jsonl...
"""
import json, sys
for path in sys.argv[1:]:
    for line in open(path):
        c = json.loads(line)
        s, a = c["seed"], c["answer"]
        if s and (s["score"] > a["score"] or s["r2_val"] >= 1 - 1e-6) and s["r2_val"] > a["r2_val"]:
            print(f'{c["dataset"]:22s} eps {c["noise"]}: seed val {s["r2_val"]:.6f} test {s["r2_test"]:.6f} '
                  f'C{s["complexity"]} score {s["score"]:.4f} | answer val {a["r2_val"]:.6f} '
                  f'test {a["r2_test"]:.6f} score {a["score"]:.4f}')
