# An A/B of a wgmma kernel change in one device call (sourced by bench/gpu.sh): the working tree's module_matmul against
# module_matmul_base (the sources at a base revision, from bench/lab/make_base_module.py, carried in
# .peers/base), built side by side, then timed in the same interleaved rounds against cuBLAS
# (bench/lab/probe_wgmma_configs.py), then profiled with Nsight Compute at 4096^3 (duration, SM clock,
# tensor-pipe activity, instructions), then the wgmma GPU tests on the new build.
#   local:  python bench/lab/make_base_module.py --rev HEAD
#   device: bench/gpu.sh lab/ab.sh            (carry .peers)
#   env: SHAPES, DTYPES (bf16,fp16), CONFIGS (extra configs, e.g. 14,21), ROUNDS (5), TESTS (pytest
#        paths run last; default the wgmma tests)
export AITER_LITE_JIT_CONFIG="$PWD/.peers/base/jit_base.json"
[ -f "$AITER_LITE_JIT_CONFIG" ] || { echo "no .peers/base: run bench/lab/make_base_module.py first and carry .peers"; return 2; }

echo "== builds: module_matmul and module_matmul_base (t=$((SECONDS - t0)) s)"
cold_build module_matmul module_matmul_base

echo "== A/B, interleaved rounds (t=$((SECONDS - t0)) s)"
timeout 300 python3 bench/lab/probe_wgmma_configs.py --modules module_matmul_base,module_matmul \
  --shapes "${SHAPES:-4096x4096x4096,8192x8192x8192}" --dtypes "${DTYPES:-bf16,fp16}" --configs "${CONFIGS:-}" \
  --rounds "${ROUNDS:-5}" --out "$OUT/ab.json" 2>&1 | grep -v "^NVIDIA" | tee "$OUT/ab.txt"

echo "== ncu 4096^3 fp16: cuBLAS, base, new; 2 calls each (t=$((SECONDS - t0)) s)"
METRICS=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__inst_executed.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_uniform_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active
timeout 180 ncu --profile-from-start off -k regex:"nvjet|sm90_|matmul_wgmma" --metrics "$METRICS" \
  python3 bench/lab/profile_matmul.py --shape 4096x4096x4096 --dtype fp16 --modules module_matmul_base,module_matmul \
  --repeat 2 > "$OUT/ncu_ab.txt" 2>&1
echo "ncu rc=$?"
grep -E "^  [A-Za-z_].*\(|gpu__time|per_second|inst_executed|pct_of_peak" "$OUT/ncu_ab.txt" | sed 's/  */ /g' | cut -c1-110

echo "== GPU tests on the new build (t=$((SECONDS - t0)) s)"
timeout 240 python3 -m pytest -m gpu -q -x -p no:cacheprovider ${TESTS:-tests/test_gpu_matmul_wgmma.py} \
  > "$OUT/tests.txt" 2>&1
echo "pytest rc=$?"; tail -n 3 "$OUT/tests.txt"
echo "(total $((SECONDS - t0)) s)"
