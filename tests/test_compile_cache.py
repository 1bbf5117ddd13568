import os
import subprocess
import sys
import textwrap

# A small program, cached whatever its compile time: the threshold is set to 0 here, since
# on a fast, quiet CPU this program's backend compile fell under the 0.2 s default and the
# tests failed at random (2026-11-25). What is tested is where the cache goes and that it
# is read back, not the threshold.
_RUN = textwrap.dedent("""
    import jax, jax.numpy as jnp
    from lee_jax import compile_cache
    compile_cache.MIN_COMPILE_SECONDS = 0.0
    print(compile_cache.enable())

    def f(x):
      for i in range(150):
        x = jnp.sin(x * (i + 1)) + jnp.cos(x[::-1])
      return x

    jax.jit(f)(jnp.ones(8)).block_until_ready()
""")


def _run(env_value, tmp_path):
  env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
  env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
  if env_value is not None:
    env["LEE_JAX_COMPILATION_CACHE"] = env_value
  else:
    env.pop("LEE_JAX_COMPILATION_CACHE", None)
  out = subprocess.run([sys.executable, "-c", _RUN], env=env, cwd=tmp_path, capture_output=True,
                       text=True, check=True, timeout=300).stdout.split()
  return out[0]


def test_a_second_process_loads_the_compiled_program(tmp_path):
  cache = tmp_path / "cache"
  assert _run(str(cache), tmp_path) == str(cache)
  written = {p.name: p.stat().st_mtime_ns for p in cache.iterdir()}
  assert any(name.startswith("jit_f-") for name in written)  # the compiled program
  _run(str(cache), tmp_path)
  # Read back, not compiled and written again.
  assert {p.name: p.stat().st_mtime_ns for p in cache.iterdir()} == written


def test_default_directory_and_off(tmp_path):
  assert _run(None, tmp_path) == str(tmp_path / "xdg" / "lee_jax" / "jax")
  assert any((tmp_path / "xdg" / "lee_jax" / "jax").iterdir())
  other = tmp_path / "other"
  other.mkdir()
  assert _run("off", other) == "None"
  assert not (other / "xdg").exists()
