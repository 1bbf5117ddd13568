"""A parent and a forked child each count 40 trees 5 times with one complexity helper.

Fifty-ninth session: on the code before ba5349e the child used the parent's helper and one
of the two died with a KeyError in Job.result (answers crosswise); after it, 0 wrong counts
in both. Run: python experiments/results/isolated_2026-12-01/fork_crosswise.py
"""
import os, numpy as np, warnings
warnings.simplefilter("ignore")
from lee_jax import complexity, grammar
rng = np.random.default_rng(1)
A = [grammar.sample(rng, n_vars=2)[0] for _ in range(40)]
B = [grammar.sample(rng, n_vars=3)[0] for _ in range(40)]
def here(ts):
  complexity.cache.data.clear()
  return complexity.complexities(ts, helpers=0)
ea, eb = here(A), here(B)
complexity.cache.data.clear(); complexity.complexities(A[:3], helpers=1)  # helper started
pid = os.fork()
mine, exp = (B, eb) if pid == 0 else (A, ea)
bad = 0
for _ in range(5):
  complexity.cache.data.clear()
  got = complexity.complexities(mine, helpers=1)
  bad += sum(g != e for g, e in zip(got, exp))
print("child" if pid == 0 else "parent", "wrong counts:", bad, flush=True)
if pid == 0: os._exit(0)
os.waitpid(pid, 0)
