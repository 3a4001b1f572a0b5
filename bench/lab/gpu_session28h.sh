#!/bin/bash
# Session 28, call 9: the final tree: the matmul GPU suites with the autotuner's (its sm_90 filter in the test and
# plan_vs_measure.py) and memcheck on the few-row configs.
#   bash bench/gpu.sh lab/gpu_session28h.sh
source bench/lab/lab_steps.sh
export AITER_LITE_CACHE_DIR=/tmp/c_new
timeout 200 python3 -m aiter_lite -q build module_matmul --backend cuda > "$L/build.txt" 2>&1
echo "build rc=$? at $((SECONDS - t0)) s"
timeout 300 $P tests/test_gpu_autotune.py tests/test_gpu_matmul_wgmma.py tests/test_gpu_matmul_epilogue.py \
  tests/test_gpu_matmul_skinny.py tests/test_gpu_matmul_out_fp32.py tests/test_gpu_matmul.py > "$L/tests.txt" 2>&1
echo "tests rc=$? at $((SECONDS - t0)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$L/tests.txt" | tail -n 12
