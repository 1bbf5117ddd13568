"""Benchmark: one training step (phase 3/5: all five losses) — time, examples/s, tokens/s, MFU.

  python experiments/bench_train.py --model=small --batch_size=256            # GPU (H100 peak)
  python experiments/bench_train.py --model=tiny --batch_size=32 --peak=1e12  # CPU

FLOPs come from XLA's cost analysis of the lowered (not yet compiled) step: forward +
backward + optimizer, so MFU = flops / step_time / peak. The compiled program's analysis is
not used: on the GPU it leaves out the cuBLAS matmul calls (small: 0.75 TFLOP/step
compiled against 6.18 lowered; on the CPU the two agree within 5%). One fixed batch from
the real pipeline is reused, so the number is the model's, not the data pipeline's (see
bench_data.py for that).

Some GPU builds report no FLOP count even for the lowered program (jax 0.11.2 on the H200,
2026-11-26). The count does not depend on the backend, so take it from the CPU:
  python experiments/bench_train.py --model=paper --lower_only --attention=xla   # CPU: GFLOP/step
  python experiments/bench_train.py --model=paper --gflop=48751                  # GPU: MFU from it
"""

import math
import tempfile
import time

from absl import flags
from flax import nnx
import jax
import jax.numpy as jnp
import numpy as np

from lee_jax import cli
from lee_jax import configs, pipeline, sharding, trainer as train
from lee_jax import model as model_lib

import trace_summary  # noqa: E402  (experiments/trace_summary.py, beside this script)

_MODEL = flags.DEFINE_enum("model", "small", list(configs.MODELS), "Model preset.")
_BATCH = flags.DEFINE_integer("batch_size", 256, "Global batch size.", lower_bound=1)
_STEPS = flags.DEFINE_integer("steps", 20, "Timed steps after compilation.", lower_bound=1)
_PHASE = flags.DEFINE_integer("phase", 3, "Phase whose loss weights the step uses.",
                               lower_bound=min(configs.PHASES), upper_bound=max(configs.PHASES))
_PEAK = flags.DEFINE_float("peak", 989e12, "Peak FLOP/s per device (H100 dense bf16: 989e12).")
_DTYPE = flags.DEFINE_enum("dtype", "bfloat16", list(configs.DTYPES), "Compute dtype.")
_ATTN = flags.DEFINE_enum("attention", "auto", list(configs.ATTENTION_IMPLS),
                          "Attention kernel (auto: cuDNN on a GPU in bf16, else XLA).")
_GFLOP = flags.DEFINE_float("gflop", None, "FLOPs per step (GFLOP) for the MFU where this backend's "
                            "cost analysis has none (measure with --lower_only on a CPU).")
_FUSED = flags.DEFINE_enum("fused_refine", "auto", list(configs.FUSED_REFINE),
                           "L_refine's encoder and decoder passes batched with the others "
                           "(train.py's flag; auto: on for an accelerator, off on a CPU).")
_RNG = flags.DEFINE_enum("rng_impl", "auto", list(configs.RNG_IMPLS),
                         "PRNG of the step's dropout and eps draws (train.py's flag; auto: "
                         "rbg on a GPU, threefry elsewhere).")
_DENSE = flags.DEFINE_enum("dense_tables", "off", ["on", "off"],
                           "Embedding tables read as one-hot matmuls, the encoder's inputs "
                           "reordered instead of its activations (model.dense_tables, off "
                           "by default). The same values: an A/B of the step's speed.")
_PROFILE = flags.DEFINE_integer("profile_steps", 0, "After timing, trace this many steps with "
                                "jax.profiler and print the top kernels and the device's busy "
                                "time per step (experiments/trace_summary.py); 0: no trace.",
                                lower_bound=0)
_FUSIONS = flags.DEFINE_integer("fusion_sources", 8, "With --profile_steps: the JAX ops and source "
                                "lines fused into the N costliest XLA fusion kernels (from the "
                                "compiled module's text), to find what a transpose is for.",
                                lower_bound=0)
_LOWER_ONLY = flags.DEFINE_bool("lower_only", False, "Print the lowered step's GFLOP and exit "
                                "(no compilation, no timing).")
# The MFU divides by the peak, so it must be a positive number (lower_bound would let 0 and
# NaN through).
flags.register_validator("peak", lambda v: math.isfinite(v) and v > 0,
                         "--peak must be a finite FLOP/s > 0")


