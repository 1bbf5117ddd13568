"""Replay every cell of a JSONL (--again), timing each; writes one JSON line per cell."""
import json, sys, time, os
sys.path.insert(0, 'experiments')
import parsimony_replay as pr
from absl import flags
flags.FLAGS.mark_as_parsed()
from lee_jax import parsimony
parsimony.LINE_NODES = int(os.environ.get("LN", parsimony.LINE_NODES))
out = open(sys.argv[2], 'w')
for l in open(sys.argv[1]):
    c = json.loads(l)
    t = time.time()
    r = pr.replay(c, True)
    out.write(json.dumps(dict(dataset=c['dataset'], noise=c['noise'], s=time.time() - t,
        r2=r['r2_test'], C=r['complexity'], expr=r['expression'], r2_0=c['r2_test'], C_0=c['complexity'])) + '\n')
    out.flush()
