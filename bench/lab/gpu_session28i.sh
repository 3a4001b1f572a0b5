#!/bin/bash
# Session 28, call 10 (experiment, not shipped as is): configs 33 and 34 load 32 rows of A (17 and 11 stages) against
# 31 and 32 (16 rows) and 16, on 1..32 rows: do 32-row configs serve 17..32 rows, and what do they lose at <= 16?
#   bash bench/gpu.sh lab/gpu_session28i.sh
source bench/lab/lab_steps.sh
export AITER_LITE_CACHE_DIR=/tmp/c_new
timeout 200 python3 -m aiter_lite -q build module_matmul --backend cuda > "$L/build.txt" 2>&1
echo "build rc=$? at $((SECONDS - t0)) s"
timeout 200 python3 bench/lab/matmul_small_m_configs.py --dtypes bf16 --layouts n,t --configs 16,19,31,32,33,34 \
  --shapes 1x11008x4096,16x11008x4096,17x11008x4096,24x11008x4096,32x11008x4096,1x4096x4096,16x4096x4096,24x4096x4096,32x4096x4096,32x14336x4096,16x8192x8192,32x8192x8192 \
  > "$L/small_m.txt" 2>&1
echo "configs rc=$? at $((SECONDS - t0)) s"; cat "$L/small_m.txt"
