#!/usr/bin/env bash
# One device call to tune the Hopper matmul path (issue 6): cold build of module_matmul, the wgmma
# GPU tests (two groups, each stopping at its first failure), then every wgmma config and the
# default (config=-1) against torch.matmul (cuBLAS) on the issue's eight shapes in bf16 and fp16.
# Prints the per-config table, the fastest config per shape next to the default's pick, and the
# issue's target table last. About 4-6 minutes on an H100 (budget: under 8).
#   usage (H100, repo root): bash bench/gpu_wgmma_tune.sh [extra bench_matmul.py args]
# Everything also lands in $OUT (default /tmp/out): build.txt, pytest_wgmma_*.txt, wgmma_tune.json,
# bench_wgmma_tune.txt.
source "$(dirname "$0")/gpu_prelude.sh"
cold_build_matmul

echo "== wgmma tests: every config on the existing cases (t=$((SECONDS - t0)) s)"
timeout 160 python3 -m pytest -q -m gpu tests/test_gpu_matmul_wgmma.py -x -p no:cacheprovider \
  -k "not tail_shapes and not split_k and not overlap" 2>&1 | tee "$OUT/pytest_wgmma_main.txt" | tail -6
echo "== wgmma tests: tail shapes per config, split-K ranges, overlapped epilogue (t=$((SECONDS - t0)) s)"
timeout 160 python3 -m pytest -q -m gpu tests/test_gpu_matmul_wgmma.py -x -p no:cacheprovider \
  -k "tail_shapes or split_k or overlap" 2>&1 | tee "$OUT/pytest_wgmma_new.txt" | tail -6

echo "== timing: default and every wgmma config vs cuBLAS, issue 6 shapes, bf16 + fp16 (t=$((SECONDS - t0)) s)"
timeout 240 python3 bench/bench_matmul.py --issue6 --variants auto --configs --sweep-path wgmma_16 \
  --sweep-shapes issue6 --sweep-dtypes bf16,fp16 --sweep-rep-ms 30 "$@" --out "$OUT/wgmma_tune.json" \
  > "$OUT/bench_wgmma_tune.txt" 2>&1
rc=$?
echo "(bench rc=$rc, total $((SECONDS - t0)) s; every timing line: $OUT/bench_wgmma_tune.txt)"
# The tables: per-config TFLOP/s, fastest config per shape vs the default, and the targets last.
if grep -q '^wrote ' "$OUT/bench_wgmma_tune.txt"; then
  sed -n '/^wrote /,$p' "$OUT/bench_wgmma_tune.txt"
else
  tail -40 "$OUT/bench_wgmma_tune.txt"
fi
