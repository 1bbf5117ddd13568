import json
import subprocess
import sys

import numpy as np
import pytest
from flax import nnx

from lee_jax import checkpoints
from lee_jax import engine as engine_lib
from lee_jax import weights

import helpers


def _params(model):
  return {k: np.asarray(v) for k, v in weights._flatten(nnx.to_pure_dict(nnx.state(model, nnx.Param))).items()}


@pytest.mark.parametrize("dtype,rtol", [("float32", 0), ("bfloat16", 1e-2)])
def test_export_and_load_round_trip(tmp_path, dtype, rtol):
  model = helpers.tiny_model(3)
  out = weights.export(model, tmp_path, "tiny", dtype=dtype, max_file_mib=0.2)
  meta = json.loads((out / "meta.json").read_text())
  assert meta["format"] == weights.FORMAT and meta["model_config"]["enc_dim"] == helpers.TINY.enc_dim
  assert len(meta["files"]) > 1  # sharded by max_file_mib
  assert all(p.stat().st_size <= 0.2 * 2**20 or len(np.load(p).files) == 1
             for p in out.glob("params-*.npz"))
  again = weights.load(out)
  want, got = _params(model), _params(again)
  assert set(want) == set(got)
  for k in want:
    np.testing.assert_allclose(got[k], want[k], rtol=rtol, atol=1e-6 if rtol else 0)
  assert weights.is_weights_dir(out) and not weights.is_weights_dir(tmp_path / "nope")


