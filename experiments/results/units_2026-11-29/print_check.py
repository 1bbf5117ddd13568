import glob, json
from lee_jax import expr as E, trial
prefixes = set()
for f in glob.glob("experiments/results/**/*.jsonl", recursive=True):
  for line in open(f):
    try: r = json.loads(line)
    except ValueError: continue
    if not isinstance(r, dict): continue
    for p in [r.get("prefix")] + [e.get("prefix") for e in (r.get("equations") or []) if isinstance(e, dict)]:
      if isinstance(p, str) and p: prefixes.add(p)
tiny = []
for p in prefixes:
  try: node = E.from_prefix(p.split())
  except Exception: continue
  if any(0 < abs(float(c)) < 1e-9 for c in E.constants(node)): tiny.append(node)
names = [f"x{i}" for i in range(10)]
# (the negligible-terms rule was removed on 2026-11-29 in the forty-fifth session: every term prints)
new_whole, new_terms = trial._whole, getattr(trial, "_without_negligible_terms", lambda a: a)
old_whole = lambda v, rel: abs(v) < 1e15 and abs(v - round(v)) <= rel * max(1.0, abs(v))
changed = 0
for node in tiny:
  trial._whole, trial._without_negligible_terms = old_whole, (lambda a: a)
  a = str(trial.sympy_of(node, names))
  trial._whole, trial._without_negligible_terms = new_whole, new_terms
  b = str(trial.sympy_of(node, names))
  if a != b:
    changed += 1; print("OLD", a[:150], "\n NEW", b[:150])
print(len(tiny), "with tiny constants; printed differently:", changed)
