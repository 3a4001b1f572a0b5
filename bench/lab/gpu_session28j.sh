#!/bin/bash
# Session 28, call 11: the shipped few-row configs, 31 and 32 now loading 32 rows of A (call 10's 33 and 34): auto
# against the forced configs and cuBLAS (both B layouts), the matmul GPU suites, memcheck on the few-row tests, the
# odd-shape set.
#   bash bench/gpu.sh lab/gpu_session28j.sh
source bench/lab/lab_steps.sh
export AITER_LITE_CACHE_DIR=/tmp/c_new
timeout 200 python3 -m aiter_lite -q build module_matmul --backend cuda > "$L/build.txt" 2>&1
echo "build rc=$? at $((SECONDS - t0)) s"
timeout 150 python3 bench/lab/matmul_small_m_configs.py --dtypes bf16 --layouts n,t --configs 16,19,31,32 \
  --shapes 1x11008x4096,7x11008x4096,16x11008x4096,32x11008x4096,1x4096x4096,16x4096x4096,32x4096x4096,16x14336x4096,1x32000x4096,16x32000x4096,1x8192x8192,16x8192x8192,16x4096x11008,16x1024x4096,8x6144x4096,33x11008x4096 \
  > "$L/small_m.txt" 2>&1
echo "configs rc=$? at $((SECONDS - t0)) s"; cat "$L/small_m.txt"
timeout 200 $P tests/test_gpu_autotune.py tests/test_gpu_matmul_wgmma.py tests/test_gpu_matmul_epilogue.py \
  tests/test_gpu_matmul_skinny.py tests/test_gpu_matmul_out_fp32.py tests/test_gpu_matmul.py > "$L/tests.txt" 2>&1
echo "tests rc=$? at $((SECONDS - t0)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$L/tests.txt" | tail -n 12
timeout 100 compute-sanitizer --tool memcheck --print-limit 20 $P -s tests/test_gpu_matmul_wgmma.py -k "few_rows" \
  > "$L/memcheck.txt" 2>&1
echo "memcheck rc=$? at $((SECONDS - t0)) s"; grep -hE "ERROR SUMMARY|Invalid|passed|failed" "$L/memcheck.txt" | tail -n 4
timeout 100 python3 bench/bench_matmul.py --odd > "$L/odd.txt" 2>&1
echo "odd set rc=$? at $((SECONDS - t0)) s"; grep -E "geomean|x11008x4096" "$L/odd.txt"
