#!/usr/bin/env bash
# One device call: what the wgmma epilogue's global stores cost the tile loop. Times configs 14 (one
# epilogue slot per warp) and 21 (half the stores deferred into the next tile's mainloop) and the
# default at 4096^3 and 8192^3 in module_matmul and in module_matmul_nostore, an experiment build
# without those stores (bench/jit_experiments.json defines AITER_LITE_WGMMA_EXPERIMENT_NO_STORE),
# cuBLAS in the same rounds. The gap between the builds bounds what any faster epilogue could gain.
#   usage (H100, repo root): bash bench/gpu_wgmma_epilogue.sh [dtypes, default bf16,fp16]
source "$(dirname "$0")/gpu_prelude.sh"
export AITER_LITE_JIT_CONFIG="$PWD/bench/jit_experiments.json"
SHAPES=4096x4096x4096,8192x8192x8192
for module in module_matmul module_matmul_nostore; do
  echo "== $module (t=$((SECONDS - t0)) s)"
  timeout 200 python3 bench/probe_wgmma_configs.py --module "$module" --shapes $SHAPES --dtypes "${1:-bf16,fp16}" \
    --configs 14,21 --rounds 3 --out "$OUT/epilogue_$module.json" 2>&1 | grep -v "^NVIDIA"
done
echo "(total $((SECONDS - t0)) s)"
