"""Tests for lee_jax.configs: how a search config is put together."""

import pytest

from lee_jax import configs


def test_search_config_layers_preset_then_model_defaults_then_overrides():
  fast = configs.PRESETS["fast"]
  cfg = configs.get_search_config("fast", {"latent_noise": 3.0}, rounds=4, latent_noise=None)
  assert (cfg.latent_noise, cfg.rounds, cfg.iterations) == (3.0, 4, fast.iterations)
  assert configs.get_search_config("fast", {"latent_noise": 3.0}, latent_noise=0.0).latent_noise == 0.0
  assert configs.get_search_config("paper", None) == configs.PRESETS["paper"]
  with pytest.raises(ValueError, match="latent_noise must be >= 0"):
    configs.get_search_config("fast", {"latent_noise": -1.0})
  for name in ("latent_noise", "alpha", "temperature"):  # inf latent noise was taken
    with pytest.raises(ValueError, match=f"{name} must be a finite number, got inf"):
      configs.get_search_config("fast", None, **{name: float("inf")})
  with pytest.raises(ValueError, match="unknown preset 'quick'"):
    configs.get_search_config("quick")


def test_search_config_rejects_fitter_settings_that_cannot_run():
  for bad, message in (({"lm_restarts": 0}, "lm_restarts must be >= 1"),
                       ({"lm_steps": 0}, "lm_steps must be >= 1"),
                       ({"lm_sub_rows": -1}, "lm_sub_rows must be >= 0")):
    with pytest.raises(ValueError, match=message):
      configs.get_search_config("fast", **bad)
  assert configs.get_search_config("fast", lm_sub_rows=0).lm_sub_rows == 0


def test_search_config_simplification_is_light_or_full():
  assert configs.get_search_config("paper").simplify == "light"
  assert configs.get_search_config("fast", simplify="full").simplify == "full"
  with pytest.raises(ValueError, match="simplify must be one of light, full, got 'none'"):
    configs.get_search_config("fast", simplify="none")
