"""experiments/trace_summary.py: a trace's kernels per step, busy time and kinds."""

import gzip
import json
import pathlib
import re
import sys

import jax
import jax.numpy as jnp

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "experiments"))

import trace_summary  # noqa: E402


def _events():
  meta = [{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/host:CPU"}},
          {"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "/device:GPU:0"}}]
  # two steps on two streams: a 3 us gemm overlapping a 2 us fusion, then a 1 us cuDNN
  # kernel after a 4 us gap; a host event that must not count as a kernel
  kernels = []
  for step in range(2):
    t = 100.0 * step
    kernels += [{"ph": "X", "pid": 2, "tid": 7, "ts": t, "dur": 3.0, "name": "cutlass_gemm_bf16"},
                {"ph": "X", "pid": 2, "tid": 8, "ts": t + 1, "dur": 2.0, "name": "loop_fusion.3"},
                {"ph": "X", "pid": 2, "tid": 7, "ts": t + 7, "dur": 1.0, "name": "cudnn_flash_fwd"}]
  host = [{"ph": "X", "pid": 1, "tid": 3, "ts": 0.0, "dur": 150.0, "name": "python step"}]
  # the device's derived "XLA Ops" line repeats the time: not kernels either
  meta += [{"ph": "M", "pid": 2, "tid": t, "name": "thread_name", "args": {"name": n}}
           for t, n in ((7, "Stream #13(Compute)"), (8, "Stream #14"), (9, "XLA Ops"))]
  ops = [{"ph": "X", "pid": 2, "tid": 9, "ts": 0.0, "dur": 8.0, "name": "dot.1 op"}]
  return meta + kernels + host + ops


def test_device_kernels_busy_time_and_kinds():
  text = trace_summary.summarize_events(_events(), steps=2)
  # kernels 6 us per step = 0.006 ms; busy 3 + 1 = 4 us (the fusion overlaps the gemm)
  assert "/device:GPU:0: kernels 0.01 ms per step, busy 0.00 ms" in text
  assert "3 kernels per step" in text
  assert "matmul 0.00 ms (50%)" in text and "fused elementwise" in text and "attention" in text
  assert "python step" not in text and "dot.1 op" not in text  # not the streams' kernels
  assert trace_summary._busy([(0, 3), (1, 3), (7, 8), (100, 103)]) == 7


def test_kinds_and_a_trace_file(tmp_path):
  assert trace_summary.kind("void cutlass::Kernel<gemm>") == "matmul"
  assert trace_summary.kind("cudnn_flash_attention_fwd") == "attention"
  assert trace_summary.kind("input_reduce_fusion.2") == "reduction"
  assert trace_summary.kind("something") == "other"
  d = tmp_path / "plugins" / "profile" / "run"
  d.mkdir(parents=True)
  with gzip.open(d / "host.trace.json.gz", "wt") as f:
    json.dump({"traceEvents": _events()}, f)
  assert "/device:GPU:0" in trace_summary.summarize(tmp_path, steps=2)
  assert "no perfetto trace" in trace_summary.summarize(tmp_path / "empty", steps=1)


def test_hopper_cublas_kernels_are_matmuls():
  # cuBLAS on sm90 names its GEMMs nvjet_*; XLA's transposing fusions are copies, not GEMMs
  assert trace_summary.kind("nvjet_sm90_tst_128x160_64x5_2x1_v_bz_NNT") == "matmul"
  assert trace_summary.kind("input_compare_transpose_fusion_2") == "copy/transpose"
  assert trace_summary.kind("cudnn_generated_fort_native_sdpa_sm90_flash_bprop") == "attention"
  assert trace_summary.kind("input_add_reduce_fusion_27") == "reduction"


def _tanh_of_transpose(x, w):
  return jnp.sum(jnp.tanh(x @ w).T * 2.0, axis=0)


def test_top_fusions_and_their_sources():
  events = _events() + [
      {"ph": "X", "pid": 2, "tid": 8, "ts": 50.0, "dur": 9.0, "name": "input_transpose_fusion_3"},
      {"ph": "X", "pid": 2, "tid": 8, "ts": 60.0, "dur": 8.0, "name": "end: loop_fusion.3"}]
  # the gemm and the cuDNN kernel are not XLA fusions, nor is a trace's end marker; the
  # longer fusion comes first
  assert trace_summary.top_fusions(events, 5) == ["input_transpose_fusion_3", "loop_fusion.3"]
  hlo = jax.jit(jax.grad(lambda x, w: _tanh_of_transpose(x, w).sum(), argnums=1)).lower(
      jnp.ones((64, 32)), jnp.ones((32, 16))).compile().as_text()
  names = [m.replace(".", "_") for m in re.findall(r"%([\w.]+) = \S+ fusion\(", hlo)]
  assert names, hlo[:2000]
  texts = [trace_summary.fusion_sources(hlo, n) for n in names]
  # each fusion names its result shape; the tanh's (from this file's function) is among them
  assert all(t.startswith(n + ": f32[") for n, t in zip(names, texts))
  assert any("tanh" in t and "test_trace_summary.py" in t and "_tanh_of_transpose" in t for t in texts), texts
  assert trace_summary.fusion_sources(hlo, "no_such_fusion") == "no_such_fusion: not in the compiled module"
