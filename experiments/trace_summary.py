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
import re


# Kernel kinds by name (XLA's GPU kernels, cuBLAS/cuDNN/CUTLASS), first match wins: where a
# step's time goes between the tensor-core work the MFU counts and everything else. cuBLAS's
# Hopper GEMMs are named "nvjet_sm90_..." (the fifth lease counted them as "other").
KINDS = (("matmul", ("gemm", "cublas", "cutlass", "matmul", "dot", "nvjet", "ynn_fusion")),
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


def _groups(events: list[dict]) -> tuple[list[dict], list[tuple[str, list[dict]]]]:
  """(all timed events, [(device name, its streams' kernels)]); without an accelerator the
  host's XLA threads stand in for one."""
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
  return spans, groups


def summarize_events(events: list[dict], steps: int, top: int = 15) -> str:
  """Chrome-trace events (perfetto's `traceEvents`) of `steps` steps -> a text summary.
  Durations are microseconds in the trace, milliseconds per step here."""
  spans, groups = _groups(events)
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
  events = load_events(trace_dir)
  if not events:
    return f"trace: no perfetto trace under {trace_dir}"
  return summarize_events(events, steps, top)


def load_events(path: str | pathlib.Path) -> list[dict]:
  """A perfetto trace file's events; a folder: its newest trace ([] if none)."""
  path = pathlib.Path(path)
  if not path.is_file():
    found = sorted(path.rglob("*.trace.json.gz"), key=lambda p: p.stat().st_mtime) if path.is_dir() else []
    if not found:
      return []
    path = found[-1]
  with gzip.open(path, "rt") as f:
    data = json.load(f)
  return data["traceEvents"] if isinstance(data, dict) else data


def top_fusions(events: list[dict], n: int) -> list[str]:
  """The n XLA fusion kernels (not cuBLAS/cuDNN) with the most time on the first device."""
  _, groups = _groups(events)
  total = collections.Counter()
  for e in (groups[0][1] if groups else []):
    # (the CPU trace also holds markers named after a kernel, "end: broadcast_add_fusion.68":
    # no instruction; one was once the second costliest)
    if ("fusion" in e["name"] and re.fullmatch(r"[\w.\-]+", e["name"])
        and kind(e["name"]) not in ("matmul", "attention")):
      total[e["name"]] += e["dur"]
  return [k for k, _ in total.most_common(n)]


def _frames(hlo: str) -> dict[str, str]:
  """stack_frame_id -> "file:line (function)" from an HLO module's source tables."""
  tables, cur = collections.defaultdict(dict), None
  for line in hlo.splitlines():
    if line in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
      cur = line
    elif not line.strip() or line.startswith(("%", "ENTRY", "HloModule")):
      cur = None
    elif cur:
      key, _, val = line.strip().partition(" ")
      tables[cur][key] = val.strip().strip('"')
  fields = lambda v: dict(kv.split("=", 1) for kv in v.strip("{}").split())  # noqa: E731
  out = {}
  for sid, v in tables["StackFrames"].items():
    loc = fields(tables["FileLocations"].get(fields(v).get("file_location_id", ""), "{}"))
    name = tables["FileNames"].get(loc.get("file_name_id", ""), "?")
    fn = tables["FunctionNames"].get(loc.get("function_name_id", ""), "?")
    out[sid] = f"{pathlib.Path(name).name}:{loc.get('line', '?')} ({fn})"
  return out


def fusion_sources(hlo: str, kernel: str, limit: int = 6) -> str:
  """Where a fusion kernel comes from: its instruction's shape in the compiled module's text
  (`compiled.as_text()`) and the JAX ops (op_name, source line) fused into it, most frequent
  first. Kernel names are the instruction names with "." and "-" as "_"."""
  sanitize = lambda name: re.sub(r"[.\-]", "_", name)  # noqa: E731
  inst = next((m for m in re.finditer(r"^\s*(?:ROOT )?%([\w.\-]+) = (.*?) fusion\(.*calls=%([\w.\-]+)",
                                      hlo, re.M) if sanitize(m.group(1)) == sanitize(kernel)), None)
  if inst is None:
    return f"{kernel}: not in the compiled module"
  body = re.search(r"^%" + re.escape(inst.group(3)) + r" .*?\n}", hlo, re.M | re.S)
  frames, ops = _frames(hlo), collections.Counter()
  for m in re.finditer(r'op_name="([^"]*)"(?: stack_frame_id=(\d+))?', body.group(0) if body else ""):
    ops[(m.group(1).split(";")[0][-90:], frames.get(m.group(2) or "", ""))] += 1
  lines = [f"{kernel}: {inst.group(2)[:120]}"]
  lines += [f"    x{c:<3} {op} {src}".rstrip() for (op, src), c in ops.most_common(limit)]
  return "\n".join(lines)
