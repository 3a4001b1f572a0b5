#!/bin/bash
# Session 28, call 2: the wgmma planner's few-row rule (A with at most 64 rows: 64-row configs only). Every config
# forced against auto and cuBLAS on a wider few-row set, both B layouts; then the planner-mirror and auto tests.
#   bash bench/gpu.sh lab/gpu_session28b.sh
source bench/lab/lab_steps.sh
export AITER_LITE_CACHE_DIR=/tmp/c_new
timeout 200 /usr/bin/time -f "%e s wall, %U+%S CPU s" python3 -m aiter_lite -q build module_matmul --backend cuda \
  > "$L/build_matmul.txt" 2>&1
echo "matmul build rc=$? $(tail -n 1 "$L/build_matmul.txt") at $((SECONDS - t0)) s"
timeout 300 python3 bench/lab/matmul_small_m_configs.py --layouts n,t --configs 15,16,18,19,20 \
  --shapes 1x11008x4096,16x11008x4096,64x11008x4096,16x14336x4096,64x14336x4096,32x32000x4096,64x32000x4096,64x4096x4096,32x8192x8192,16x1024x4096,64x2048x8192,48x6144x4096 \
  > "$L/small_m.txt" 2>&1
echo "small-M configs rc=$? at $((SECONDS - t0)) s"; cat "$L/small_m.txt"
timeout 200 $P tests/test_gpu_matmul_wgmma.py tests/test_gpu_matmul_epilogue.py -k "mirror or auto or default" \
  > "$L/tests.txt" 2>&1
echo "tests rc=$? at $((SECONDS - t0)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$L/tests.txt" | tail -n 8
