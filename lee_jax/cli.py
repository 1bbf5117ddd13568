"""What every entry point shares: bad input is one line on stderr and exit code 2."""

from __future__ import annotations

import contextlib
import os
import pathlib
import secrets
import sys
from typing import Callable, NoReturn

from absl import app
from absl import flags
from absl import logging

from lee_jax import cpu_threads

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a Ctrl-C'd program


class PathError(ValueError):
  """An output path the program cannot write: every entry point reports it as bad input."""


def write_atomically(path: str | os.PathLike, write: Callable[[pathlib.Path], object]) -> pathlib.Path:
  """write(tmp) fills a new file beside path, which then replaces path in one rename: a
  killed run never leaves half a file. The temporary name is this process's own (a fixed
  NAME.tmp replaced any file a user kept under that name)."""
  path = pathlib.Path(path)
  tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
  try:
    write(tmp)
    os.replace(tmp, path)
  except BaseException:
    tmp.unlink(missing_ok=True)
    raise
  return path


def output_file(path: str | os.PathLike, overwrite: bool = True, flag: str = "--out") -> pathlib.Path:
  """Checks an output file before the work that fills it: not a directory, its directory
  there and writable, and (overwrite=False) not already written."""
  p = pathlib.Path(path)
  if p.is_dir():
    raise PathError(f"{flag} {p} is a directory, not a file")
  if p.exists() and not overwrite:
    raise PathError(f"{flag} {p} exists; pass --overwrite to replace it")
  parent = p.absolute().parent
  if not parent.is_dir():
    raise PathError(f"{flag} {p}: directory {parent} does not exist")
  if not os.access(parent, os.W_OK):
    raise PathError(f"{flag} {p}: directory {parent} is not writable")
  return p


def output_dir(path: str | os.PathLike, flag: str = "--out_dir") -> pathlib.Path:
  """An output directory, created if missing (with its parents); one that cannot be, or a
  file in its place, is a PathError."""
  p = pathlib.Path(path)
  if p.exists() and not p.is_dir():
    raise PathError(f"{flag} {p} exists and is not a directory")
  try:
    p.mkdir(parents=True, exist_ok=True)
  except OSError as e:
    raise PathError(f"{flag} {p}: cannot create it ({e.strerror or e})") from None
  if not os.access(p, os.W_OK):
    raise PathError(f"{flag} {p} is not writable")
  return p


@contextlib.contextmanager
def exclusive(directory: str | os.PathLike, what: str):
  """Holds a lock on the folder (flock on its own descriptor: no file is left in it) for
  the block: a second `what` on the same folder is a PathError, not a run that dies at its
  first save with Orbax's tracebacks, or two runs' checkpoints mixed. The lock goes with
  the process, however it ends."""
  import fcntl

  fd = os.open(directory, os.O_RDONLY)
  try:
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      raise PathError(f"{directory} is in use by another {what}; wait for it to end or "
                      "pass another folder") from None
    yield
  finally:
    os.close(fd)  # (closing releases the lock)


@contextlib.contextmanager
def no_empty_dir_left(path: str | os.PathLike):
  """A block that may create the folder `path` (an output or run folder): if it raises while
  the folder it created is still empty, the folder goes again (a command refused at its
  start leaves nothing behind)."""
  path = pathlib.Path(path)
  created = not path.exists()
  try:
    yield
  except Exception:
    if created and path.is_dir() and not any(path.iterdir()):
      path.rmdir()
    raise


def fail(message: str) -> NoReturn:
  print(f"error: {message}", file=sys.stderr)
  sys.exit(EXIT_BAD_INPUT)


# absl's help flags (and -h, which absl does not know and argparse users type)
HELP_FLAGS = ("help", "helpshort", "helpfull", "helpxml", "?")


def _asks_for_help(argv: list[str]) -> bool:
  return any(a.startswith("-") and a.lstrip("-").split("=")[0] in HELP_FLAGS for a in argv[1:])


def _takes_value(arg: str) -> bool:
  """Whether arg is a flag given without `=` whose value is the next argument."""
  name = arg.lstrip("-")
  return (arg.startswith("-") and "=" not in arg and name in flags.FLAGS
          and not flags.FLAGS[name].boolean)


def _help_alias(argv: list[str]) -> list[str]:
  """argv with a -h of its own read as --help: not after `--`, nor as a flag's value."""
  out = list(argv[:1])
  for i, a in enumerate(argv[1:], 1):
    if a == "--":
      return out + argv[i:]
    out.append("--help" if a == "-h" and not _takes_value(argv[i - 1]) else a)
  return out


def _parse_flags(argv: list[str]) -> list[str]:
  argv = _help_alias(argv)
  try:
    return flags.FLAGS(argv)
  except flags.Error as e:  # a bad flag value is bad input too
    fail(str(e).splitlines()[0])
  except SystemExit as e:
    # absl exits 1 once it has printed the help it was asked for; asking is no failure
    # (argparse, PySR's CLI and scripts that check `--help` expect 0)
    if e.code == 1 and _asks_for_help(argv):
      sys.exit(0)
    raise


def run(main: Callable[[list[str]], None], *errors: type[Exception],
        positional: int | None = 0) -> None:
  """app.run(main) where the given exception types become `error: ...` and exit 2.

  positional: how many non-flag arguments main takes (more is bad input; None: any number).
  """

  def guarded(argv):
    # Orbax and grain log every save/restore at INFO; users want the program's own output.
    logging.set_verbosity(logging.WARNING)
    if positional is not None and len(argv) > 1 + positional:
      fail(f"unexpected arguments: {' '.join(argv[1 + positional:])}")
    try:  # a malformed $LEE_JAX_CPU_THREADS fails here, not when the search's workers start
      threads = cpu_threads.requested(None)
    except ValueError as e:
      fail(str(e))
    if threads is not None:  # it sizes this process's XLA CPU pool too, before JAX starts
      from lee_jax import sharding  # (deferred: JAX's import, for this case only)
      if not sharding.in_cluster():  # there jax.distributed.initialize() must come first
        cpu_threads.limit(threads)
    try:
      main(argv)
    except (*errors, PathError) as e:
      fail(str(e))
    except KeyboardInterrupt:  # Ctrl-C: one line, not a traceback from wherever it landed
      print("\ninterrupted", file=sys.stderr)
      sys.exit(EXIT_INTERRUPTED)

  app.run(guarded, flags_parser=_parse_flags)
