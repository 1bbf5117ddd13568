import json
import pathlib
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
  for bad in ("lots", "3", True, float("inf"), -1):  # "3", true and inf passed before
    _with_defaults(out, {"latent_noise": bad})
    with pytest.raises(checkpoints.CheckpointError, match="must be finite numbers >= 0"):
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


def test_a_misstated_dtype_is_an_error_not_garbage_weights(tmp_path):
  # meta.json is not hashed: "float32" over bfloat16 shards read their bit patterns as
  # numbers (|param| ~5e4) without a word.
  out = weights.export(helpers.tiny_model(), tmp_path / "w", "tiny", dtype="bfloat16")
  for dtype, needle in (("float32", "stored as uint16, not as meta.json's float32"),
                        ("bf16", "dtype must be one of")):
    _with_meta(out, dtype=dtype)
    with pytest.raises(checkpoints.CheckpointError, match=needle) as e:
      weights.load(out)
    assert "\n" not in str(e.value)
  _with_meta(out, dtype="bfloat16", model_config=dict(
      json.loads((out / "meta.json").read_text())["model_config"], enc_dim=64.0))
  with pytest.raises(checkpoints.CheckpointError, match="enc_dim must be int, got 64.0"):
    weights.load(out)  # (a TypeError traceback from inside the model before)


def test_a_failed_export_leaves_the_old_model(tmp_path, monkeypatch):
  # The old shards were deleted first and the new ones written in place: a full disk on the
  # second shard left neither model.
  old = helpers.tiny_model(1)
  out = weights.export(old, tmp_path / "w", "tiny", max_file_mib=0.2)
  before = {p.name: p.read_bytes() for p in out.iterdir()}
  savez, calls = np.savez, []

  def full_disk(path, **arrays):
    calls.append(path)
    if len(calls) == 2:
      raise OSError(28, "No space left on device")
    savez(path, **arrays)

  monkeypatch.setattr(np, "savez", full_disk)
  with pytest.raises(OSError, match="No space left"):
    weights.export(helpers.tiny_model(2), out, "tiny", max_file_mib=0.2)
  assert {p.name: p.read_bytes() for p in out.iterdir()} == before
  assert [p.name for p in tmp_path.iterdir()] == ["w"]  # no partial folder left
  monkeypatch.setattr(np, "savez", savez)
  weights.export(helpers.tiny_model(2), out, "tiny")  # a whole export replaces it
  assert _params(weights.load(out)).keys() == _params(old).keys()
  assert len(list(out.glob("params-*.npz"))) == 1
  (out / "notes.txt").write_text("mine")
  with pytest.raises(checkpoints.CheckpointError, match=r"not a model's \(notes.txt\)"):
    weights.export(old, out, "tiny")  # a folder of other things is not replaced whole
  assert (out / "notes.txt").exists()


def test_a_failed_orbax_export_leaves_the_old_one(tmp_path, monkeypatch):
  # params/ was written, then meta.json: a kill between them left the new params under the
  # old meta.json's label.
  src = helpers.export_tiny(tmp_path / "export")
  files = lambda: {str(p.relative_to(src)): p.read_bytes() for p in src.rglob("*") if p.is_file()}
  before = files()
  write_text = pathlib.Path.write_text

  def killed_at_meta(self, *args, **kw):
    if self.name == "meta.json":
      raise OSError(28, "No space left on device")
    return write_text(self, *args, **kw)

  monkeypatch.setattr(pathlib.Path, "write_text", killed_at_meta)
  with pytest.raises(OSError, match="No space left"):
    checkpoints.export_params(src, nnx.state(helpers.tiny_model(5), nnx.Param), {"model": "x"})
  monkeypatch.undo()
  assert files() == before
  assert sorted(p.name for p in tmp_path.iterdir()) == ["export"]


def test_cli_defaults_to_the_package_folder_and_reads_weights_folders(tmp_path):
  w = weights.export(helpers.tiny_model(), tmp_path / "w", "tiny", dtype="float32")
  # run from another folder: "lee_jax/weights" was relative to it (and then shadowed the
  # package); the package's own folder holds the shipped model, so it is refused
  r = subprocess.run([sys.executable, "-m", "lee_jax.weights", f"--from={w}"], cwd=tmp_path,
                     capture_output=True, text=True, timeout=300)
  # (the child may import an installed copy, not this checkout: its own package folder)
  assert r.returncode == 2 and "lee_jax/weights is not empty" in r.stderr, r.stderr
  assert str(tmp_path) not in r.stderr and not (tmp_path / "lee_jax").exists()
  # a weights folder as --from (a new dtype): "cannot restore .../params" before
  r = subprocess.run([sys.executable, "-m", "lee_jax.weights", f"--from={w}",
                      f"--to={tmp_path / 'w16'}", "--dtype=bfloat16"], capture_output=True,
                     text=True, timeout=300)
  assert r.returncode == 0, r.stderr
  assert json.loads((tmp_path / "w16" / "meta.json").read_text())["dtype"] == "bfloat16"


def _with_meta(directory, **fields):
  meta = json.loads((directory / "meta.json").read_text())
  meta.update(fields)
  (directory / "meta.json").write_text(json.dumps(meta))
