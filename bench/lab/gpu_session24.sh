#!/bin/bash
# Session 24. Part "validate": main's head with the two waiting branches merged (wip/bwd-dout-layout: dout copied
# into x's layout; wip/skinny-wide-wt: fp16/bf16 w.t() 8192..16384 columns to the skinny kernel). Builds both
# modules cold, runs the conv wide/states tests, the matmul skinny tests and memcheck on the rows kernel's
# runtime-width initial-state form (393abca), then times the dout-layout case, the skinny routing and the first
# call. Part "outdtype": matmul out_dtype=float32 on the GPU kernels (tests, memcheck, timing against cuBLAS).
#   bash bench/gpu.sh lab/gpu_session24.sh validate|outdtype
source bench/lab/lab_steps.sh
part=${1:-validate}
P="python3 -m pytest -q -m gpu -p no:cacheprovider"
( timeout 200 /usr/bin/time -f "%e s wall, %U+%S CPU s" python3 -m aiter_lite -q build module_causal_conv1d \
    module_matmul ) > "$L/build.txt" 2>&1
echo "build rc=$? $(tail -n 1 "$L/build.txt") at $((SECONDS - t0)) s"
if [ "$part" = validate ]; then
  gpu_checks "tests/test_gpu_conv_wide.py tests/test_gpu_causal_conv1d_states.py tests/test_gpu_matmul_skinny.py" \
    "tests/test_gpu_conv_wide.py" "forward_with_states and (rows or contiguous)" 240 120
  check_summary
  timeout 120 python3 bench/lab/conv_wide_ab.py new --widths 4,6 --cases "bwd channel-last" --dtypes bf16,fp32 \
    > "$L/dout_layout.txt" 2>&1; echo "dout layout rc=$? at $((SECONDS - t0)) s"; cat "$L/dout_layout.txt"
  timeout 150 python3 bench/lab/matmul_skinny_tc.py > "$L/skinny.txt" 2>&1
  echo "skinny rc=$? at $((SECONDS - t0)) s"; cat "$L/skinny.txt"
  timeout 60 python3 bench/lab/first_call.py > "$L/first_call.txt" 2>&1
  echo "first call rc=$? at $((SECONDS - t0)) s"; tail -n 30 "$L/first_call.txt"
else
  gpu_checks "tests/test_gpu_matmul_epilogue.py tests/test_gpu_matmul.py" "tests/test_gpu_matmul_epilogue.py" \
    "out_dtype" 300 150
  check_summary
  timeout 200 python3 bench/bench_matmul.py --epilogue --out-dtype float32 > "$L/outdtype.txt" 2>&1
  echo "bench rc=$? at $((SECONDS - t0)) s"; tail -n 40 "$L/outdtype.txt"
fi
