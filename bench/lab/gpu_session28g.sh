#!/bin/bash
# Session 28, call 8: call 7 again after its fix (the launcher's a_rows guard had refused every product with more
# rows than a tile): the matmul GPU suites, memcheck on the new configs' tests, issue 21's odd-shape set.
#   bash bench/gpu.sh lab/gpu_session28g.sh
source bench/lab/lab_steps.sh
export AITER_LITE_CACHE_DIR=/tmp/c_new
timeout 200 /usr/bin/time -f "%e s wall, %U+%S CPU s" python3 -m aiter_lite -q build module_matmul --backend cuda \
  > "$L/build.txt" 2>&1
echo "build rc=$? $(tail -n 1 "$L/build.txt") at $((SECONDS - t0)) s"
timeout 300 $P tests/test_gpu_matmul_wgmma.py tests/test_gpu_matmul_epilogue.py tests/test_gpu_matmul_skinny.py \
  tests/test_gpu_matmul_out_fp32.py tests/test_gpu_matmul.py tests/test_gpu_autotune.py > "$L/tests.txt" 2>&1
echo "tests rc=$? at $((SECONDS - t0)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$L/tests.txt" | tail -n 12
timeout 100 compute-sanitizer --tool memcheck --print-limit 20 $P -s tests/test_gpu_matmul_wgmma.py -k "few_rows" \
  > "$L/memcheck.txt" 2>&1
echo "memcheck rc=$? at $((SECONDS - t0)) s"; grep -hE "ERROR SUMMARY|Invalid|passed|failed" "$L/memcheck.txt" | tail -n 4
timeout 150 python3 bench/bench_matmul.py --odd > "$L/odd.txt" 2>&1
echo "odd set rc=$? at $((SECONDS - t0)) s"; grep -E "geomean|^\| [0-9]+x" "$L/odd.txt" | head -n 40
