#!/usr/bin/env bash
# Issue 22, cold builds on the GPU host in one run: module_causal_conv1d as shipped (jit_config.json's
# shards) against the same sources unsharded and against more shards (bench/lab/shard_variants.py), each
# from an empty cache with wall and CPU seconds (/usr/bin/time: CPU seconds are what a 2-core machine
# pays) and its slowest units (.ninja_log); the GPU tests that reach every shard; then module_matmul and
# `build --all`. docs/jit.md ("Cold builds") records the results.
#   cd <repo> && PYTHONPATH=$PWD bash bench/lab/gpu_shards.sh [STEPS] 2>&1 | tee log
# STEPS (default "conv tests matmul all"; also s8, threads1): which parts to run, in that order.
set -uo pipefail
PY=${PYTHON:-python3}
STEPS=${1:-conv tests matmul all}
BUDGET=${BUDGET:-225}  # seconds: steps that would not fit are skipped
export AITER_LITE_LOCK_DIR=$(mktemp -d) AITER_LITE_LOG=warning PYTHONUNBUFFERED=1
echo "host: $(nproc) cores, $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(date -u +%F)"
$PY -c "import aiter_lite.ops, aiter_lite.jit.builder, aiter_lite.jit.admin" || exit 1  # .pyc written once
$PY bench/lab/shard_variants.py /tmp/variants.json \
  --variant s8:causal_conv1d_bwd_channel_last=8,causal_conv1d_bwd_rows=8,causal_conv1d_bwd_tile=4,causal_conv1d_update=2
export AITER_LITE_JIT_CONFIG=/tmp/variants.json
rows=()

slowest() {  # cache dir, module, n: the build's units by wall time, from ninja's log (ms start/end)
  local log=$(ls "$1"/$2/cuda-*/.ninja_log 2>/dev/null | head -1)
  [ -n "$log" ] || return 0
  awk 'NR > 1 { n = split($4, p, "/"); printf "%6.1f s  %s (%.1f-%.1f s)\n", ($2 - $1) / 1000, p[n], $1 / 1000, $2 / 1000 }' "$log" \
    | sort -rn | head -${3:-6} | sed 's/^/    /'
}

cold() {  # label, need (s), command...: one build from an empty cache dir; wall and CPU seconds
  local label=$1 need=$2; shift 2
  if [ $((BUDGET - SECONDS)) -lt "$need" ]; then echo "SKIPPED (time): $label"; return 1; fi
  local cache=$(mktemp -d)
  AITER_LITE_CACHE_DIR=$cache /usr/bin/time -f "%e %U %S" -o /tmp/time.txt timeout $((BUDGET - SECONDS)) "$@" \
    >/dev/null 2>/tmp/cold.err
  local rc=$? t=($(tail -1 /tmp/time.txt))
  [ $rc = 0 ] || { echo "FAILED ($rc): $label"; tail -5 /tmp/cold.err; }
  local cpu=$(awk "BEGIN { printf \"%.0f\", ${t[1]:-0} + ${t[2]:-0} }")
  rows+=("| $label | ${t[0]:-?} | $cpu |")
  echo "$label: ${t[0]:-?} s wall, $cpu CPU s"
  LAST_CACHE=$cache
}

for step in $STEPS; do case $step in
  conv)
    cold "module_causal_conv1d, shipped shards" 40 $PY -m aiter_lite build module_causal_conv1d --backend cuda
    SHIPPED=$LAST_CACHE; slowest "$SHIPPED" module_causal_conv1d 8
    cold "module_causal_conv1d, unsharded" 45 $PY -m aiter_lite build module_causal_conv1d_unsharded --backend cuda
    slowest "$LAST_CACHE" module_causal_conv1d_unsharded 6
    ;;
  s8)
    cold "module_causal_conv1d, s8" 40 $PY -m aiter_lite build module_causal_conv1d_s8 --backend cuda
    slowest "$LAST_CACHE" module_causal_conv1d_s8 6 ;;
  threads1)  # the shipped shards without nvcc --split-compile threads
    cold "module_causal_conv1d, shipped shards, AITER_LITE_DEVICE_THREADS=1" 40 \
      env AITER_LITE_DEVICE_THREADS=1 $PY -m aiter_lite build module_causal_conv1d --backend cuda
    slowest "$LAST_CACHE" module_causal_conv1d 4 ;;
  tests)  # on the shipped build; three files at once
    if [ $((BUDGET - SECONDS)) -lt 50 ]; then echo "SKIPPED (time): tests"; continue; fi
    export AITER_LITE_CACHE_DIR=${SHIPPED:-$(mktemp -d)}
    t=$((BUDGET - SECONDS - 75)); [ $t -gt 90 ] && t=90
    pt() { timeout $t $PY -m pytest -q -x -p no:cacheprovider "$@" 2>&1 | tail -2 | sed "s|^|$1: |"; }
    pt tests/test_gpu_conv_shards.py &
    pt tests/test_gpu_causal_conv1d_bwd_paths.py &
    pt tests/test_gpu_causal_conv1d.py -k "forward_sweep or update" &
    pt tests/test_gpu_causal_conv1d_states.py &
    wait; unset AITER_LITE_CACHE_DIR ;;
  matmul)
    cold "module_matmul (unchanged)" 35 $PY -m aiter_lite build module_matmul --backend cuda
    slowest "$LAST_CACHE" module_matmul 6 ;;
  all)
    cold "build --all (cpu + cuda, both modules)" 30 env -u AITER_LITE_JIT_CONFIG $PY -m aiter_lite build --all ;;
esac; done

echo
echo "| build (cold, $(nproc) cores) | wall s | CPU s |"
echo "| --- | --- | --- |"
printf '%s\n' "${rows[@]}"
