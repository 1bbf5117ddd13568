"""JAX's persistent compilation cache, on for the entry points and the search engine.

Compiling the search's functions is most of a first run's start-up on a CPU (~30 s); with
the compiled programs on disk a later run, or a worker process, loads them instead.
The directory is $LEE_JAX_COMPILATION_CACHE (default ~/.cache/lee_jax/jax, or under
$XDG_CACHE_HOME); `off` disables it. A cache the user configured for JAX is left alone.
"""

from __future__ import annotations

import os
import pathlib

import jax
from absl import logging

ENV = "LEE_JAX_COMPILATION_CACHE"
OFF = ("off", "0", "false", "none")
MIN_COMPILE_SECONDS = 0.2  # most of the search's programs compile in 0.2-3 s on a CPU


def default_dir() -> pathlib.Path:
  base = os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache"
  return pathlib.Path(base) / "lee_jax" / "jax"


def enable() -> str | None:
  """Turns the cache on (idempotent); returns its directory, or None when it is off."""
  current = jax.config.jax_compilation_cache_dir
  if current:
    return current
  setting = os.environ.get(ENV, "").strip()
  if setting.lower() in OFF:
    return None
  path = pathlib.Path(setting).expanduser() if setting else default_dir()
  try:
    path.mkdir(parents=True, exist_ok=True)
  except OSError as e:  # read-only home, say: run without the cache
    logging.warning("compilation cache off: cannot create %s (%s)", path, e)
    return None
  jax.config.update("jax_compilation_cache_dir", str(path))
  jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
  # Spawned worker processes (rounds, grain) read the same settings from the environment.
  os.environ["JAX_COMPILATION_CACHE_DIR"] = str(path)
  os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = str(MIN_COMPILE_SECONDS)
  return str(path)
