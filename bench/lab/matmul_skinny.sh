# The skinny matmul kernel (issue 21) in one device call: build module_matmul, its GPU tests and the
# auto-dispatch subsets of the other matmul GPU tests, bench_matmul.py --odd (odd set vs cuBLAS,
# skinny rows vs copy bandwidth), Nsight Compute on a few skinny launches (matmul_skinny_ncu.py),
# compute-sanitizer memcheck on the compact sweep.
# Sourced by bench/gpu.sh (lab/matmul_skinny.sh): $OUT and the environment are set there.
SK_T0=$SECONDS
echo "== build module_matmul"
python3 -m aiter_lite -q clear module_matmul > /dev/null 2>&1
timeout 170 python3 -m aiter_lite -q build module_matmul --backend cuda > "$OUT/skinny_build.txt" 2>&1
echo "build rc=$? $((SECONDS - SK_T0)) s"; tail -n 5 "$OUT/skinny_build.txt"
echo "== tests/test_gpu_matmul_skinny.py ($((SECONDS - SK_T0)) s)"
timeout 60 python3 -m pytest -q -x -m gpu tests/test_gpu_matmul_skinny.py 2>&1 | tail -n 15
echo "== bench --odd ($((SECONDS - SK_T0)) s)"
timeout 80 python3 bench/bench_matmul.py --odd 2>&1 | tee "$OUT/skinny_odd.txt" | tail -n 120
echo "== ncu ($((SECONDS - SK_T0)) s)"
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
timeout 45 "$NCU" --clock-control none -k 'regex:skinny|gemv|gemm|nvjet|splitK|Kernel' \
  --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,launch__grid_size,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__issue_active.avg.pct_of_peak_sustained_active \
  python3 bench/lab/matmul_skinny_ncu.py > "$OUT/skinny_ncu.txt" 2>&1
echo "ncu rc=$?"; grep -E "^[0-9]+x|gpu__time|dram__thr|launch__grid|stalled|issue_active|warps_active" "$OUT/skinny_ncu.txt" | head -n 130
echo "== auto-dispatch subsets of the other matmul GPU tests ($((SECONDS - SK_T0)) s)"
timeout 50 python3 -m pytest -q -m gpu tests/test_gpu_matmul_wgmma.py tests/test_gpu_matmul.py \
  tests/test_gpu_matmul_epilogue.py -k "auto or mirror or tf32_shapes or backward" 2>&1 | tail -n 12
echo "== memcheck on the compact sweep ($((SECONDS - SK_T0)) s)"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 60 "$SAN" --tool memcheck --kernel-name kns=aiter_lite \
  --error-exitcode 3 python3 -m pytest -q -x -m gpu tests/test_gpu_matmul_skinny.py -k test_compact_sweep \
  > "$OUT/skinny_memcheck.txt" 2>&1
echo "memcheck rc=$? ($((SECONDS - SK_T0)) s)"; grep -E "ERROR SUMMARY|passed|failed" "$OUT/skinny_memcheck.txt" | tail -n 3
