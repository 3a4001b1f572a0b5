#!/usr/bin/env bash
# One device call for the Hopper matmul path (issue 6): cold build of module_matmul, the wgmma GPU
# tests, compute-sanitizer (memcheck, racecheck, synccheck) on small shapes, and the issue's benchmark.
#   usage (H100, repo root): bash bench/gpu_wgmma_session.sh [extra bench_matmul.py args]
# Everything it prints also lands in $OUT (default /tmp/out).
set -uo pipefail
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export AITER_LITE_CACHE_DIR="${AITER_LITE_CACHE_DIR:-/tmp/aiter_lite_cache}" AITER_LITE_LOCK_DIR=/tmp/aiter_lite_locks
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/env.txt"
echo "== cold build of module_matmul"
( /usr/bin/time -f "module_matmul cold build %e s" python3 -m aiter_lite -q build module_matmul --backend cuda ) 2>&1 \
  | tail -3 | tee "$OUT/build.txt"
echo "== wgmma tests"
timeout 420 python3 -m pytest -q -m gpu tests/test_gpu_matmul_wgmma.py -x 2>&1 | tee "$OUT/pytest_wgmma.txt" | tail -15
echo "== sanitizer (check only, small shapes, both B layouts)"
for tool in memcheck racecheck synccheck; do
  for tb in "" "--transpose_b"; do
    timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 python3 op_tests/test_matmul.py --check_only \
      --variants wgmma -m 1,129,256 -n 136,264 -k 72,1000 --dtype fp16,bf16 --no_torch $tb \
      > "$OUT/sanitizer_wgmma_${tool}${tb:+_tb}.txt" 2>&1
    echo "wgmma $tool ${tb:-b} rc=$? $(grep -h 'ERROR SUMMARY' "$OUT/sanitizer_wgmma_${tool}${tb:+_tb}.txt" | tail -1)"
  done
done
echo "== issue 6 benchmark"
timeout 420 python3 bench/bench_matmul.py --issue6 "$@" --out "$OUT/matmul_issue6.json" 2>&1 \
  | tee "$OUT/bench_issue6.txt" | tail -40
