"""Test-wide setup: 2 simulated CPU devices, fast CPU compiles, absl flags parsed."""

import os

# Tests leave the user's compilation cache alone (test_compile_cache turns it on in a subprocess).
os.environ["LEE_JAX_COMPILATION_CACHE"] = "off"

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", 2)  # sharding code runs as on a 2-GPU box
jax.config.update("jax_numpy_rank_promotion", "raise")

from absl import flags  # noqa: E402

flags.FLAGS.mark_as_parsed()  # grain's worker processes read absl flags

from hypothesis import settings  # noqa: E402

# Same examples on every run: CI must not turn red on a newly drawn example.
settings.register_profile("lee", derandomize=True, deadline=None)
settings.load_profile("lee")
