# One device call comparing experiment builds of module_matmul (bench/lab/jit_experiments.json) on the
# wgmma path: for each module named, the default config and $CONFIGS at $SHAPES in $DTYPES, cuBLAS in
# the same interleaved rounds (bench/lab/probe_wgmma_configs.py). Modules there:
#   module_matmul_nostore      no epilogue global stores (AITER_LITE_WGMMA_EXPERIMENT_NO_STORE): the
#                              bound on what any faster epilogue could gain
#   module_matmul_group4/16    raster groups of 4 / 16 unit-rows instead of 8 (AITER_LITE_WGMMA_GROUP_M)
#   module_matmul_stagger1/2   consumer 1 trails consumer 0 by 1 / 2 k-tiles in every tile
#                              (AITER_LITE_WGMMA_EXPERIMENT_STAGGER), so that their epilogues alternate
#   usage (sourced by bench/gpu.sh): NO_CHECK=1 bench/gpu.sh lab/experiments.sh module_matmul module_matmul_nostore
#   env: SHAPES (default 4096^3,8192^3), DTYPES (bf16,fp16), CONFIGS (14,21), ROUNDS (3), NO_CHECK,
#        NCU_CONFIGS (e.g. 21,14: then each config of each module and cuBLAS also under Nsight Compute at
#        4096^3 fp16, two calls each: duration, SM clock), NCU_CLOCKS (base: ncu's locked base clock,
#        default; none: the clocks as they come, i.e. boost; both: base,none)
#   The modules run in the same interleaved rounds (one probe), so their ratios compare directly.
export AITER_LITE_JIT_CONFIG="$PWD/bench/lab/jit_experiments.json"
modules="$(IFS=,; echo "${*:-module_matmul}")"
echo "== builds, side by side (t=$((SECONDS - t0)) s)"
cold_build "${@:-module_matmul}"
echo "== $modules, interleaved in the same rounds (t=$((SECONDS - t0)) s)"
# NO_CHECK=1 for builds whose output is wrong by design (module_matmul_nostore).
timeout 400 python3 bench/lab/probe_wgmma_configs.py --modules "$modules" ${NO_CHECK:+--no-check} \
  --shapes "${SHAPES:-4096x4096x4096,8192x8192x8192}" --dtypes "${DTYPES:-bf16,fp16}" --configs "${CONFIGS:-14,21}" \
  --rounds "${ROUNDS:-3}" --out "$OUT/experiment_modules.json" 2>&1 | grep -v "^NVIDIA"
ncu_configs="${NCU_CONFIGS:-}" ncu_clocks="${NCU_CLOCKS:-base}"
for clock in ${ncu_clocks//,/ }; do
  for cfg in ${ncu_configs//,/ }; do
    echo "== ncu ($clock clocks) 4096^3 fp16, config $cfg: cuBLAS, $modules (t=$((SECONDS - t0)) s)"
    timeout 150 ncu --clock-control "$clock" --profile-from-start off -k regex:"nvjet|sm90_|matmul_wgmma" \
      --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second \
      python3 bench/lab/profile_matmul.py --shape 4096x4096x4096 --dtype fp16 --modules "$modules" --config "$cfg" \
      --repeat 2 > "$OUT/ncu_${clock}_config$cfg.txt" 2>&1
    echo "ncu rc=$?"
    grep -E "gpu__time|per_second" "$OUT/ncu_${clock}_config$cfg.txt" | sed 's/  */ /g' | cut -c1-90 | paste -sd' '
  done
done
echo "(total $((SECONDS - t0)) s)"
