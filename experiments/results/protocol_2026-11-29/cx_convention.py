"""Project complexity (SymPy-simplified preorder count, n-ary Add/Mul) vs. a binary expression
tree's node count (what GP-GOMEA's get_n_nodes and similar GP sizes count) for the same answers."""
import json, sys, numpy as np, sympy
from lee_jax import complexity as C
def tree_nodes(prefix):
  t = prefix.split(); n = 0; i = 0
  while i < len(t):
    if t[i] in ('+', '-') and i + 8 < len(t) and t[i+2] == '.':  # 9-token constant
      i += 9
    else:
      i += 1
    n += 1
  return n
for path in sys.argv[1:]:
  rows = [json.loads(l) for l in open(path) if l.strip()]
  rep = np.array([r["complexity"] for r in rows], float)
  tree = np.array([tree_nodes(r["prefix"]) for r in rows], float)
  print(path.split('results/')[-1], "n", len(rows), "reported (SymPy-simplified) mean %.2f" % rep.mean(),
        "| binary-tree nodes of the same answers mean %.2f" % tree.mean(), "| ratio %.2f" % (tree.mean()/rep.mean()))
x, y, z = sympy.symbols('x y z', real=True)
for e in [x - y, x / y, -x, x*y*z + x*y + 1.5, 2.0*x + 3.0*y + 1.2*z + 0.5]:
  print(f"  {str(e):28s} SymPy preorder nodes = {C.node_count(e)}")
