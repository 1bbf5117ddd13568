"""Linear probes of expression properties from z (paper App. "Latent Space Property Decoding").

    python experiments/probe.py --n=5000 --checkpoint=DIR
    python experiments/probe.py --random_model=tiny --n=500   # smoke test: untrained model

As in the paper: --n expressions from the held-out (test) split of the generated corpus
(pipeline.split_of), each encoded by the full encoder, z = f(tokens, D), on its own freshly
drawn scatter D (drawn exactly as for a training example: 200 points from U(-10, 10)^k, a
random 128..200 of them kept). Each of the paper's seven properties is read off the tree; per
property a logistic regression (L2, C=1) is fit on a stratified 80/20 split (the paper's
4000/1000) and scored on the 20%: accuracy, AUC for binary targets, and the majority-class
baseline (the training part's most frequent label, scored on the test part).

Writes probe.csv and probe.md to --out_dir (default experiments/results/probe/).
"""

from __future__ import annotations

import csv
import pathlib
import sys
import time

import numpy as np
from absl import flags

from lee_jax import cli
from lee_jax import expr as E

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import latent  # noqa: E402  (experiments/latent.py, beside this script)

_BATCH = flags.DEFINE_integer("batch", 256, "Expressions per encoder call (a power of two).")
_TEST_FRACTION = flags.DEFINE_float("test_fraction", 0.2, "Probe test share (paper: 1000 of 5000).")

# name -> (paper's row label, which operators make it true); num_variables and high_dim are
# counts of the distinct variables, which the grammar's coverage makes the declared k.
TRIG = {"sin", "cos", "tan", "tanh"}
LOG_EXP = {"log", "exp"}
NOT_POLYNOMIAL = TRIG | LOG_EXP | {"abs", "sqrt"}  # the paper's definition (division allowed)
PROPERTIES = {
    "has_trig": "has trig (sin/cos/tan/tanh)",
    "has_log_exp": "has log/exp",
    "has_sq_cube": "has sq/cube (x^2 or x^3)",
    "has_division": "has division",
    "is_polynomial": "is polynomial (no trig, log/exp, abs, sqrt)",
    "high_dim": "high-dim (n_vars >= 5)",
    "num_variables": "num_variables (10-class)",
}
COLUMNS = ("property", "classes", "true_pct", "n_train", "n_test", "majority_acc", "test_acc",
           "test_auc", "model")


def properties(tree: E.Node) -> dict[str, int]:
  """The seven labels of one expression tree."""
  ops = {n.name for n in E.walk(tree)}
  k = len(E.variables_used(tree))
  return {"has_trig": int(bool(ops & TRIG)), "has_log_exp": int(bool(ops & LOG_EXP)),
          "has_sq_cube": int(bool(ops & {"sq", "cube"})), "has_division": int("div" in ops),
          "is_polynomial": int(not ops & NOT_POLYNOMIAL), "high_dim": int(k >= 5),
          "num_variables": k}


def majority_baseline(y_train: np.ndarray, y_test: np.ndarray) -> float:
  """Accuracy on y_test of always answering y_train's most frequent label (ties: smallest)."""
  values, counts = np.unique(y_train, return_counts=True)
  return float(np.mean(np.asarray(y_test) == values[np.argmax(counts)]))


