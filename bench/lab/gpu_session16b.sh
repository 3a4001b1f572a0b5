#!/bin/bash
# Session 16's second device call: per-unit compile times of both CUDA modules on the 16-core host
# (bench/lab/tu_times.py, sm_90a, 16 units at once: which units bound each module's cold build), the cold
# `build --all`, and bench/lab/matmul_skinny_route.py (M <= 16 on the odd-shape set: auto, skinny, cuBLAS).
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD AITER_LITE_LOCK_DIR=/tmp/s16b_locks
L=${OUT:-/tmp/out}; mkdir -p "$L"
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader
rm -rf /tmp/s16b_all
AITER_LITE_CACHE_DIR=/tmp/s16b_all timeout 120 /usr/bin/time -f "build --all: %e s wall, %U+%S CPU s" \
  python3 -m aiter_lite -q build --all > "$L/build_all.txt" 2>&1
tail -n 1 "$L/build_all.txt"
export AITER_LITE_CACHE_DIR=/tmp/s16b_all
timeout 100 python3 bench/lab/matmul_skinny_route.py > "$L/skinny_route.txt" 2>&1
echo "route done at $((SECONDS - t0)) s"
timeout 80 python3 bench/lab/tu_times.py module_causal_conv1d --jobs 16 > "$L/tu_conv.txt" 2>&1
timeout 60 python3 bench/lab/tu_times.py module_matmul --jobs 16 > "$L/tu_matmul.txt" 2>&1
echo "all done at $((SECONDS - t0)) s"
cat "$L/skinny_route.txt"
head -n 30 "$L/tu_conv.txt"; head -n 16 "$L/tu_matmul.txt"
