"""lee_jax: LEE (Latent Equation Embedding) neural symbolic regression in JAX/Flax."""

__version__ = "0.1.0"

__all__ = ["LEERegressor"]


def __getattr__(name):
  # Lazy: `import lee_jax.vocab` should not pay for importing JAX and the search.
  if name == "LEERegressor":
    from lee_jax.regressor import LEERegressor
    return LEERegressor
  raise AttributeError(f"module 'lee_jax' has no attribute {name!r}")
