#!/usr/bin/env bash
# One device call: what the wgmma epilogue's global stores cost the tile loop. Builds module_matmul
# and an experiment build of it without those stores (bench/jit_experiment_nostore.json defines
# AITER_LITE_WGMMA_EXPERIMENT_NO_STORE), then times configs 14 (plain epilogue) and 21 (half the
# stores deferred into the next tile's mainloop) in both builds at 4096^3 and 8192^3, cuBLAS in the
# same rounds. The gap between the builds bounds what a faster epilogue could gain.
#   usage (H100, repo root): bash bench/gpu_wgmma_epilogue.sh
source "$(dirname "$0")/gpu_prelude.sh"
export AITER_LITE_JIT_CONFIG="$PWD/bench/jit_experiment_nostore.json"
SHAPES=4096x4096x4096,8192x8192x8192
for module in module_matmul module_matmul_nostore; do
  echo "== $module (t=$((SECONDS - t0)) s)"
  timeout 200 python3 bench/probe_wgmma_configs.py --module "$module" --shapes $SHAPES --dtypes bf16 \
    --configs 14,21 --rounds 3 --out "$OUT/epilogue_$module.json" 2>&1 | grep -v "^NVIDIA"
done
echo "(total $((SECONDS - t0)) s)"
