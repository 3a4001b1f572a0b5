#!/usr/bin/env bash
# One device call comparing experiment builds of module_matmul (bench/jit_experiments.json) on the
# wgmma path: for each module named, the default config and $CONFIGS at $SHAPES in $DTYPES, cuBLAS in
# the same interleaved rounds (bench/probe_wgmma_configs.py). Modules there:
#   module_matmul_nostore      no epilogue global stores (AITER_LITE_WGMMA_EXPERIMENT_NO_STORE): the
#                              bound on what any faster epilogue could gain
#   module_matmul_group4/16    raster groups of 4 / 16 unit-rows instead of 8 (AITER_LITE_WGMMA_GROUP_M)
#   usage (H100, repo root): NO_CHECK=1 bash bench/gpu_wgmma_experiments.sh module_matmul module_matmul_nostore
#   env: SHAPES (default 4096^3,8192^3), DTYPES (bf16,fp16), CONFIGS (14,21), ROUNDS (3), NO_CHECK
#   The modules run in the same interleaved rounds (one probe), so their ratios compare directly.
source "$(dirname "$0")/gpu_prelude.sh"
export AITER_LITE_JIT_CONFIG="$PWD/bench/jit_experiments.json"
modules="$(IFS=,; echo "${*:-module_matmul}")"
echo "== $modules, interleaved in the same rounds (t=$((SECONDS - t0)) s)"
# NO_CHECK=1 for builds whose output is wrong by design (module_matmul_nostore).
timeout 400 python3 bench/probe_wgmma_configs.py --modules "$modules" ${NO_CHECK:+--no-check} \
  --shapes "${SHAPES:-4096x4096x4096,8192x8192x8192}" --dtypes "${DTYPES:-bf16,fp16}" --configs "${CONFIGS:-14,21}" \
  --rounds "${ROUNDS:-3}" --out "$OUT/experiment_modules.json" 2>&1 | grep -v "^NVIDIA"
echo "(total $((SECONDS - t0)) s)"
