"""What every entry point shares: bad input is one line on stderr and exit code 2."""

from __future__ import annotations

import sys
from typing import Callable, NoReturn

from absl import app
from absl import flags

EXIT_BAD_INPUT = 2


def fail(message: str) -> NoReturn:
  print(f"error: {message}", file=sys.stderr)
  sys.exit(EXIT_BAD_INPUT)


def _parse_flags(argv: list[str]) -> list[str]:
  try:
    return flags.FLAGS(argv)
  except flags.Error as e:  # a bad flag value is bad input too
    fail(str(e).splitlines()[0])


def run(main: Callable[[list[str]], None], *errors: type[Exception]) -> None:
  """app.run(main) where the given exception types become `error: ...` and exit 2."""

  def guarded(argv):
    if len(argv) > 1:
      fail(f"unexpected arguments: {' '.join(argv[1:])}")
    try:
      main(argv)
    except errors as e:
      fail(str(e))

  app.run(guarded, flags_parser=_parse_flags)
