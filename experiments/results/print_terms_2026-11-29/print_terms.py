"""Which recorded answers print differently now that every term prints (2026-11-29, forty-fifth
session): the rule before dropped a sum's term whose coefficient was below 1e-9 of its largest.

    python experiments/results/print_terms_2026-11-29/print_terms.py   # from the repository root
"""
import glob
import json

import sympy

from lee_jax import expr as E
from lee_jax import trial


def legacy(add):
  """The removed rule (trial._without_negligible_terms before this session)."""
  try:
    co = [abs(complex(t.as_coeff_Mul()[0])) for t in add.args]
  except TypeError:
    return add
  top = max(co)
  kept = [t for t, c in zip(add.args, co) if c >= 1e-9 * top]
  return add if len(kept) == len(add.args) else sympy.Add(*kept)


names = [f"x{i}" for i in range(10)]
seen, diff = set(), []
for f in sorted(glob.glob("experiments/results/**/*.jsonl", recursive=True)):
  for line in open(f):
    try:
      r = json.loads(line)
    except ValueError:
      continue
    if not isinstance(r, dict) or not r.get("prefix"):
      continue
    key = (r["prefix"], tuple(r.get("constants") or ()))
    if key in seen:
      continue
    seen.add(key)
    try:
      node = E.from_prefix(r["prefix"].split())
      node = E.with_constants(node, r["constants"]) if r.get("constants") else node
      now = trial.sympy_of(node, names)
      simple = trial.simplified(node, names)
      before = trial.rounded(simple.replace(lambda e: e.is_Add, legacy))
    except Exception:  # (a record this version cannot read back)
      continue
    if str(now) != str(before):
      diff.append((f, str(before), str(now)))
print(len(seen), "distinct answers;", len(diff), "print differently")
for d in diff:
  print(" ", d)
