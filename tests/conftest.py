"""Test-wide setup: 2 simulated CPU devices, fast CPU compiles, absl flags parsed."""

import atexit
import os
import shutil
import tempfile

# One compilation cache per test process, deleted at exit: the user's cache is left alone,
# and the many tests (and the CLI subprocesses they start) that build the same tiny model
# load its compiled programs instead of compiling them again (CI runs on 2 cores).
_XLA_CACHE = tempfile.mkdtemp(prefix="lee_jax_test_xla_")
atexit.register(shutil.rmtree, _XLA_CACHE, ignore_errors=True)
os.environ["LEE_JAX_COMPILATION_CACHE"] = _XLA_CACHE

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", 2)  # sharding code runs as on a 2-GPU box
jax.config.update("jax_numpy_rank_promotion", "raise")

from lee_jax import compile_cache  # noqa: E402

compile_cache.enable()

from absl import flags  # noqa: E402

flags.FLAGS.mark_as_parsed()  # grain's worker processes read absl flags

from hypothesis import settings  # noqa: E402

# Same examples on every run: CI must not turn red on a newly drawn example.
settings.register_profile("lee", derandomize=True, deadline=None)
settings.load_profile("lee")
