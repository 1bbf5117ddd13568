#!/bin/bash
# $1: tag, $2: the checkout whose lee_jax runs
cd $2
for d in strogatz_glider1 strogatz_barmag2 feynman_I_6_2 strogatz_predprey1; do
  LEE_JAX_CPU_THREADS=1 PYTHONPATH=$2 python -c "import lee_jax,sys; print(lee_jax.__file__, file=sys.stderr)" 2>> /tmp/ab_$1_which.log
  LEE_JAX_CPU_THREADS=1 PYTHONPATH=$2 python -m lee_jax.infer --dataset $d --out /tmp/ab_$1_$d.json > /tmp/ab_$1_$d.log 2>&1
done
