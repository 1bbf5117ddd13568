import json, glob
SKIP = {"wall_time_s", "timings_s", "wall_s", "timings", "argv", "time", "elapsed_s", "seconds"}
def strip(o):
  if isinstance(o, dict):
    return {k: strip(v) for k, v in o.items() if k not in SKIP and not k.endswith("_s") and "time" not in k}
  if isinstance(o, list):
    return [strip(v) for v in o]
  return o
for new in sorted(glob.glob("/tmp/ab_new_*.json")):
  old = new.replace("ab_new_", "ab_old_")
  a, b = strip(json.load(open(old))), strip(json.load(open(new)))
  ta, tb = a["trials"][0], b["trials"][0]
  print(new.split("ab_new_")[1], "identical" if a == b else "DIFFER", ta["expression"], ta["r2_test"], "|", tb["expression"], tb["r2_test"])
  if a != b:
    def diff(x, y, path=""):
      if type(x) != type(y): print("  ", path, repr(x)[:80], repr(y)[:80]); return
      if isinstance(x, dict):
        for k in set(x) | set(y): diff(x.get(k), y.get(k), path + "/" + k)
      elif isinstance(x, list):
        if len(x) != len(y): print("  ", path, "len", len(x), len(y)); return
        for i, (u, v) in enumerate(zip(x, y)): diff(u, v, f"{path}[{i}]")
      elif x != y: print("  ", path, repr(x)[:80], repr(y)[:80])
    diff(a, b)
