# Issue 21's wgmma work in one device call: cold build of module_matmul; the GPU tests of the M-major A
# kernels (the backward's dB = A^T dC) and of the fused epilogue in the wgmma kernels, beside regression
# subsets of the other matmul GPU tests (separate processes); matmul_backward.py (dA, dB and the layer
# against cuBLAS); bench_matmul.py --epilogue --host --odd; matmul_odd_4095.py; memcheck on the new kernels.
# Sourced by bench/gpu.sh (lab/matmul_backward.sh): $OUT and the environment are set there.
BW_T0=$SECONDS
echo "== build module_matmul"
python3 -m aiter_lite -q clear module_matmul > /dev/null 2>&1
timeout 150 python3 -m aiter_lite -q build module_matmul --backend cuda > "$OUT/bw_build.txt" 2>&1
echo "build rc=$? $((SECONDS - BW_T0)) s"; tail -n 5 "$OUT/bw_build.txt"
echo "== GPU tests ($((SECONDS - BW_T0)) s)"
timeout 90 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_matmul_wgmma.py \
  -k "a_m_major or fallbacks or mirror or backward_runs" > "$OUT/bw_t1.txt" 2>&1 &
timeout 90 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_matmul_wgmma.py \
  -k "test_shapes or test_batched or test_every_config" > "$OUT/bw_t2.txt" 2>&1 &
timeout 90 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_matmul_epilogue.py > "$OUT/bw_t3.txt" 2>&1 &
timeout 90 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_matmul.py tests/test_gpu_matmul_skinny.py \
  -k "backward or grad or transposed or auto or epilogue" > "$OUT/bw_t4.txt" 2>&1 &
wait
for f in bw_t1 bw_t2 bw_t3 bw_t4; do echo "-- $f"; grep -E "passed|failed|Error|error|assert" "$OUT/$f.txt" | tail -n 12; done
echo "== matmul_backward.py ($((SECONDS - BW_T0)) s)"
timeout 70 python3 bench/lab/matmul_backward.py 2>&1 | tee "$OUT/bw_bench.txt"
echo "== bench_matmul.py --epilogue --host --odd ($((SECONDS - BW_T0)) s)"
timeout 100 python3 bench/bench_matmul.py --epilogue --host --odd 2>&1 | tee "$OUT/bw_epilogue.txt"
echo "== matmul_odd_4095.py ($((SECONDS - BW_T0)) s)"
timeout 30 python3 bench/lab/matmul_odd_4095.py 2>&1 | tee "$OUT/bw_odd.txt"
echo "== memcheck ($((SECONDS - BW_T0)) s)"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 40 "$SAN" --tool memcheck --kernel-name kns=matmul_wgmma \
  --error-exitcode 3 python3 -m pytest -q -x -m gpu -p no:cacheprovider tests/test_gpu_matmul_wgmma.py \
  -k "a_m_major_batched" > "$OUT/bw_memcheck.txt" 2>&1
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 40 "$SAN" --tool memcheck --kernel-name kns=matmul_wgmma \
  --error-exitcode 3 python3 -m pytest -q -x -m gpu -p no:cacheprovider tests/test_gpu_matmul_epilogue.py \
  -k "epilogue_wgmma_parts" >> "$OUT/bw_memcheck.txt" 2>&1
echo "memcheck rc=$? ($((SECONDS - BW_T0)) s)"; grep -E "ERROR SUMMARY|passed|failed" "$OUT/bw_memcheck.txt" | tail -n 6
