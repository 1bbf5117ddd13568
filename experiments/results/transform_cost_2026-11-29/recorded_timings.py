"""Seconds the search spent in the transformed seeds ('transform'), in all, on each 10-column
black-box set of the recorded 72-set sweep (a whole trial: every round's call).

  python experiments/results/transform_cost_2026-11-29/recorded_timings.py
"""
import json
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
rows = [json.loads(l) for l in (HERE.parent / "parsimony_2026-11-29" / "blackbox_72.jsonl").open()]
names = {l.split(":")[0] for l in (HERE / "output.txt").read_text().splitlines()}  # the 25
ten = [r for r in rows if r["dataset"] in names]
for r in sorted(ten, key=lambda r: -r["timings_s"].get("transform", 0)):
  t = r["timings_s"].get("transform", 0.0)
  print(f"{r['dataset']}: transform {t:.1f} s of the trial's {r['wall_time_s']:.0f} s")
