"""units_probe.py's laws at two more scales of X (1e-8, 1e8): python units_more.py OUT.jsonl"""
import pathlib
import sys
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "units_2026-11-29"))
import units_probe as U
U.CASES.update({"X*1e-8": (1e-8, 1.0), "X*1e8": (1e8, 1.0)})
out = sys.argv[1]
for law, case in [("hypot", "X*1e-20"), ("poly", "X*1e-8"), ("poly", "X*1e8"), ("hypot", "X*1e-8"), ("ratio", "X*1e-8"), ("poly", "base")]:
  U.run(law, case, out)
