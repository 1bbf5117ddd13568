"""Shippable inference weights: NumPy shards + meta.json with the config and checksums.

The package ships its trained model in this format under `lee_jax/weights/` (no Orbax at
inference, files small enough for a repository):

  meta.json       {"format", "model", "model_config", "dtype", "files": {name: sha256}, ...,
                   optionally "search_defaults": {"latent_noise": s}, see search_defaults}
  params-00.npz   flattened parameter arrays ("encoder/blocks/0/ffn_in/kernel": array), each
  params-01.npz   file at most max_file_mib; bfloat16 is stored as its uint16 bit pattern

    python -m lee_jax.weights --from runs/small --to lee_jax/weights --dtype bfloat16

converts a training workdir (or its export/) into it. A missing file, a checksum mismatch or
an unreadable meta.json is a one-line CheckpointError that names the file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import pathlib

import numpy as np

from lee_jax import cli
from lee_jax.checkpoints import CheckpointError

FORMAT = "lee_jax-weights-1"
# meta.json's dtype -> how the arrays are stored (bfloat16 as its bit patterns: npz has no
# bfloat16)
STORED = {"float32": np.float32, "bfloat16": np.uint16}
_SEP = "/"


def is_weights_dir(directory: str | pathlib.Path) -> bool:
  meta = pathlib.Path(directory) / "meta.json"
  try:
    return json.loads(meta.read_text()).get("format") == FORMAT
  except (OSError, ValueError, AttributeError):
    return False


def _flatten(tree: dict, prefix: str = "") -> dict[str, np.ndarray]:
  out = {}
  for k, v in tree.items():
    name = f"{prefix}{_SEP}{k}" if prefix else str(k)
    if isinstance(v, dict):
      out.update(_flatten(v, name))
    else:
      out[name] = np.asarray(v)
  return out


def _unflatten(flat: dict[str, np.ndarray]) -> dict:
  tree: dict = {}
  for name, v in flat.items():
    node = tree
    *parents, leaf = name.split(_SEP)
    for p in parents:
      node = node.setdefault(int(p) if p.isdigit() else p, {})
    node[int(leaf) if leaf.isdigit() else leaf] = v
  return tree


def _sha256(path: pathlib.Path) -> str:
  h = hashlib.sha256()
  with path.open("rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
      h.update(chunk)
  return h.hexdigest()


def export(model, directory: str | pathlib.Path, name: str, dtype: str = "float32",
           max_file_mib: float = 15.0, extra: dict | None = None) -> pathlib.Path:
  """Write `model`'s params as shards + meta.json into `directory` (replacing its files)."""
  import ml_dtypes
  from flax import nnx

  from lee_jax import checkpoints

  if dtype not in STORED:
    raise ValueError(f"dtype must be one of {tuple(STORED)}, got {dtype!r}")
  directory = pathlib.Path(directory)
  flat = _flatten(nnx.to_pure_dict(nnx.state(model, nnx.Param)))
  if dtype == "bfloat16":
    flat = {k: v.astype(ml_dtypes.bfloat16).view(np.uint16) for k, v in flat.items()}
  else:
    flat = {k: v.astype(np.float32) for k, v in flat.items()}
  shards: list[dict[str, np.ndarray]] = [{}]
  size = 0
  for k in sorted(flat):
    cost = flat[k].nbytes + 256 + 2 * len(k)  # + the zip entry's and .npy headers
    if shards[-1] and size + cost > max_file_mib * 2**20:
      shards.append({})
      size = 0
    shards[-1][k] = flat[k]
    size += cost
  files = {}
  with checkpoints.replacing(directory, _is_model_file) as new:
    for i, shard in enumerate(shards):
      path = new / f"params-{i:02d}.npz"
      np.savez(path, **shard)
      files[path.name] = _sha256(path)
    meta = {"format": FORMAT, "model": name, "model_config": dataclasses.asdict(model.cfg),
            "dtype": dtype, "files": files, "n_params": int(sum(v.size for v in flat.values()))}
    meta.update(extra or {})
    (new / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True))
  return directory


def _is_model_file(name: str) -> bool:
  return name == "meta.json" or (name.startswith("params-") and name.endswith(".npz"))


def load(directory: str | pathlib.Path):
  """The LEE model stored in `directory`, after checking every file's checksum."""
  import ml_dtypes

  from lee_jax import checkpoints
  from lee_jax import model as model_lib

  directory = pathlib.Path(directory).absolute()
  meta_file = directory / "meta.json"
  meta, cfg = checkpoints.read_model_meta(meta_file)
  try:
    files, dtype = dict(meta["files"]), meta["dtype"]
  except (KeyError, TypeError, ValueError) as e:
    raise CheckpointError(f"cannot read {meta_file}: {str(e).splitlines()[0][:200]}") from None
  if dtype not in STORED:  # (before any shard is hashed and read)
    raise CheckpointError(f"{meta_file}: dtype must be one of {tuple(STORED)}, got {dtype!r}")
  flat: dict[str, np.ndarray] = {}
  for name, digest in sorted(files.items()):
    path = directory / name
    if not path.is_file():
      raise CheckpointError(f"missing weights file {path}; reinstall the package or re-export")
    if _sha256(path) != digest:
      raise CheckpointError(f"checksum mismatch for {path}: the file is damaged; reinstall "
                            "the package or re-export")
    with np.load(path) as z:
      flat.update({k: z[k] for k in z.files})
  # meta.json is not hashed: a dtype it misstates would read bfloat16's bit patterns as
  # numbers (|param| ~5e4), so every array's storage type must be the one it names.
  wrong = sorted(k for k, v in flat.items() if v.dtype != STORED[dtype])
  if wrong:
    raise CheckpointError(f"{directory}: {wrong[0]} is stored as {flat[wrong[0]].dtype}, not "
                          f"as meta.json's {dtype} ({np.dtype(STORED[dtype])})")
  if dtype == "bfloat16":
    flat = {k: v.view(ml_dtypes.bfloat16).astype(np.float32) for k, v in flat.items()}
  try:
    return model_lib.with_params(cfg, _unflatten(flat))
  except ValueError:
    raise CheckpointError(
        f"{directory} does not hold the parameters its meta.json describes") from None


