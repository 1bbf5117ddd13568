"""SRBench's symbolic-solution test (experiment/symbolic_utils.py + assess_symbolic_model.py)
applied to the project's recorded answers; compares with the project's 'exact' (R2>=1-1e-9)."""
import json, sys, signal
from sympy import Symbol, simplify, Float, preorder_traversal
from sympy.parsing.sympy_parser import parse_expr
from lee_jax import datasets as D
class TO(Exception): pass
def h(*a): raise TO
signal.signal(signal.SIGALRM, h)
def round_floats(ex1):
  ex2 = ex1
  for a in preorder_traversal(ex1):
    if isinstance(a, Float): ex2 = ex2.subs(a, round(a, 6))
  return ex2
def symsol(model_str, true_str, names):
  loc = {k: Symbol(k) for k in names}
  m = parse_expr(model_str.replace('^','**'), local_dict=loc)
  m = round_floats(simplify(m, ratio=1))
  t = parse_expr(true_str.replace('pi','3.1415926535'), local_dict=loc)
  d = round_floats(t - m); f = round_floats(m / t)
  if not d.is_constant() or f.is_constant(): d = simplify(d, ratio=1)
  return str(d) == '0' or d.is_constant() or f.is_constant()
path = sys.argv[1]
rows = [json.loads(l) for l in open(path) if l.strip()]
res = collections = {"exact&sym":0,"exact&notsym":[],"notexact&sym":[],"timeout":[]}
for r in rows:
  ds = D.load_dataset(r["dataset"], feynman_rows=1000)
  r2 = r.get("r2_test") or -1
  exact = r2 >= 1-1e-9
  signal.alarm(20)
  try:
    from lee_jax import expr as E, trial as T
    node = E.from_prefix(r["prefix"].split())
    if r.get("constants"): node = E.with_constants(node, r["constants"])
    full = str(T.sympy_of(node, list(ds.feature_names), digits=None))  # what srbench_method.model() prints
    s = symsol(full, ds.formula, ds.feature_names) if r2 > 0.5 else False
  except TO:
    res["timeout"].append(r["dataset"]); continue
  except Exception as e:
    s = False; print("ERR", r["dataset"], type(e).__name__, str(e)[:80])
  finally:
    signal.alarm(0)
  if exact and s: res["exact&sym"] += 1
  elif exact: res["exact&notsym"].append((r["dataset"], r["expression"], ds.formula))
  elif s: res["notexact&sym"].append((r["dataset"], round(r2,6), r["expression"], ds.formula))
n = len(rows)
print(path.split('results/')[-1], "rows", n, "exact&sym", res["exact&sym"], "timeouts", len(res["timeout"]), res["timeout"])
print("  exact but NOT SRBench-symbolic:", len(res["exact&notsym"]))
for x in res["exact&notsym"]: print("    ", x)
print("  SRBench-symbolic but not exact:", len(res["notexact&sym"]))
for x in res["notexact&sym"]: print("    ", x)
