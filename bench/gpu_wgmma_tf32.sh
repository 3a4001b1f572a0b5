#!/usr/bin/env bash
# One device call for the Hopper tf32 wgmma path (csrc/kernels/matmul_wgmma_tf32.cuh): cold build of
# module_matmul, the tf32 wgmma GPU tests (pytest -x), the tf32 cases of tests/test_gpu_matmul.py
# (variant auto now runs the new kernel there), then the default (config=-1) and every wgmma_tf32
# config against torch.matmul with TF32 enabled (cuBLAS) at 4096^3, 8192^3, 2048^3 and 3000^3.
# The short table (fastest config per shape next to the default's pick, as ratios to cuBLAS) comes
# last. About 3-5 minutes on an H100 (budget: under 6).
#   usage (H100, repo root): bash bench/gpu_wgmma_tf32.sh [extra bench_matmul.py args]
# Everything also lands in $OUT (default /tmp/out): build.txt, pytest_tf32_*.txt, wgmma_tf32.json,
# bench_wgmma_tf32.txt.
source "$(dirname "$0")/gpu_prelude.sh"
cold_build_matmul

echo "== tf32 wgmma tests (t=$((SECONDS - t0)) s)"
timeout 150 python3 -m pytest -q -m gpu tests/test_gpu_matmul_wgmma.py -x -p no:cacheprovider -k tf32 2>&1 \
  | tee "$OUT/pytest_tf32_wgmma.txt" | tail -8
echo "== tf32 cases of tests/test_gpu_matmul.py (t=$((SECONDS - t0)) s)"
timeout 90 python3 -m pytest -q -m gpu tests/test_gpu_matmul.py -x -p no:cacheprovider -k tf32 2>&1 \
  | tee "$OUT/pytest_tf32_matmul.txt" | tail -4

echo "== timing: default and every wgmma_tf32 config vs cuBLAS TF32 (t=$((SECONDS - t0)) s)"
timeout 150 python3 bench/bench_matmul.py --dtypes tf32 \
  --shapes 4096x4096x4096,8192x8192x8192,2048x2048x2048,3000x3000x3000 \
  --sweep-path wgmma_tf32 --sweep-rep-ms 30 "$@" --out "$OUT/wgmma_tf32.json" \
  > "$OUT/bench_wgmma_tf32.txt" 2>&1
rc=$?
echo "(bench rc=$rc, total $((SECONDS - t0)) s; every timing line: $OUT/bench_wgmma_tf32.txt)"
if grep -q '^wrote ' "$OUT/bench_wgmma_tf32.txt"; then
  sed -n '/^wrote /,$p' "$OUT/bench_wgmma_tf32.txt"
else
  tail -40 "$OUT/bench_wgmma_tf32.txt"
fi
