"""experiments/weighted_noise.py: the heteroscedastic noise it adds."""

import pathlib
import sys

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "experiments"))
import weighted_noise  # noqa: E402


def test_noisy_rows_has_two_noise_levels_in_the_asked_shares():
  y = np.random.default_rng(0).normal(3.0, 1.0, 20000)
  rms = np.sqrt(np.mean(y ** 2))
  noisy, sigma = weighted_noise.noisy_rows(y, np.random.default_rng(1), 0.2, 1.0, 0.01)
  loud = sigma > 0.5 * rms
  assert np.allclose(np.unique(sigma), [0.01 * rms, rms])
  assert abs(loud.mean() - 0.2) < 0.02
  assert abs(np.std((noisy - y)[loud]) - rms) < 0.05 * rms
  assert abs(np.std((noisy - y)[~loud]) - 0.01 * rms) < 0.05 * 0.01 * rms


def test_bad_settings_and_an_existing_json_are_refused_before_any_fit(tmp_path):
  import subprocess
  (tmp_path / "r.json").write_text("keep")
  for args, needle in ((["--datasets="], "--datasets names no dataset"),
                       (["--loud_sigma=-1"], "--loud_sigma, --quiet_sigma > 0"),
                       (["--loud_fraction=5"], "0 <= --loud_fraction <= 1"),
                       ([f"--json={tmp_path / 'r.json'}"], "exists; pass --overwrite")):
    r = subprocess.run([sys.executable, str(REPO / "experiments" / "weighted_noise.py"), *args],
                       capture_output=True, text=True, timeout=120, cwd=REPO)
    assert r.returncode == 2 and needle in r.stderr and "Traceback" not in r.stderr, r.stderr
  assert (tmp_path / "r.json").read_text() == "keep"  # (once replaced after the fits)
