"""Training metrics: one JSON object per line in WORKDIR/metrics.jsonl, and TensorBoard
event files in WORKDIR/tensorboard/ when the `tensorboard` package is importable."""

from __future__ import annotations

import pathlib
import time

from lee_jax import jsonl


class MetricsLog:
  """Append-only: a resumed run keeps what the killed run already wrote."""

  def __init__(self, workdir: str | pathlib.Path):
    self.path = pathlib.Path(workdir) / "metrics.jsonl"
    self.path.parent.mkdir(parents=True, exist_ok=True)
    self._tb = _tensorboard_writer(pathlib.Path(workdir) / "tensorboard")

  def write(self, record: dict) -> None:
    jsonl.append(self.path, record)
    if self._tb is not None:
      self._tb(record)


def read(path: str | pathlib.Path) -> list[dict]:
  """Every record of a metrics.jsonl; a line cut off by a kill is skipped (`jsonl.read`)."""
  return jsonl.read(path)


def _tensorboard_writer(logdir: pathlib.Path):
  try:
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
  except ImportError:
    return None
  writer = EventFileWriter(str(logdir))

  def write(record: dict) -> None:
    values = [summary_pb2.Summary.Value(tag=f"phase{record.get('phase', 0)}/{k}", simple_value=float(v))
              for k, v in record.items() if isinstance(v, (int, float)) and k not in ("step", "phase")]
    writer.add_event(event_pb2.Event(wall_time=time.time(), step=int(record.get("step", 0)),
                                     summary=summary_pb2.Summary(value=values)))
    writer.flush()

  return write
