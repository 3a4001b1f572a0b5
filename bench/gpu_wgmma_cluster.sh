#!/usr/bin/env bash
# One device call for the 2 x 2 multicast clusters (configs 27-30) and the planner that picks them
# for B rows off the 32-byte sector grid: how many clusters of 1/2/4/8 CTAs fit at once, cold build
# of module_matmul, the wgmma GPU tests (incl. the planner's Python mirror), then
# bench/probe_wgmma_configs.py on such shapes (the shipped default next to chosen configs; B
# N-major, then K-major), and last the issue-6 table in interleaved rounds. About 6 minutes on an H100.
#   usage (H100, repo root): bash bench/gpu_wgmma_cluster.sh
source "$(dirname "$0")/gpu_prelude.sh"
nvcc -arch=sm_90a -o /tmp/cluster_occupancy bench/cluster_occupancy.cu && /tmp/cluster_occupancy | tee "$OUT/cluster_occupancy.txt"
cold_build_matmul

echo "== wgmma tests (t=$((SECONDS - t0)) s)"
timeout 300 python3 -m pytest -q -m gpu tests/test_gpu_matmul_wgmma.py tests/test_matmul_repack.py -x -p no:cacheprovider \
  2>&1 | tee "$OUT/pytest_wgmma.txt" | tail -2

echo "== B rows off the sector grid, shipped default vs chosen configs (t=$((SECONDS - t0)) s)"
timeout 150 python3 bench/probe_wgmma_configs.py --shapes 3000x3000x3000,5000x5000x5000,3000x3000x4096 \
  --dtypes bf16,fp16 --configs 27,29,30 --rounds 3 --out "$OUT/probe_offsector.json" 2>&1 | tee "$OUT/probe_offsector.txt"
timeout 60 python3 bench/probe_wgmma_configs.py --shapes 128x3000x8192,1000x3000x3000,300x3000x3000 --dtypes bf16 \
  --configs 18,29,30 --rounds 3 --out "$OUT/probe_offsector_small.json" 2>&1 | tee "$OUT/probe_offsector_small.txt"
echo "== K-major B (b = w.t()) with rows off 128 bytes, no repack (t=$((SECONDS - t0)) s)"
timeout 60 python3 bench/probe_wgmma_configs.py --b-layout t --shapes 3000x3000x3000,4096x4096x3000 --dtypes bf16 \
  --configs 13,21,30 --rounds 3 --out "$OUT/probe_kmajor.json" 2>&1 | tee "$OUT/probe_kmajor.txt"

echo "== issue-6 table, 3 interleaved rounds (t=$((SECONDS - t0)) s)"
timeout 240 python3 bench/bench_matmul.py --issue6 --variants auto --rounds 3 --out "$OUT/issue6.json" \
  > "$OUT/bench_issue6.txt" 2>&1
tail -32 "$OUT/bench_issue6.txt"
echo "(total $((SECONDS - t0)) s)"
