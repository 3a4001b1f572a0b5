#!/bin/bash
# One device call (session 16): the merged tree of session 15 checked as a whole, and issue 22's cold builds.
#   1. cold builds, each module alone from an empty cache dir under /usr/bin/time (wall, CPU s), shipped registry;
#   2. the GPU test files of every conv path and the sharded wgmma kernels, side by side, on that build, with
#      causal-conv1d's own test file (tests/test_gpu_peer_suite.py; needs .peers with its sdist and einops);
#   3. compute-sanitizer memcheck/racecheck over session 15's new kernels (the backward's seq_idx marks kernel,
#      the forward's chunks kernel with its seq_idx vote);
#   4. module_matmul again with the wgmma files unsharded and in 5 shards (bench/lab/shard_variants.py), if time is left;
# between 1 and 2, on a quiet GPU: issue 21's odd-shape set against cuBLAS (bench_matmul.py --odd: every M of the target set) and
# bench/lab/matmul_odd_4095.py.
# Run from the repository root: `bash bench/lab/gpu_session16.sh`. Logs in $OUT, the summary last.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD AITER_LITE_LOCK_DIR=/tmp/s16_locks
L=${OUT:-/tmp/out}; mkdir -p "$L"
t0=$SECONDS
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; nproc;
  python3 -c "import torch; print('torch', torch.__version__)"; } > "$L/env.txt" 2>&1
cat "$L/env.txt"

timed() {  # NAME CACHE_DIR ARGS... : a cold build from an empty cache dir
  local name=$1 dir=$2; shift 2
  rm -rf "$dir"
  AITER_LITE_CACHE_DIR=$dir timeout 120 /usr/bin/time -f "%e s wall, %U+%S CPU s" \
    python3 -m aiter_lite -q build "$@" > "$L/$name.txt" 2>&1
  echo "$name rc=$? $(tail -n 1 "$L/$name.txt")" | tee -a "$L/builds.txt"
}
timed build_conv /tmp/s16_cache module_causal_conv1d --backend cuda
cp -r /tmp/s16_cache /tmp/s16_keep
timed build_matmul_s3 /tmp/s16_mm module_matmul --backend cuda
cp -r /tmp/s16_mm/* /tmp/s16_keep/
export AITER_LITE_CACHE_DIR=/tmp/s16_keep
echo "builds done at $((SECONDS - t0)) s"

# Issue 21's odd-shape set against cuBLAS on a quiet GPU (rows off 16 bytes now launch without the dispatcher).
timeout 130 python3 bench/bench_matmul.py --odd --out "$L/odd.json" > "$L/odd.txt" 2>&1
timeout 40 python3 bench/lab/matmul_odd_4095.py > "$L/odd_4095.txt" 2>&1
echo "odd shapes done at $((SECONDS - t0)) s"

P="python3 -m pytest -q -m gpu -p no:cacheprovider"
T=${TEST_S:-230}
run_bg() {  # NAME ARGS...
  local name=$1; shift
  ( timeout "$T" "$@" > "$L/$name.txt" 2>&1; echo "rc=$?" >> "$L/$name.txt" ) &
}
run_bg t_conv $P tests/test_gpu_causal_conv1d.py -k "not past_2_31"
run_bg t_states $P tests/test_gpu_causal_conv1d_states.py
run_bg t_bwd $P tests/test_gpu_causal_conv1d_bwd_paths.py tests/test_gpu_conv_shards.py
run_bg t_peer $P tests/test_gpu_peer_suite.py
run_bg t_matmul $P tests/test_gpu_matmul_wgmma.py tests/test_gpu_matmul_epilogue.py \
  -k "every_config or backward_runs_wgmma or default_config_matches or wgmma"
CS="compute-sanitizer --kernel-name kns=aiter_lite --print-limit 20"
( timeout "$T" bash -c "
  $CS --tool memcheck $P tests/test_gpu_causal_conv1d_bwd_paths.py -k rows_seq_idx > $L/s_bwd_memcheck.txt 2>&1
  $CS --tool racecheck $P tests/test_gpu_causal_conv1d_bwd_paths.py -k 'rows_seq_idx and x_dtype1' > $L/s_bwd_racecheck.txt 2>&1
  $CS --tool memcheck $P tests/test_gpu_causal_conv1d_states.py -k 'chunks_kernel_long_rows or padding_tokens' > $L/s_fwd_memcheck.txt 2>&1
  $CS --tool racecheck $P tests/test_gpu_causal_conv1d_states.py -k 'padding_tokens' > $L/s_fwd_racecheck.txt 2>&1
" ) &
wait
echo "tests done at $((SECONDS - t0)) s"

python3 bench/lab/shard_variants.py /tmp/s16_variants.json --module module_matmul \
  --variant s5:matmul_wgmma_fp16=5,matmul_wgmma_bf16=5
export AITER_LITE_JIT_CONFIG=/tmp/s16_variants.json
[ $((SECONDS - t0)) -lt ${VARIANTS_BEFORE_S:-430} ] && timed build_matmul_unsharded /tmp/s16_v1 module_matmul_unsharded --backend cuda
[ $((SECONDS - t0)) -lt ${VARIANTS_BEFORE_S:-430} ] && timed build_matmul_s5 /tmp/s16_v5 module_matmul_s5 --backend cuda
unset AITER_LITE_JIT_CONFIG
echo "all done at $((SECONDS - t0)) s"

echo "== failures"
grep -h "^FAILED\|^ERROR " "$L"/t_*.txt | head -30
echo "== odd shapes"; tail -n 25 "$L/odd.txt"; tail -n 12 "$L/odd_4095.txt"
echo "== summary"
cat "$L/builds.txt"
for f in "$L"/t_*.txt; do echo "$(basename "$f" .txt): $(grep -E "passed|failed|error" "$f" | tail -n 1) $(tail -n 1 "$f")"; done
for f in "$L"/s_*.txt; do echo "$(basename "$f" .txt): $(grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$f" | tail -n 1) | $(grep -E "passed|failed" "$f" | tail -n 1)"; done