def split_indices(labels: np.ndarray, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
  """A stratified train/test split, or a plain one when some class has a single member."""
  from sklearn.model_selection import train_test_split

  idx = np.arange(len(labels))
  stratify = labels if np.unique(labels, return_counts=True)[1].min() >= 2 else None
  try:
    return train_test_split(idx, test_size=test_fraction, random_state=seed, stratify=stratify)
  except ValueError:  # too few test rows for one per class
    return train_test_split(idx, test_size=test_fraction, random_state=seed)


def probe(z: np.ndarray, labels: np.ndarray, test_fraction: float, seed: int) -> dict:
  """One property's probe: logistic regression (L2, C=1) on z, scored on the held-out part."""
  from sklearn.linear_model import LogisticRegression
  from sklearn.metrics import roc_auc_score
  from threadpoolctl import threadpool_limits

  labels = np.asarray(labels)
  train, test = split_indices(labels, test_fraction, seed)
  classes = np.unique(labels)
  row = {"classes": len(classes), "n_train": len(train), "n_test": len(test),
         "true_pct": 100 * float(np.mean(labels == 1)) if len(classes) <= 2 else float("nan"),
         "majority_acc": majority_baseline(labels[train], labels[test]), "test_auc": float("nan")}
  if len(np.unique(labels[train])) < 2:  # nothing to separate: the probe is the majority rule
    return {**row, "test_acc": row["majority_acc"]}
  with threadpool_limits(1):  # a few thousand rows: BLAS threads only contend with XLA's pool
    clf = LogisticRegression(C=1.0, max_iter=2000).fit(z[train], labels[train])
  row["test_acc"] = float(np.mean(clf.predict(z[test]) == labels[test]))
  if len(classes) == 2 and len(np.unique(labels[test])) == 2:
    row["test_auc"] = float(roc_auc_score(labels[test], clf.predict_proba(z[test])[:, 1]))
  return row


def run(z: np.ndarray, trees: list[E.Node], test_fraction: float, seed: int) -> list[dict]:
  """Every property's probe row, in the paper's order."""
  labels = [properties(t) for t in trees]
  return [{"property": name, **probe(z, np.array([l[name] for l in labels]), test_fraction, seed)}
          for name in PROPERTIES]


def to_markdown(rows: list[dict], label: str, n: int, d_z: int) -> str:
  fmt = lambda v, spec: "--" if not np.isfinite(v) else format(v, spec)
  lines = [f"# Property linear probes (paper Table 6) -- {label}", "",
           f"{n} held-out expressions, z in R^{d_z} from tokens + scatter; logistic regression "
           f"(L2, C=1) per property on a stratified {rows[0]['n_train']}/{rows[0]['n_test']} "
           "split. Majority = always the training part's most frequent label.", "",
           "| Property | True % | Majority acc | Test acc | Test AUC |", "|---|---:|---:|---:|---:|"]
  for r in rows:
    lines.append(f"| {PROPERTIES[r['property']]} | {fmt(r['true_pct'], '.1f')} | "
                 f"{fmt(r['majority_acc'], '.3f')} | {fmt(r['test_acc'], '.3f')} | "
                 f"{fmt(r['test_auc'], '.3f')} |")
  return "\n".join(lines) + "\n"


def main(argv):
  del argv
  n = latent.n_or(5000)
  if n < 20 or _BATCH.value < 1 or not 0 < _TEST_FRACTION.value < 1:
    cli.fail("need --n >= 20, --batch >= 1 and 0 < --test_fraction < 1")
  eng, label = latent.engine_from_flags()
  out = pathlib.Path(latent.OUT_DIR.value or "experiments/results/probe")
  cli.output_dir(out)  # (a file in its place: one line, not FileExistsError)
  t0 = time.perf_counter()
  trees, tokens, scatters = latent.sample_heldout(n, eng.cfg.max_len, latent.SEED.value)
  t1 = time.perf_counter()
  z = latent.encode_all(eng, tokens, scatters, _BATCH.value)
  t2 = time.perf_counter()
  rows = run(z, trees, _TEST_FRACTION.value, latent.SEED.value)
  with (out / "probe.csv").open("w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=COLUMNS)
    w.writeheader()
    w.writerows({**r, "model": label} for r in rows)
  md = to_markdown(rows, label, n, z.shape[1])
  (out / "probe.md").write_text(md)
  print(md)
  print(f"sampled in {t1 - t0:.1f}s, encoded in {t2 - t1:.1f}s, probed in "
        f"{time.perf_counter() - t2:.1f}s; wrote {out / 'probe.csv'} and {out / 'probe.md'}")


if __name__ == "__main__":
  cli.run(main, ValueError)
