"""Phase 4 with one Table 7 weight changed (a CPU probe, not kept in the project)."""
import dataclasses
import sys

from absl import app

from lee_jax import configs

variant = sys.argv.pop(1)
w = configs.PHASES[4].weights
w = {"kl0": dataclasses.replace(w, kl=0.0), "expr1": dataclasses.replace(w, expr=1.0)}[variant]
configs.PHASES[4] = dataclasses.replace(configs.PHASES[4], weights=w)
print("phase 4 weights:", w, flush=True)
from lee_jax import train  # noqa: E402

app.run(train.main)
