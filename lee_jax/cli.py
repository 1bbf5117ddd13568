"""What every entry point shares: bad input is one line on stderr and exit code 2."""

from __future__ import annotations

import sys
from typing import Callable, NoReturn

from absl import app
from absl import flags
from absl import logging

EXIT_BAD_INPUT = 2


def fail(message: str) -> NoReturn:
  print(f"error: {message}", file=sys.stderr)
  sys.exit(EXIT_BAD_INPUT)


def _parse_flags(argv: list[str]) -> list[str]:
  try:
    return flags.FLAGS(argv)
  except flags.Error as e:  # a bad flag value is bad input too
    fail(str(e).splitlines()[0])


def run(main: Callable[[list[str]], None], *errors: type[Exception], positional: int = 0) -> None:
  """app.run(main) where the given exception types become `error: ...` and exit 2.

  positional: how many non-flag arguments main takes (more is bad input).
  """

  def guarded(argv):
    # Orbax and grain log every save/restore at INFO; users want the program's own output.
    logging.set_verbosity(logging.WARNING)
    if len(argv) > 1 + positional:
      fail(f"unexpected arguments: {' '.join(argv[1 + positional:])}")
    try:
      main(argv)
    except errors as e:
      fail(str(e))

  app.run(guarded, flags_parser=_parse_flags)
