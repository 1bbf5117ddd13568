"""Every Orbax call: resumable training state, phase hand-off, params-only export and load.

Layout of a training workdir:
  WORKDIR/phase{N}/{step}/   params, opt (optimizer state), data (grain iterator), meta (JSON)
  WORKDIR/export/            params + meta.json of the last finished phase (inference only)
  WORKDIR/export_phase{N}/   the same for phase N, written only when that phase finished

Orbax writes each step to a temporary directory and renames it when complete, so a run killed
mid-save leaves the previous step as the latest one. Anything unreadable, truncated or saved
for another model becomes a one-line CheckpointError that names the path.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import shutil
from typing import TYPE_CHECKING, Any, Callable, Iterator
import uuid

import jax

# orbax and grain are imported where they are used: together ~1 s that the search's CLIs,
# which read only meta.json or shipped weights, would pay before their first line.
if TYPE_CHECKING:
  import orbax.checkpoint as ocp


class CheckpointError(ValueError):
  """A checkpoint that is missing, unreadable, or does not match the requested model."""


def phase_dir(workdir: str | pathlib.Path, phase: int) -> pathlib.Path:
  return pathlib.Path(workdir).absolute() / f"phase{phase}"


def phase_export_dir(workdir: str | pathlib.Path, phase: int) -> pathlib.Path:
  return pathlib.Path(workdir).absolute() / f"export_phase{phase}"


def open_manager(directory: str | pathlib.Path, save_every: int, keep: int = 3) -> ocp.CheckpointManager:
  import orbax.checkpoint as ocp
  return ocp.CheckpointManager(
      pathlib.Path(directory).absolute(),
      options=ocp.CheckpointManagerOptions(save_interval_steps=save_every, max_to_keep=keep,
                                           create=True))


def save(mngr: ocp.CheckpointManager, step: int, params, opt_state, data_iter, meta: dict,
         force: bool = False) -> bool:
  """Save the whole training state at `step` (if the interval says so, or force)."""
  import grain
  import orbax.checkpoint as ocp
  return mngr.save(step, force=force, args=ocp.args.Composite(
      params=ocp.args.StandardSave(params),
      opt=ocp.args.StandardSave(opt_state),
      data=grain.checkpoint.CheckpointSave(data_iter),
      meta=ocp.args.JsonSave(meta)))


def _check_meta(meta: dict, expected: dict, where: pathlib.Path) -> None:
  for key, want in expected.items():
    if meta.get(key) != want:
      saved = "; ".join(f"{k}={g!r}, not {w!r}"
                        for k, g, w in _differences(key, meta.get(key), want))
      raise CheckpointError(f"{where} was saved with {saved}; use another --workdir or the "
                            "matching flags")


def _differences(key: str, got, want) -> list[tuple[str, Any, Any]]:
  """(dotted key, saved, wanted) where two settings differ: inside a dict, only the entries
  that differ (model_config.use_vae, not the whole model config)."""
  if isinstance(got, dict) and isinstance(want, dict):
    return [d for k in sorted(set(got) | set(want), key=str)
            for d in _differences(f"{key}.{k}", got.get(k), want.get(k))]
  return [] if got == want else [(key, got, want)]


def _step_path(mngr: ocp.CheckpointManager, step: int) -> pathlib.Path:
  return pathlib.Path(str(mngr.directory)) / str(step)


def read_meta(mngr: ocp.CheckpointManager, step: int) -> dict:
  import orbax.checkpoint as ocp
  path = _step_path(mngr, step)
  try:
    return dict(mngr.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore())).meta)
  except Exception as e:  # orbax raises many types for damaged files
    raise CheckpointError(f"cannot read checkpoint {path}: {_one_line(e)}") from None


def restore(mngr: ocp.CheckpointManager, step: int, abstract_params, abstract_opt, data_iter,
            expected_meta: dict) -> tuple[Any, Any, dict]:
  """Restore (params, opt_state, meta) at `step` into the given shapes; data_iter in place."""
  import grain
  import orbax.checkpoint as ocp
  path = _step_path(mngr, step)
  meta = read_meta(mngr, step)
  _check_meta(meta, expected_meta, path)
  try:
    r = mngr.restore(step, args=ocp.args.Composite(
        params=ocp.args.StandardRestore(abstract_params),
        opt=ocp.args.StandardRestore(abstract_opt),
        data=grain.checkpoint.CheckpointRestore(data_iter)))
  except Exception as e:
    raise CheckpointError(f"cannot restore checkpoint {path} ({_one_line(e)[:120]}); if it is "
                          f"damaged, move that step folder away and resume from the one "
                          f"before") from None
  return r.params, r.opt, meta


def restore_params_only(directory: pathlib.Path, abstract_params, expected_meta: dict):
  """The params of the latest step in `directory` (phase hand-off: no optimizer, no data)."""
  import orbax.checkpoint as ocp
  if not directory.is_dir():
    raise CheckpointError(f"no checkpoint directory {directory}")
  with ocp.CheckpointManager(directory) as mngr:
    step = mngr.latest_step()
    if step is None:
      raise CheckpointError(f"{directory} holds no finished checkpoint")
    _check_meta(read_meta(mngr, step), expected_meta, _step_path(mngr, step))
    try:
      r = mngr.restore(step, args=ocp.args.Composite(params=ocp.args.StandardRestore(abstract_params)))
    except Exception as e:
      raise CheckpointError(f"cannot restore {_step_path(mngr, step)}: {_one_line(e)}") from None
    return r.params, step


@contextlib.contextmanager
def replacing(directory: str | pathlib.Path,
              is_model_file: Callable[[str], bool]) -> Iterator[pathlib.Path]:
  """A new folder beside `directory` to write a model into; when the block ends it takes
  directory's place, and only then is the old model removed. A block that fails (a full disk,
  a kill) leaves the old model as it was: writing in place lost both, the old shards deleted
  before the new ones were complete, or new params left under the old meta.json.
  `directory` may hold only files `is_model_file` accepts (it is replaced whole)."""
  directory = pathlib.Path(directory).absolute()
  if directory.is_dir():
    other = sorted(p.name for p in directory.iterdir() if not is_model_file(p.name))
    if other:
      raise CheckpointError(f"{directory} holds files that are not a model's "
                            f"({', '.join(other[:3])}); nothing was replaced")
  directory.parent.mkdir(parents=True, exist_ok=True)
  tag = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
  new = directory.with_name(f".{directory.name}.partial-{tag}")
  new.mkdir()
  try:
    yield new
  except BaseException:
    shutil.rmtree(new, ignore_errors=True)
    raise
  old = directory.with_name(f".{directory.name}.old-{tag}")
  if directory.is_symlink() or directory.exists():
    os.rename(directory, old)
  os.rename(new, directory)
  if old.is_symlink():
    old.unlink()
  else:
    shutil.rmtree(old, ignore_errors=True)


def export_params(directory: str | pathlib.Path, params, meta: dict) -> pathlib.Path:
  """Inference-only params (no optimizer state) plus meta.json beside them, replacing the
  folder whole once both are written (`replacing`)."""
  import orbax.checkpoint as ocp
  directory = pathlib.Path(directory).absolute()
  with replacing(directory, lambda name: name in ("params", "meta.json")) as new:
    with ocp.StandardCheckpointer() as ckptr:
      ckptr.save(new / "params", params, force=True)
      ckptr.wait_until_finished()
    (new / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True))
  return directory


def load_params(directory: str | pathlib.Path, abstract_params, expected_meta: dict):
  """Params written by export_params, checked against expected_meta."""
  import orbax.checkpoint as ocp
  directory = pathlib.Path(directory).absolute()
  meta_file = directory / "meta.json"
  try:
    meta = json.loads(meta_file.read_text())
  except (OSError, ValueError) as e:
    raise CheckpointError(f"cannot read {meta_file}: {_one_line(e)}") from None
  _check_meta(meta, expected_meta, meta_file)
  try:
    with ocp.StandardCheckpointer() as ckptr:
      return ckptr.restore(directory / "params", abstract_params)
  except Exception as e:
    raise CheckpointError(f"cannot restore {directory / 'params'}: {_one_line(e)}") from None


def abstract(tree):
  """Shape/dtype/sharding stand-ins for restoring onto the same layout as `tree`."""
  return jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=a.sharding), tree)


def _one_line(e: Exception) -> str:
  text = str(e).strip().splitlines()
  return (text[0] if text else type(e).__name__)[:300]


def model_dir(directory: str | pathlib.Path) -> pathlib.Path:
  """A model directory as given, or the export/ inside a training workdir."""
  directory = pathlib.Path(directory).absolute()
  if (directory / "export" / "meta.json").is_file() and not (directory / "meta.json").is_file():
    directory = directory / "export"
  if directory.is_file():
    raise CheckpointError(f"{directory} is a file, not a checkpoint directory (a training "
                          "workdir, its export/ or a `python -m lee_jax.weights` folder)")
  if not directory.is_dir():
    raise CheckpointError(f"no checkpoint directory {directory}")
  return directory


def read_model_meta(meta_file: pathlib.Path):
  """(meta dict, ModelConfig) from a meta.json; CheckpointError naming the file otherwise."""
  from lee_jax import configs

  if not meta_file.exists():
    if (meta_file.parent / "export_partial" / "meta.json").is_file():  # a stopped first phase
      raise CheckpointError(f"{meta_file.parent} has no finished phase yet; its unfinished "
                            f"phase's params are in {meta_file.parent / 'export_partial'}")
    raise CheckpointError(f"{meta_file.parent} holds no model (no meta.json): name a "
                          "`python -m lee_jax.weights` folder, an export/ or a training workdir")
  try:
    meta = json.loads(meta_file.read_text())
    return meta, configs.ModelConfig(**meta["model_config"])
  except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
    raise CheckpointError(f"cannot read the model config in {meta_file}: {_one_line(e)}") from None


def load_model(directory: str | pathlib.Path):
  """An LEE model from an export directory (params/ + meta.json) or a training workdir.

  The model config comes from meta.json, so any size (`paper`, `small`, `tiny`) loads.
  """
  from flax import nnx  # deferred: the training side of this module does not need NNX

  from lee_jax import model as model_lib

  directory = model_dir(directory)
  meta, cfg = read_model_meta(directory / "meta.json")
  model = nnx.eval_shape(lambda: model_lib.LEE(cfg, rngs=nnx.Rngs(0)))
  graphdef, abstract_params, rest = nnx.split(model, nnx.Param, ...)
  params = load_params(directory, abstract_params, {"model_config": meta["model_config"]})
  return nnx.merge(graphdef, params, rest)  # rest is empty: LEE keeps no non-Param state


def shipped_dir() -> pathlib.Path:
  """Where the package's own trained model lives (lee_jax.weights format)."""
  import importlib.resources
  return pathlib.Path(str(importlib.resources.files("lee_jax") / "weights"))


