"""`python -m lee_jax.plot_training WORKDIR`: training curves from WORKDIR/metrics.jsonl to PNG.

One panel per logged quantity (loss terms, token accuracies, gradient norm, step/s), steps
counted across phases with a dashed line where each phase begins.
"""

from __future__ import annotations

import pathlib
import reprlib

from absl import flags

from lee_jax import cli
from lee_jax import datasets
from lee_jax import jsonl

_SKIP = ("phase", "step", "time")


class PlotError(ValueError):
  pass


def _read(path: pathlib.Path) -> list[dict]:
  """The records of metrics.jsonl as `jsonl.numbered` reads them (a line cut off by a kill is
  skipped), checked here so that a foreign or hand-edited file is one error naming its line."""
  try:
    rows = jsonl.numbered(path)
  except jsonl.JsonlError as e:
    raise PlotError(str(e)) from None
  except (OSError, UnicodeDecodeError) as e:
    why = getattr(e, "strerror", None) or str(e).splitlines()[0]
    raise PlotError(f"{path}: cannot read it ({why})") from None
  out = []
  for n, r in rows:
    where = f"{path} line {n}"
    if not isinstance(r, dict):
      raise PlotError(f"{where}: expected a JSON object, got {type(r).__name__}")
    # The trainer writes phase and step on every line; without them a point has no x position.
    for k in ("phase", "step"):
      if k not in r:
        raise PlotError(f"{where}: no {k!r} key")
      if not datasets.is_integer(r[k]) or r[k] < 0:
        raise PlotError(f"{where}: {k!r} is {reprlib.repr(r[k])}, expected a non-negative integer")
    for k, v in r.items():
      if not datasets.is_number(v):
        raise PlotError(f"{where}: {k!r} is {reprlib.repr(v)}, expected a number")
    out.append(r)
  return out


def curves(records: list[dict]) -> tuple[list[tuple[int, int]], dict[str, tuple[list, list]]]:
  """(each phase's start on the all-phases step axis with its number, each quantity's x and
  y values) from metrics records. A resumed run logs again the steps after its last save, and
  an earlier phase run again logs after the later ones: a phase's record replaces those of
  its steps from there on (a run stopped without saving logged steps the resumed one has
  not reached), and phases go in order (the curves drew back-lines and zigzags). A NaN
  breaks each line where the phase changes: a term phase 4 does not log is no line across it."""
  by_phase: dict[int, list[dict]] = {}
  for r in records:
    kept = by_phase.setdefault(r["phase"], [])
    while kept and kept[-1]["step"] >= r["step"]:
      kept.pop()
    kept.append(r)
  records = [r for p in sorted(by_phase) for r in by_phase[p]]
  # Global step: phases run one after another; a resumed phase continues its own count.
  offset, phase_len, starts = 0, {}, []
  for r in records:
    phase_len[r["phase"]] = max(phase_len.get(r["phase"], 0), r["step"])
  base = {}
  for p in sorted(phase_len):
    base[p] = offset
    starts.append((offset, p))
    offset += phase_len[p]
  lines: dict[str, tuple[list, list]] = {}
  last_phase: dict[str, int] = {}
  for r in records:
    for k, v in r.items():
      if k in _SKIP:
        continue
      xs, ys = lines.setdefault(k, ([], []))
      if k in last_phase and last_phase[k] != r["phase"]:
        xs.append(float("nan"))
        ys.append(float("nan"))
      xs.append(base[r["phase"]] + r["step"])
      ys.append(v)
      last_phase[k] = r["phase"]
  return starts, lines


def plot(workdir: str | pathlib.Path, out: str | pathlib.Path | None = None,
         overwrite: bool = True) -> pathlib.Path:
  """The curves of WORKDIR/metrics.jsonl drawn to `out` (default WORKDIR/training_curves.png,
  which is always redrawn); overwrite=False: an existing `out` is an error."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  from matplotlib.figure import Figure

  workdir = pathlib.Path(workdir)
  path = workdir / "metrics.jsonl"
  if not path.is_file():
    raise PlotError(f"{path} does not exist; is {workdir} a training workdir?")
  # The output is checked before the drawing, so a bad --out fails fast and cleanly.
  flag = "--out" if out else "output"
  out = cli.output_file(out if out else workdir / "training_curves.png",
                        overwrite=overwrite or not out, flag=flag)
  fmt = out.suffix[1:].lower() or "png"  # no suffix: PNG at exactly that path
  formats = Figure().canvas.get_supported_filetypes()
  if fmt not in formats:
    raise PlotError(f"{flag} {out}: unknown image format {fmt!r} (one of {', '.join(sorted(formats))})")
  records = _read(path)
  if not records:
    raise PlotError(f"{path} holds no metrics yet")
  starts, lines = curves(records)
  keys = sorted(lines)
  if not keys:
    raise PlotError(f"{path} holds only {', '.join(_SKIP)}: no quantity to plot")
  cols = 3
  rows = -(-len(keys) // cols)
  fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 2.8 * rows), squeeze=False)
  for ax, key in zip(axes.flat, keys):
    xs, ys = lines[key]
    ax.plot(xs, ys, lw=1)
    shown = [v for v in ys if v == v]  # (not the NaN breaks)
    if key in ("loss", "expr", "refine", "kl", "align", "val_align", "grad_norm") and all(v > 0 for v in shown):
      ax.set_yscale("log")
    for x0, p in starts:
      ax.axvline(x0, color="gray", ls="--", lw=0.6)
      ax.text(x0, 1.0, f" P{p}", transform=ax.get_xaxis_transform(), fontsize=7, va="top")
    ax.set_title(key, fontsize=9)
    ax.tick_params(labelsize=7)
  for ax in list(axes.flat)[len(keys):]:
    ax.axis("off")
  fig.supxlabel("step (all phases)", fontsize=9)
  fig.tight_layout()
  try:
    cli.write_atomically(out, lambda tmp: fig.savefig(tmp, dpi=110, format=fmt))
  except (OSError, RuntimeError) as e:
    # What output_file cannot see: /proc as root, a full disk, pgf without a LaTeX install.
    why = getattr(e, "strerror", None) or str(e).splitlines()[0]
    raise PlotError(f"{flag} {out}: cannot write it ({why})") from None
  finally:
    plt.close(fig)
  return out


def main(argv):
  if len(argv) != 2:
    raise PlotError("usage: python -m lee_jax.plot_training WORKDIR [--out file.png]")
  print(plot(argv[1], flags.FLAGS.out, flags.FLAGS.overwrite))


if __name__ == "__main__":
  # Defined here, not at import: a test session imports this beside scripts with an
  # --overwrite of their own (absl flags are one global set).
  flags.DEFINE_string("out", None, "PNG path (default WORKDIR/training_curves.png, redrawn "
                      "each time).")
  flags.DEFINE_bool("overwrite", False, "Allow --out to replace an existing file.")
  cli.run(main, PlotError, positional=1)
