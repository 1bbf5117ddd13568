"""lee_jax: LEE (Latent Equation Embedding) neural symbolic regression in JAX/Flax."""

__version__ = "0.1.0"
