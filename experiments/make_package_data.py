"""Builds lee_jax/data/ from the offline SRBench copies in ../shared/data (dev time only).

  python experiments/make_package_data.py --shared_dir ../shared/data

Writes, under lee_jax/data/:
  pmlb/strogatz_<name>/strogatz_<name>.tsv.gz + metadata.yaml   (label,x,y -> x,y,target)
  pmlb/<blackbox>/<blackbox>.tsv.gz + metadata.yaml              (copied as they are)
  feynman/feynman_*.metadata.yaml                                (no rows: regenerated)

Nothing in lee_jax/ reads ../shared at run time; rerunning this script reproduces the
package data byte for byte (gzip headers carry no file name or time stamp).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import pathlib
import shutil

REPO = pathlib.Path(__file__).resolve().parent.parent
OUT = REPO / "lee_jax" / "data"


def write_tsv_gz(path: pathlib.Path, header: list[str], rows: list[list[str]]) -> None:
  text = io.StringIO()
  text.write("\t".join(header) + "\n")
  for r in rows:
    text.write("\t".join(r) + "\n")
  # mtime=0 and no file name in the header keep the output reproducible.
  with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
    gz.write(text.getvalue().encode())


def convert_strogatz(src: pathlib.Path, dst: pathlib.Path) -> int:
  n = 0
  for csv_path in sorted(src.glob("strogatz_*.csv")):
    name = csv_path.stem
    with open(csv_path, newline="") as f:
      rows = list(csv.reader(f))
    header, body = rows[0], [r for r in rows[1:] if r]
    if header != ["label", "x", "y"]:
      raise SystemExit(f"{csv_path}: unexpected header {header}")
    out_dir = dst / name
    out_dir.mkdir(parents=True, exist_ok=True)
    # Keep the text values: no float round trip, so no precision is lost.
    write_tsv_gz(out_dir / f"{name}.tsv.gz", ["x", "y", "target"], [[x, y, lab] for lab, x, y in body])
    shutil.copyfile(src / f"{name}.metadata.yaml", out_dir / "metadata.yaml")
    n += 1
  return n


def copy_blackbox(src: pathlib.Path, dst: pathlib.Path) -> int:
  n = 0
  for d in sorted(p for p in src.iterdir() if p.is_dir()):
    out_dir = dst / d.name
    out_dir.mkdir(parents=True, exist_ok=True)
    for f in (f"{d.name}.tsv.gz", "metadata.yaml"):
      shutil.copyfile(d / f, out_dir / f)
    n += 1
  return n


def copy_feynman(src: pathlib.Path, dst: pathlib.Path) -> int:
  dst.mkdir(parents=True, exist_ok=True)
  files = sorted(src.glob("feynman_*.metadata.yaml"))
  for f in files:
    shutil.copyfile(f, dst / f.name)
  return len(files)


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--shared_dir", default=str(REPO.parent / "shared" / "data"),
                      help="the offline SRBench copies (default: ../shared/data from the repo)")
  parser.add_argument("--out_dir", default=str(OUT))
  args = parser.parse_args()
  shared, out = pathlib.Path(args.shared_dir), pathlib.Path(args.out_dir)
  for sub in ("pmlb", "feynman"):
    shutil.rmtree(out / sub, ignore_errors=True)
  counts = {
      "strogatz": convert_strogatz(shared / "strogatz", out / "pmlb"),
      "blackbox": copy_blackbox(shared / "pmlb_blackbox", out / "pmlb"),
      "feynman": copy_feynman(shared / "feynman", out / "feynman"),
  }
  print(", ".join(f"{k}: {v}" for k, v in counts.items()), "->", out)


if __name__ == "__main__":
  main()
