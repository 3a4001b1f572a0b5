# Session 22: the skinny kernel's tensor-core form (issue 21). Build module_matmul, time it against the
# wgmma kernel and cuBLAS (matmul_skinny_tc.py, CUDA graphs), its GPU tests and the dispatch subsets of the other
# matmul tests, memcheck on the compact sweep, bench_matmul.py --odd.
# Sourced by bench/gpu.sh (lab/gpu_session22.sh): $OUT and the environment are set there.
S_T0=$SECONDS
echo "== build module_matmul"
python3 -m aiter_lite -q clear module_matmul > /dev/null 2>&1
timeout 170 python3 -m aiter_lite -q build module_matmul --backend cuda > "$OUT/build.txt" 2>&1
echo "build rc=$? $((SECONDS - S_T0)) s"; tail -n 3 "$OUT/build.txt"
echo "== matmul_skinny_tc.py ($((SECONDS - S_T0)) s)"
timeout 150 python3 bench/lab/matmul_skinny_tc.py 2>&1 | tee "$OUT/skinny_tc.txt"
echo "== tests/test_gpu_matmul_skinny.py ($((SECONDS - S_T0)) s)"
timeout 120 python3 -m pytest -q -x -m gpu tests/test_gpu_matmul_skinny.py 2>&1 | tail -n 15
echo "== dispatch subsets of the other matmul GPU tests ($((SECONDS - S_T0)) s)"
timeout 60 python3 -m pytest -q -m gpu tests/test_gpu_matmul_wgmma.py tests/test_gpu_matmul.py \
  tests/test_gpu_matmul_epilogue.py -k "auto or mirror or tf32_shapes or backward or cluster" 2>&1 | tail -n 12
echo "== memcheck on the compact sweep ($((SECONDS - S_T0)) s)"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 90 "$SAN" --tool memcheck --kernel-name kns=aiter_lite \
  --error-exitcode 3 python3 -m pytest -q -x -m gpu tests/test_gpu_matmul_skinny.py -k test_compact_sweep \
  > "$OUT/memcheck.txt" 2>&1
echo "memcheck rc=$? ($((SECONDS - S_T0)) s)"; grep -E "ERROR SUMMARY|passed|failed" "$OUT/memcheck.txt" | tail -n 3
echo "== bench --odd ($((SECONDS - S_T0)) s)"
timeout 80 python3 bench/bench_matmul.py --odd 2>&1 | tee "$OUT/odd.txt" | tail -n 60
echo "== done ($((SECONDS - S_T0)) s)"
