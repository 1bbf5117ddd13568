"""Which recorded answers and which true laws the pole guard's sign-change check
(score.crosses_pole) rejects on their cell's training split.

    python experiments/results/pole_crossings_2026-11-29/crossings.py RESULTS.jsonl ...

For each distinct (dataset, noise, seed, prefix) with an answer: the cell's split (as
srbench.py), the recorded prefix (3 significant figures), and the check with the rows'
span widened by score.CROSSING_FACTOR spans as in score.bounded. Then every dataset's true law
(where the package knows it and the grammar can write it) on its seed-0 split.
"""
import collections
import json
import sys

import numpy as np

from lee_jax import datasets, evaluate, score
from lee_jax import expr as E


def rejected(node, X, y):
  at_rows = evaluate.evaluate_numpy(node, X)
  span_of = np.concatenate([y, at_rows[np.isfinite(at_rows)]])
  lo, hi = float(span_of.min()), float(span_of.max())
  slack = score.CROSSING_FACTOR * max(hi - lo, 1e-12 * max(abs(lo), abs(hi), 1.0))
  pr = score.probe(X, 1, np.random.default_rng(0))
  return score.crosses_pole(node, pr, lo - slack, hi + slack)


splits = {}
def split(name, noise, seed):
  if (name, noise, seed) not in splits:
    ds = datasets.load_dataset(name)
    splits[name, noise, seed] = (ds, datasets.split(ds.X, ds.y, seed=seed, noise=noise))
  return splits[name, noise, seed]


cells = {}
for path in sys.argv[1:]:
  for line in open(path):
    try:
      r = json.loads(line)
    except ValueError:
      continue
    if r.get("found") and r.get("prefix") and r.get("method", "lee") == "lee":
      cells[(r["dataset"], r["noise"], r["seed"], r["prefix"])] = r.get("r2_test")
print(f"{len(cells)} distinct answers")
hits = collections.Counter()
for (name, noise, seed, prefix), r2_test in sorted(cells.items()):
  try:
    node = E.from_prefix(prefix.split())
    _, p = split(name, noise, seed)
  except Exception:  # a dataset no longer shipped, a prefix of an old grammar
    hits["unreadable"] += 1
    continue
  if rejected(node, p.X_train, p.y_train):
    hits["rejected"] += 1
    print(f"REJECT {name} eps={noise} seed={seed} test_r2={r2_test} {prefix}")
  else:
    hits["kept"] += 1
print(dict(hits))

import keyword
import re

import sympy

laws = collections.Counter()
for info in datasets.list_datasets():
  ds = datasets.load_dataset(info.name)
  if not ds.formula:
    continue
  names = list(ds.feature_names)
  safe = {v: f"{v}_var" for v in names if keyword.iskeyword(v) or v == "pi"}
  text = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: safe.get(m.group(0), m.group(0)), ds.formula)
  try:
    e = E.parse_formula(text, [safe.get(v, v) for v in names])
    e = e.subs({sympy.Symbol(safe.get(v, v), real=True): sympy.Symbol(f"x{i}") for i, v in enumerate(names)})
    e = e.replace(sympy.cot, lambda a: 1 / sympy.tan(a)).replace(
        sympy.sec, lambda a: 1 / sympy.cos(a)).replace(sympy.csc, lambda a: 1 / sympy.sin(a))
    node = E.from_sympy(sympy.nsimplify(e, rational=True))
  except Exception:
    laws["not expressible"] += 1
    continue
  p = datasets.split(ds.X, ds.y, seed=0)
  if rejected(node, p.X_train, p.y_train):
    laws["rejected"] += 1
    print(f"LAW REJECTED {info.name}: {ds.formula}")
  else:
    laws["kept"] += 1
print("true laws:", dict(laws))