def shipped_available() -> bool:
  return (shipped_dir() / "meta.json").is_file()


def _checksum(files: dict) -> str:
  """A weights folder's label: the first 8 characters of its shards' sorted digests."""
  return "".join(sorted(map(str, files.values())))[:8]


def model_label(checkpoint: str | pathlib.Path | None = None) -> str:
  """A model in words: 'shipped <size> <checksum prefix>' (a later session may replace the
  shipped model, and a results folder must not mix cells of two of them), or the directory
  with what its meta.json says it holds ('w1/export (tiny, phase 5, step 200)')."""
  try:
    if checkpoint is None:
      meta = json.loads((shipped_dir() / "meta.json").read_text())
      return f"shipped {meta['model']} {_checksum(meta['files'])}"
    meta = json.loads((model_dir(checkpoint) / "meta.json").read_text())
    held = [str(meta["model"])] + [f"{k} {meta[k]}" for k in ("phase", "step") if k in meta]
    if isinstance(meta.get("files"), dict):  # a weights folder: its checksum tells two apart
      held.append(_checksum(meta["files"]))
    return f"{checkpoint} ({', '.join(held)})"
  except (OSError, ValueError, KeyError, TypeError, AttributeError, CheckpointError):
    return "shipped" if checkpoint is None else str(checkpoint)