def test_damaged_or_missing_files_are_one_line_errors_naming_them(tmp_path):
  out = weights.export(helpers.tiny_model(), tmp_path / "w", "tiny")
  shard = sorted(out.glob("params-*.npz"))[0]
  data = bytearray(shard.read_bytes())
  data[len(data) // 2] ^= 0xFF
  shard.write_bytes(bytes(data))
  with pytest.raises(checkpoints.CheckpointError, match="checksum mismatch") as e:
    weights.load(out)
  assert str(shard) in str(e.value) and "\n" not in str(e.value)
  shard.unlink()
  with pytest.raises(checkpoints.CheckpointError, match="missing weights file") as e:
    weights.load(out)
  assert str(shard) in str(e.value)
  (out / "meta.json").write_text("{")
  with pytest.raises(checkpoints.CheckpointError, match="meta.json"):
    weights.load(out)


def test_engine_loads_weights_and_orbax_exports_alike(tmp_path):
  model = helpers.tiny_model(5)
  w = weights.export(model, tmp_path / "w", "tiny")
  o = helpers.export_tiny(tmp_path / "o", seed=5)
  (ew, _), (eo, _) = engine_lib.load(str(w)), engine_lib.load(str(o))
  X, y = helpers.toy_data()
  sc = engine_lib.make_scatter(X, y, 200, helpers.TINY.n_features, np.random.default_rng(0))
  np.testing.assert_allclose(ew.encode(None, sc), eo.encode(None, sc), atol=1e-6)


def test_cli_converts_an_orbax_export(tmp_path):
  src = helpers.export_tiny(tmp_path / "run" / "export")
  r = subprocess.run([sys.executable, "-m", "lee_jax.weights", f"--from={tmp_path / 'run'}",
                      f"--to={tmp_path / 'w'}", "--dtype=bfloat16", "--latent_noise=3"],
                     capture_output=True, text=True, timeout=300)
  assert r.returncode == 0, r.stderr
  assert "wrote" in r.stdout and weights.is_weights_dir(tmp_path / "w")
  assert json.loads((tmp_path / "w" / "meta.json").read_text())["dtype"] == "bfloat16"
  assert weights.search_defaults(tmp_path / "w") == {"latent_noise": 3.0}
  bad = subprocess.run([sys.executable, "-m", "lee_jax.weights", f"--from={tmp_path / 'none'}",
                        f"--to={tmp_path / 'w2'}"], capture_output=True, text=True, timeout=300)
  assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and str(src) not in bad.stderr
  assert not (tmp_path / "w2").exists()  # (a bad --from once left it behind, empty)
  # a model already in --to stays unless --overwrite; bad numbers are refused before any write
  before = {p.name: p.read_bytes() for p in (tmp_path / "w").iterdir()}
  for args, needle in (([], "is not empty"), (["--latent_noise=-1"], "--latent_noise must be"),
                       (["--max_file_mib=0", "--overwrite"], "--max_file_mib must be")):
    r = subprocess.run([sys.executable, "-m", "lee_jax.weights", f"--from={tmp_path / 'run'}",
                        f"--to={tmp_path / 'w'}", *args], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and needle in r.stderr, r.stderr
  assert {p.name: p.read_bytes() for p in (tmp_path / "w").iterdir()} == before
  again = subprocess.run([sys.executable, "-m", "lee_jax.weights", f"--from={tmp_path / 'run'}",
                          f"--to={tmp_path / 'w'}", "--overwrite"], capture_output=True,
                         text=True, timeout=300)
  assert again.returncode == 0, again.stderr
  assert json.loads((tmp_path / "w" / "meta.json").read_text())["dtype"] == "float32"
  # the source's own search defaults carry over unless --latent_noise replaces them
  _with_defaults(src, {"latent_noise": 2})
  for args, want in (([], 2.0), (["--latent_noise=0.5"], 0.5)):
    r = subprocess.run([sys.executable, "-m", "lee_jax.weights", f"--from={src}",
                        f"--to={tmp_path / 'w'}", "--overwrite", *args], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert weights.search_defaults(tmp_path / "w") == {"latent_noise": want}


def test_missing_shipped_model_is_a_one_line_error(tmp_path, monkeypatch):
  """A build without lee_jax/weights/ (or with it deleted) must say so, not crash."""
  monkeypatch.setattr(checkpoints, "shipped_dir", lambda: tmp_path / "weights")
  with pytest.raises(checkpoints.CheckpointError, match="no trained checkpoint is shipped") as e:
    engine_lib.load()
  assert "\n" not in str(e.value) and str(tmp_path / "weights") in str(e.value)


def _with_defaults(directory, defaults):
  meta = json.loads((directory / "meta.json").read_text())
  meta["search_defaults"] = defaults
  (directory / "meta.json").write_text(json.dumps(meta))
  return directory


def test_search_defaults_travel_with_the_weights(tmp_path):
  out = weights.export(helpers.tiny_model(), tmp_path / "w", "tiny",
                       extra={"search_defaults": {"latent_noise": 3}})
  assert weights.search_defaults(out) == {"latent_noise": 3.0}
  assert weights.search_defaults(helpers.export_tiny(tmp_path / "o")) == {}  # none recorded
  weights.load(out)  # the key does not disturb loading
  _with_defaults(out, {"rounds": 50})  # budget is the user's, not the model's
  with pytest.raises(checkpoints.CheckpointError, match="may set only latent_noise") as e:
    weights.search_defaults(out)
  assert str(out / "meta.json") in str(e.value) and "\n" not in str(e.value)
  _with_defaults(out, {"latent_noise": "lots"})
  with pytest.raises(checkpoints.CheckpointError, match="must be numbers"):
    weights.search_defaults(out)
  with pytest.raises(checkpoints.CheckpointError, match="no checkpoint directory"):
    weights.search_defaults(tmp_path / "nope")
  (tmp_path / "fit.png").write_bytes(b"")  # once "no checkpoint directory" for a file too
  with pytest.raises(checkpoints.CheckpointError, match="fit.png is a file, not a checkpoint "
                     "directory"):
    checkpoints.load_model(tmp_path / "fit.png")
  (tmp_path / "empty").mkdir()  # once "[Errno 2] No such file or directory"
  with pytest.raises(checkpoints.CheckpointError, match="empty holds no model \\(no meta.json\\)"):
    checkpoints.load_model(tmp_path / "empty")
  with pytest.raises(checkpoints.CheckpointError, match="holds no model"):  # a search's first read
    weights.search_defaults(tmp_path / "empty")


def test_shipped_search_defaults_are_valid():
  # Whatever the package ships, its recommended settings make a valid search config.
  from lee_jax import configs
  for preset in configs.PRESETS:
    configs.get_search_config(preset, weights.search_defaults())
