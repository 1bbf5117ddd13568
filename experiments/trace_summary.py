"""Where a traced step's time goes, as text: the top kernels of a `jax.profiler` trace.

    with jax.profiler.trace(DIR, create_perfetto_trace=True):
      ...  # N steps
    print(trace_summary.summarize(DIR, steps=N))

A lease brings back a few lines instead of a trace file (tens of MiB for a `paper` step).
For each accelerator in the trace ("/device:GPU:0"): kernel time and busy time (the union
of its streams' kernels) per step against the traced span, so launch gaps show, and its
top kernels. Without one (XLA on the CPU) the same for the host's XLA threads.
"""

from __future__ import annotations

import collections
import gzip
import json
import pathlib


# Kernel kinds by name (XLA's GPU kernels, cuBLAS/cuDNN/CUTLASS), first match wins: where a
# step's time goes between the tensor-core work the MFU counts and everything else.
KINDS = (("matmul", ("gemm", "cublas", "cutlass", "matmul", "dot", "ynn_fusion")),
         ("attention", ("cudnn", "flash", "fmha", "attention", "sdpa")),
         ("copy/transpose", ("copy", "transpose", "memcpy", "memset")),
         ("reduction", ("reduce", "reduction")),
         ("fused elementwise", ("fusion",)))


def kind(name: str) -> str:
  low = name.lower()
  return next((k for k, keys in KINDS if any(w in low for w in keys)), "other")


def _busy(intervals: list[tuple[float, float]]) -> float:
  """Length of the union of [start, end) intervals."""
  total, end = 0.0, float("-inf")
  for s, e in sorted(intervals):
    if e > end:
      total += e - max(s, end)
      end = e
  return total


def summarize_events(events: list[dict], steps: int, top: int = 15) -> str:
  """Chrome-trace events (perfetto's `traceEvents`) of `steps` steps -> a text summary.
  Durations are microseconds in the trace, milliseconds per step here."""
  procs = {e["pid"]: e["args"]["name"] for e in events
           if e.get("ph") == "M" and e.get("name") == "process_name"}
  threads = {(e["pid"], e.get("tid")): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
  spans = [e for e in events if e.get("ph") == "X" and "dur" in e]
  devices = sorted(p for p, n in procs.items() if n.startswith("/device:"))
  if devices:
    groups = []
    for p in devices:
      evs = [e for e in spans if e["pid"] == p]
      # a GPU's trace also has derived lines ("XLA Ops", "XLA Modules") over the same time
      # as its streams' kernels: count the streams only, where there are any
      streams = {k for k, n in threads.items() if k[0] == p and n.startswith("Stream")}
      if streams:
        evs = [e for e in evs if (p, e.get("tid")) in streams]
      groups.append((procs[p], evs))
  else:  # the CPU backend: XLA's own threads, not Python's
    groups = [("XLA threads on the host", [
        e for e in spans if "XLA" in threads.get((e["pid"], e.get("tid")), "")])]
  if not spans:
    return "trace: no timed events"
  first = min(e["ts"] for e in spans)
  last = max(e["ts"] + e["dur"] for e in spans)
  per = 1e3 * max(steps, 1)  # us -> ms per step
  lines = [f"trace: {steps} step(s), {(last - first) / per:.2f} ms per step traced"]
  for name, evs in groups:
    if not evs:
      lines.append(f"{name}: no kernels")
      continue
    total = sum(e["dur"] for e in evs)
    busy = _busy([(e["ts"], e["ts"] + e["dur"]) for e in evs])
    lines.append(f"{name}: kernels {total / per:.2f} ms per step, busy {busy / per:.2f} ms "
                 f"({100 * busy / max(last - first, 1e-9):.0f}% of the span), "
                 f"{len(evs) / max(steps, 1):.0f} kernels per step")
    by_name, count, kinds = collections.Counter(), collections.Counter(), collections.Counter()
    for e in evs:
      by_name[e["name"]] += e["dur"]
      count[e["name"]] += 1
      kinds[kind(e["name"])] += e["dur"]
    lines.append("  by kind: " + ", ".join(f"{k} {v / per:.2f} ms ({100 * v / total:.0f}%)"
                                           for k, v in kinds.most_common()))
    for k, v in by_name.most_common(top):
      lines.append(f"  {v / per:8.3f} ms {100 * v / total:5.1f}% x{count[k] / max(steps, 1):<5.0f} "
                   f"{k[:100]}")
  return "\n".join(lines)


def summarize(trace_dir: str | pathlib.Path, steps: int, top: int = 15) -> str:
  """The newest perfetto trace under trace_dir (`*.trace.json.gz`), summarized."""
  found = sorted(pathlib.Path(trace_dir).rglob("*.trace.json.gz"), key=lambda p: p.stat().st_mtime)
  if not found:
    return f"trace: no perfetto trace under {trace_dir}"
  with gzip.open(found[-1], "rt") as f:
    data = json.load(f)
  events = data["traceEvents"] if isinstance(data, dict) else data
  return summarize_events(events, steps, top)
