#!/bin/bash
# Session 28, call 7: the planner's few-row rule with configs 31 and 32 (A with at most 16 rows loads only those):
# auto against every 64-row config and cuBLAS on a wider set (both B layouts, fp16 too), issue 21's odd-shape set,
# the matmul GPU suites, memcheck on the new configs' tests.
#   bash bench/gpu.sh lab/gpu_session28f.sh
source bench/lab/lab_steps.sh
export AITER_LITE_CACHE_DIR=/tmp/c_new
timeout 200 /usr/bin/time -f "%e s wall, %U+%S CPU s" python3 -m aiter_lite -q build module_matmul --backend cuda \
  > "$L/build.txt" 2>&1
echo "build rc=$? $(tail -n 1 "$L/build.txt") at $((SECONDS - t0)) s"
timeout 200 python3 bench/lab/matmul_small_m_configs.py --dtypes bf16,fp16 --layouts n,t --configs 16,19,31,32 \
  --shapes 1x11008x4096,7x11008x4096,16x11008x4096,1x4096x4096,7x4096x4096,16x4096x4096,16x14336x4096,1x32000x4096,16x32000x4096,1x8192x8192,16x8192x8192,16x4096x11008,16x1024x4096,16x2048x4096,16x3072x4096,8x6144x4096,17x11008x4096 \
  > "$L/small_m.txt" 2>&1
echo "configs rc=$? at $((SECONDS - t0)) s"; cat "$L/small_m.txt"
timeout 150 python3 bench/bench_matmul.py --odd > "$L/odd.txt" 2>&1
echo "odd set rc=$? at $((SECONDS - t0)) s"; grep -E "geomean|^\| (1|7|16)x" "$L/odd.txt"
timeout 330 $P tests/test_gpu_matmul_wgmma.py tests/test_gpu_matmul_epilogue.py tests/test_gpu_matmul_skinny.py \
  tests/test_gpu_matmul_out_fp32.py tests/test_gpu_matmul.py -x -q > "$L/tests.txt" 2>&1
echo "tests rc=$? at $((SECONDS - t0)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$L/tests.txt" | tail -n 8
timeout 120 compute-sanitizer --tool memcheck --print-limit 20 $P -s tests/test_gpu_matmul_wgmma.py -k "few_rows and bf16 or few_rows and pad8" \
  > "$L/memcheck.txt" 2>&1
echo "memcheck rc=$? at $((SECONDS - t0)) s"; grep -hE "ERROR SUMMARY|Invalid|passed|failed" "$L/memcheck.txt" | tail -n 4
