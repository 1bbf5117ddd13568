"""Answers whose recorded prefix (constants at 3 digits) holds a magnitude twice and counts
fewer nodes than the recorded complexity: near-equal constants that blocked SymPy."""
import json, sys, itertools
from lee_jax import expr as E, complexity
for f in sys.argv[1:]:
    hits = 0
    for l in open(f):
        r = json.loads(l)
        if not r.get('prefix'): continue
        n = E.from_prefix(r['prefix'].split())
        c = [abs(v) for v in E.constants(n)]
        if len(c) == len(set(c)): continue
        cx = complexity.complexity(n)
        if cx < r['complexity']:
            hits += 1
            print(f.split('/')[-2][:20], f.split('/')[-1], r['dataset'], r['noise'], r['complexity'], '->', cx, r['r2_test'], r['expression'][:70], flush=True)
    print(f, hits, flush=True)
