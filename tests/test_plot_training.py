import json

import pytest

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