def main(argv):
  del argv
  model_lib.DENSE_TABLES = _DENSE.value == "on"
  attn = configs.resolve_attention(_ATTN.value, _DTYPE.value, jax.default_backend())
  mcfg = configs.get_model_config(_MODEL.value, dtype=_DTYPE.value, attention_impl=attn)
  spec = configs.PHASES[_PHASE.value]
  mesh = sharding.mesh()
  repl = sharding.replicated(mesh)
  model = model_lib.LEE(mcfg, rngs=nnx.Rngs(0))
  n_params = model_lib.count_params(model)
  graphdef, trainable, frozen, rest = nnx.split(model, model_lib.trainable_filter(spec.trainable), nnx.Param, ...)
  trainable, frozen, rest = jax.device_put((trainable, frozen, rest), repl)
  tcfg = train.TrainConfig(model=_MODEL.value, model_cfg=mcfg, workdir=None, batch_size=_BATCH.value,
                           steps=(1000,) * 5)
  tx = train.optimizer(tcfg, 1000)
  opt_state = jax.device_put(tx.init(trainable), repl)
  fused = train.fuses_refine(_FUSED.value, spec.weights)
  step = train.make_train_step(graphdef, tx, spec.weights, mcfg, fused=fused, rng_impl=_RNG.value)
  host = next(iter(pipeline.batches(pipeline.DataConfig(max_len=mcfg.max_len), 0, _BATCH.value)))
  batch = sharding.shard_batch(host, mesh)
  key = jax.random.key(0)

  t0 = time.perf_counter()
  lowered = step.lower(trainable, opt_state, frozen, rest, batch, key, jnp.int32(0))
  cost = lowered.cost_analysis()
  cost = cost[0] if isinstance(cost, (list, tuple)) else cost
  flops = float(cost.get("flops", float("nan"))) if cost else float("nan")
  if _LOWER_ONLY.value:
    print(f"model={_MODEL.value} batch={_BATCH.value} phase={_PHASE.value} attention={attn or 'xla'} "
          f"dense_tables={model_lib.dense_tables()}: {flops / 1e9:.3f} GFLOP/step (lowered, "
          f"{jax.default_backend()})")
    return
  if _GFLOP.value is not None:
    flops = _GFLOP.value * 1e9
  elif not np.isfinite(flops):
    print("this backend's cost analysis has no FLOP count: pass --gflop from a CPU --lower_only run")
  compiled = lowered.compile()
  compile_s = time.perf_counter() - t0

  for i in range(3):  # warm-up (donated buffers make the first calls allocate)
    trainable, opt_state, m = step(trainable, opt_state, frozen, rest, batch, key, jnp.int32(i))
  jax.block_until_ready(m)
  t0 = time.perf_counter()
  for i in range(_STEPS.value):
    trainable, opt_state, m = step(trainable, opt_state, frozen, rest, batch, key, jnp.int32(i))
  jax.block_until_ready(m)
  dt = (time.perf_counter() - t0) / _STEPS.value
  tokens = int(np.sum(host["tokens"] != 0)) + int(np.sum(host["point_mask"]))
  mfu = flops / dt / (_PEAK.value * jax.device_count())
  print(f"model={_MODEL.value} params={n_params / 1e6:.2f}M batch={_BATCH.value} phase={_PHASE.value} "
        f"devices={jax.device_count()} ({jax.devices()[0].platform}) attention={attn or 'xla'} "
        f"fused={fused} rng={configs.resolve_rng_impl(_RNG.value, jax.default_backend())} "
        f"dense_tables={model_lib.dense_tables()}")
  print(f"compile {compile_s:.1f} s | step {dt * 1e3:.1f} ms | {_BATCH.value / dt:,.0f} examples/s | "
        f"{tokens / dt:,.0f} tokens/s | {flops / 1e9:.1f} GFLOP/step | MFU {100 * mfu:.1f}% "
        f"(peak {_PEAK.value:.3g}/device)")
  stats = jax.devices()[0].memory_stats() or {}  # None on CPU
  if "peak_bytes_in_use" in stats:
    print(f"device memory: peak {stats['peak_bytes_in_use'] / 2**30:.2f} GiB in use")
  if _PROFILE.value > 0:
    with tempfile.TemporaryDirectory() as tmp:
      with jax.profiler.trace(tmp, create_perfetto_trace=True):
        for i in range(_PROFILE.value):
          trainable, opt_state, m = step(trainable, opt_state, frozen, rest, batch, key,
                                         jnp.int32(i))
        jax.block_until_ready(m)
      print(trace_summary.summarize(tmp, _PROFILE.value))
      fusions = trace_summary.top_fusions(trace_summary.load_events(tmp), _FUSIONS.value)
    hlo = compiled.as_text() if fusions else ""
    for name in fusions:
      print(trace_summary.fusion_sources(hlo, name))


if __name__ == "__main__":
  cli.run(main, ValueError)
