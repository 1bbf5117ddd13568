import json
import os
import subprocess
import sys

import pytest

from lee_jax import cli
from lee_jax import plot_training


def test_plot_writes_png_from_metrics(tmp_path):
  with (tmp_path / "metrics.jsonl").open("w") as f:
    for phase in (1, 2):
      for step in range(1, 6):
        f.write(json.dumps({"phase": phase, "step": step, "loss": 5.0 / step, "expr_acc": 0.1 * step}) + "\n")
    f.write('{"phase": 2, "st')  # a line cut off by a kill
  out = plot_training.plot(tmp_path)
  assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 5000


def test_plot_missing_workdir_is_a_clear_error(tmp_path):
  with pytest.raises(plot_training.PlotError, match="metrics.jsonl does not exist"):
    plot_training.plot(tmp_path / "nope")


def _workdir(tmp_path, *lines):
  (tmp_path / "metrics.jsonl").write_text("".join(line + "\n" for line in lines))
  return tmp_path


GOOD = '{"phase": 1, "step": 1, "loss": 2.0}'


@pytest.mark.parametrize("line, match", [
    ('{"step": 1, "loss": 2.0}', "line 2: no 'phase' key"),
    ('{"phase": 1, "loss": 2.0}', "line 2: no 'step' key"),
    ("[1, 2]", "line 2: expected a JSON object, got list"),
    ('{"phase": 1, "step": 1, "loss": "x"}', "line 2: 'loss' is 'x', expected a number"),
    ('{"phase": 1, "step": 1, "loss": null}', "line 2: 'loss' is None, expected a number"),
    ('{"phase": "a", "step": 1, "loss": 2.0}', "line 2: 'phase' is 'a', expected a non-negative"),
    ('{"phase": 1, "step": 1.5, "loss": 2.0}', "line 2: 'step' is 1.5, expected a non-negative"),
])
def test_a_malformed_metrics_line_names_the_file_and_line(tmp_path, line, match):
  # A line cut off by a kill is still skipped; the bad line after it is the error.
  wd = _workdir(tmp_path, GOOD, line, '{"phase": 1, "st')
  with pytest.raises(plot_training.PlotError, match=f"metrics.jsonl {match}"):
    plot_training.plot(wd)
  assert not (wd / "training_curves.png").exists()


def test_metrics_without_any_quantity_is_a_clear_error(tmp_path):
  wd = _workdir(tmp_path, '{"phase": 1, "step": 1, "time": 3.0}')
  with pytest.raises(plot_training.PlotError, match="no quantity to plot"):
    plot_training.plot(wd)


def test_an_unknown_image_format_is_refused_before_drawing(tmp_path):
  with pytest.raises(plot_training.PlotError, match="unknown image format 'xyz'.*png"):
    plot_training.plot(_workdir(tmp_path, GOOD), tmp_path / "x.xyz")


@pytest.mark.parametrize("out, match", [
    ("/nonexistent/x.png", "directory /nonexistent does not exist"),
    (".", "is a directory"),
])
def test_an_unwritable_out_is_refused_before_drawing(tmp_path, out, match):
  with pytest.raises(cli.PathError, match=match):
    plot_training.plot(_workdir(tmp_path, GOOD), tmp_path / out if out == "." else out)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs Linux /proc")
def test_out_in_proc_is_one_error_not_a_traceback(tmp_path):
  # As root /proc passes the writable check; the write itself must still fail cleanly.
  with pytest.raises((plot_training.PlotError, cli.PathError), match="/proc/x.png"):
    plot_training.plot(_workdir(tmp_path, GOOD), "/proc/x.png")


def test_out_overwrites_and_an_extensionless_out_is_png_at_that_path(tmp_path):
  wd = _workdir(tmp_path, GOOD)
  (tmp_path / "old.png").write_bytes(b"stale")  # regenerating curves replaces the old file
  assert plot_training.plot(wd, tmp_path / "old.png").read_bytes()[:4] == b"\x89PNG"
  out = plot_training.plot(wd, tmp_path / "curves")
  assert out == tmp_path / "curves" and out.read_bytes()[:4] == b"\x89PNG"


def test_cli_bad_metrics_is_one_line_and_exit_2(tmp_path):
  wd = _workdir(tmp_path, "[1, 2]")
  r = subprocess.run([sys.executable, "-m", "lee_jax.plot_training", str(wd)],
                     capture_output=True, text=True, timeout=120)
  assert r.returncode == 2, r.stderr
  assert r.stderr.splitlines() == [f"error: {wd}/metrics.jsonl line 1: expected a JSON object, got list"]


def test_a_metrics_line_that_is_not_json_is_an_error_not_skipped(tmp_path):
  # only a line that begins a JSON object and does not parse is a write cut off by a kill
  wd = _workdir(tmp_path, GOOD, "not json at all", GOOD)
  with pytest.raises(plot_training.PlotError, match="metrics.jsonl line 2: not JSON"):
    plot_training.plot(wd)


def test_an_existing_out_file_needs_overwrite_the_default_one_is_redrawn(tmp_path):
  wd = _workdir(tmp_path, GOOD)
  keep = tmp_path / "keep.png"
  keep.write_bytes(b"KEEP")
  with pytest.raises(cli.PathError, match="keep.png exists; pass --overwrite"):
    plot_training.plot(wd, keep, overwrite=False)
  assert keep.read_bytes() == b"KEEP"
  assert plot_training.plot(wd, keep, overwrite=True) == keep and keep.stat().st_size > 1000
  first = plot_training.plot(wd, overwrite=False)  # WORKDIR/training_curves.png: always redrawn
  assert plot_training.plot(wd, overwrite=False) == first


def test_replayed_and_rerun_steps_draw_once_in_step_order_with_breaks_between_phases():
  # A resume after Ctrl-C logs steps 120-160 again, and phase 1 run again after phase 2
  # logs after it: the curves went back and forth (zigzags, a line from phase 2 to 1).
  rec = lambda phase, step, **kw: {"phase": phase, "step": step, **kw}
  records = ([rec(1, s, loss=1.0) for s in (100, 120, 140, 160)]
             + [rec(1, s, loss=0.5) for s in (120, 140, 143)]  # the replayed tail
             + [rec(2, s, loss=0.4, align=0.1) for s in (10, 20)]
             + [rec(1, 170, loss=0.3)])  # phase 1 again, later in the file
  starts, lines = plot_training.curves(records)
  assert starts == [(0, 1), (170, 2)]
  xs, ys = lines["loss"]
  # the resumed run's steps replace the stopped run's from 120 on (its 160 too), in order
  assert xs[:5] == [100, 120, 140, 143, 170] and ys[:5] == [1.0, 0.5, 0.5, 0.5, 0.3]
  assert xs[5] != xs[5] and xs[6:] == [180, 190]  # a NaN break at the phase change
  assert lines["align"] == ([180, 190], [0.1, 0.1])
