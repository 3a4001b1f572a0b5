#!/bin/bash
# Session 28, call 6: configs 31 and 32 (64 x 64 and 64 x 128 tiles that load only 16 rows of A, so 21 and 12 stages of
# B fit) against 16 and 19 on few-row products, both B layouts; then the tail-shape tests of the new configs.
#   bash bench/gpu.sh lab/gpu_session28e.sh
source bench/lab/lab_steps.sh
export AITER_LITE_CACHE_DIR=/tmp/c_new
timeout 200 /usr/bin/time -f "%e s wall, %U+%S CPU s" python3 -m aiter_lite -q build module_matmul --backend cuda \
  > "$L/build.txt" 2>&1
echo "build rc=$? $(tail -n 1 "$L/build.txt") at $((SECONDS - t0)) s"
timeout 240 python3 bench/lab/matmul_small_m_configs.py --dtypes bf16 --layouts n,t --configs 16,19,31,32 \
  --shapes 1x11008x4096,7x11008x4096,16x11008x4096,1x4096x4096,16x4096x4096,16x14336x4096,16x32000x4096,1x8192x8192,16x8192x8192,16x4096x11008,16x1024x4096,7x2048x2048 \
  > "$L/small_m.txt" 2>&1
echo "configs rc=$? at $((SECONDS - t0)) s"; cat "$L/small_m.txt"
timeout 200 $P tests/test_gpu_matmul_wgmma.py -k "(tail_shapes or every_config or long_k or batched) and (31 or 32)" \
  > "$L/tests.txt" 2>&1
echo "tests rc=$? at $((SECONDS - t0)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$L/tests.txt" | tail -n 8
