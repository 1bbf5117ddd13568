"""experiments/long_sums_replay.py with the long sums' rows-per-constant rules set from the
environment: RPC (every sum but the waves', default 10) and WRPC (the waves' sums, default 5).

    cd experiments && RPC=10 WRPC=7 python results/small_waves_2026-11-30/replays/rows_per_constant.py \
        IN.jsonl --out=OUT.jsonl
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))  # experiments/

from lee_jax import cli
from lee_jax import long_sums

long_sums.ROWS_PER_CONSTANT = float(os.environ.get("RPC", 10))
long_sums.WAVE_ROWS_PER_CONSTANT = float(os.environ.get("WRPC", 5))

import long_sums_replay  # noqa: E402  (after the rules are set; it reads them per call anyway)

long_sums_replay._define_flags()
cli.run(long_sums_replay.main, ValueError, FileNotFoundError, positional=1)
