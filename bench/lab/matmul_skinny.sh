# The skinny matmul kernel (issue 21) in one device call: build module_matmul (ptxas register/spill
# lines of the skinny kernels kept), its GPU tests, compute-sanitizer memcheck on the compact sweep,
# then bench_matmul.py --odd (odd set vs cuBLAS, skinny rows vs copy bandwidth).
# Sourced by bench/gpu.sh (lab/matmul_skinny.sh [--quick]): $OUT and the environment are set there.
SK_T0=$SECONDS
echo "== build module_matmul"
python3 -m aiter_lite -q clear module_matmul > /dev/null 2>&1
timeout 170 python3 -m aiter_lite -q build module_matmul --backend cuda > "$OUT/skinny_build.txt" 2>&1
echo "build rc=$? $((SECONDS - SK_T0)) s"; tail -n 5 "$OUT/skinny_build.txt"
echo "== tests/test_gpu_matmul_skinny.py ($((SECONDS - SK_T0)) s)"
timeout 80 python3 -m pytest -q -x -m gpu tests/test_gpu_matmul_skinny.py 2>&1 | tail -n 25
echo "== bench --odd ($((SECONDS - SK_T0)) s)"
timeout 100 python3 bench/bench_matmul.py --odd "$@" 2>&1 | tee "$OUT/skinny_odd.txt" | tail -n 120
echo "== memcheck on the compact sweep ($((SECONDS - SK_T0)) s)"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 90 "$SAN" --tool memcheck --kernel-name kns=aiter_lite \
  --error-exitcode 3 python3 -m pytest -q -x -m gpu tests/test_gpu_matmul_skinny.py -k test_compact_sweep \
  > "$OUT/skinny_memcheck.txt" 2>&1
echo "memcheck rc=$? ($((SECONDS - SK_T0)) s)"; grep -E "ERROR SUMMARY|passed|failed" "$OUT/skinny_memcheck.txt" | tail -n 3