def search_defaults(checkpoint: str | pathlib.Path | None = None) -> dict:
  """The search settings a model's meta.json recommends ({} when it names none).

  Some are properties of the model, not of the budget: a model that reconstructs its input
  well hands a re-encoded parent back from mu and needs latent noise to explore
  (SearchConfig.latent_noise), one that does not is neutral to it. So they travel with the
  weights, under "search_defaults", and apply between the preset and the user's overrides
  (configs.get_search_config). None: the shipped model. CheckpointError (one line, naming the
  file) for a missing directory or a field a model may not set.
  """
  from lee_jax import checkpoints
  from lee_jax import configs

  if checkpoint is None:
    if not checkpoints.shipped_available():
      return {}  # engine.load says what is missing
    directory = checkpoints.shipped_dir()
  else:
    directory = checkpoints.model_dir(checkpoint)
  meta_file = directory / "meta.json"
  if not meta_file.exists():  # (a search reads this first: the error comes before any work)
    checkpoints.read_model_meta(meta_file)  # "... holds no model"
  try:
    found = json.loads(meta_file.read_text()).get("search_defaults") or {}
  except (OSError, ValueError, AttributeError):
    return {}  # loading the model reports an unreadable meta.json
  bad = sorted(set(found) - set(configs.MODEL_SEARCH_FIELDS)) if isinstance(found, dict) else found
  if bad:
    raise CheckpointError(f"{meta_file}: search_defaults may set only "
                          f"{', '.join(configs.MODEL_SEARCH_FIELDS)}, got {bad}")
  # numbers, finite and >= 0 (a "3", true or inf passed, and a -1 failed later without the
  # file's name)
  if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < np.inf
             for v in found.values()):
    raise CheckpointError(f"{meta_file}: search_defaults values must be finite numbers >= 0, "
                          f"got {found}")
  return {k: float(v) for k, v in found.items()}


def load_any(directory: str | pathlib.Path):
  """A model from this format, or from an Orbax export / training workdir (checkpoints)."""
  from lee_jax import checkpoints

  return load(directory) if is_weights_dir(directory) else checkpoints.load_model(directory)


def main(argv):
  del argv
  from absl import flags

  from lee_jax import checkpoints

  FLAGS = flags.FLAGS
  if FLAGS.latent_noise is not None and not 0 <= FLAGS.latent_noise < np.inf:
    raise CheckpointError(f"--latent_noise must be a number >= 0, got {FLAGS.latent_noise}")
  if not 0 < FLAGS.max_file_mib < np.inf:
    raise CheckpointError(f"--max_file_mib must be a number > 0, got {FLAGS.max_file_mib}")
  # export() replaces the whole folder: a model already there (the shipped one by default)
  # goes only when asked, and an unwritable place fails before the model loads.
  # (the default is the package's folder wherever the command runs: "lee_jax/weights" from
  # another folder wrote a copy there that then shadowed the package)
  to = pathlib.Path(FLAGS.to) if FLAGS.to else checkpoints.shipped_dir()
  if to.is_dir() and any(to.iterdir()) and not FLAGS.overwrite:
    raise cli.PathError(f"--to {to} is not empty (a model already there?); pass --overwrite "
                        "to replace it")
  with cli.no_empty_dir_left(to):  # (a bad --from once left an empty --to behind)
    cli.output_dir(to, flag="--to")
    source = checkpoints.model_dir(FLAGS["from"].value)
    model = load_any(source)  # (another weights folder too: a new dtype or latent noise)
  meta, _ = checkpoints.read_model_meta(source / "meta.json")
  extra = {"source": {k: meta[k] for k in ("phase", "step") if k in meta}}
  # the source's own search defaults (a run continued from the shipped model inherits them)
  inherited = search_defaults(source)
  if FLAGS.latent_noise is not None:
    inherited["latent_noise"] = FLAGS.latent_noise
  if inherited:
    extra["search_defaults"] = inherited
  try:
    out = export(model, to, meta.get("model", "unknown"), FLAGS.dtype, FLAGS.max_file_mib, extra)
  except OSError as e:
    raise cli.PathError(f"--to {to}: cannot write it ({e.strerror or e})") from None
  total = sum(p.stat().st_size for p in out.glob("params-*.npz"))
  print(f"wrote {out} ({total / 2**20:.1f} MiB in {len(list(out.glob('params-*.npz')))} files)")


if __name__ == "__main__":
  from absl import flags

  flags.DEFINE_string("from", None, "Training workdir or its export/ folder.", required=True)
  flags.DEFINE_string("to", None, "Destination directory (default: the package's own "
                      "lee_jax/weights, the shipped model; needs --overwrite).")
  flags.DEFINE_enum("dtype", "float32", list(STORED), "Stored precision.")
  flags.DEFINE_float("max_file_mib", 15.0, "Largest file written.")
  flags.DEFINE_float("latent_noise", None, "Record this latent noise as the model's search "
                     "default (meta.json search_defaults; measure it first, see BUILD_NOTES). "
                     "Default: the source's own, e.g. inherited from --init_from's.")
  flags.DEFINE_bool("overwrite", False, "Replace what --to already holds (e.g. the shipped "
                    "model in lee_jax/weights).")
  cli.run(main, CheckpointError)
