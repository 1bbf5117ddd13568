"""merge.py BASE OUT RESULTS... : BASE's cells with each RESULTS cell (by dataset) in its place."""
import json, sys
base=[json.loads(l) for l in open(sys.argv[1])]
new={}
for f in sys.argv[3:]:
    for l in open(f):
        c=json.loads(l); new[c["dataset"]]=c
idx={c["dataset"]:i for i,c in enumerate(base)}
assert set(new)<=set(idx), set(new)-set(idx)
for k,c in new.items(): base[idx[k]]=c
with open(sys.argv[2],"w") as f:
    for c in base: f.write(json.dumps(c)+"\n")
print(len(new),"replaced of",len(base))
