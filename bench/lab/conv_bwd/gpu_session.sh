#!/bin/bash
# One device call for the backward kernels: build, every check, then the timings alone on the GPU.
# Kernel objects prebuilt off the GPU in $PREBUILT (same flags as check.py build; A/B variants' objects named
# as check.py's VARIANTS say) are linked as they are; the rest compile here.
#   1. in parallel: the real module's JIT build, the test shim and its A/B variants
#   2. in parallel (correctness only, no timing): check.py check (NaN-poisoned outputs and workspace),
#      compute-sanitizer memcheck, the real-API GPU tests of the backward (bwd paths, shards, the states
#      file's gradient tests (STATES_K; "" for the whole file), causal-conv1d's own test file), one pytest
#      process each
#   3. alone: AB=1 check.py ab (packed-sequence rows, ours beside the rows_* variants, interleaved rounds);
#      TIME=1 check.py time --peer --quick; NCU=1 ncu (stall reasons, DRAM, occupancy) over check.py profile;
#      BENCH=1 bench/bench_conv_bwd.py --quick through autograd (aiter_lite, causal-conv1d, fla, torch)
# Logs go to $OUT as they are written, so a run cut off by its time limit still brings back what it did.
set -uo pipefail
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 BUILD=/tmp/conv_bwd PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export AITER_LITE_CACHE_DIR=/tmp/aiter_lite_cache AITER_LITE_LOCK_DIR=/tmp/aiter_lite_locks TRITON_CACHE_DIR=/tmp/triton_cache
t0=$SECONDS
stamp() { echo "== $1 (t=$((SECONDS - t0)) s)"; }
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader; date -u
  nvcc --version | grep release; ls "${PREBUILT:-none}" 2>&1 | tr '\n' ' '; echo; } | tee "$OUT/env.txt"
python3 bench/peer_cache.py --peers .peers --cache /tmp/aiter_lite_peers > /tmp/peers.log 2>&1 \
  && export PYTHONPATH="/tmp/aiter_lite_peers/site:$PYTHONPATH"
tail -1 /tmp/peers.log
stamp build
( timeout "${JIT_LIMIT:-120}" python3 -m aiter_lite -q build module_causal_conv1d --backend cuda ) > "$OUT/jit_build.log" 2>&1 &
jit=$!
timeout 120 python3 bench/lab/conv_bwd/check.py build 2>&1 | tail -3
wait $jit; echo "jit build rc=$? $(tail -1 "$OUT/jit_build.log")"

stamp correctness
L="${CHECK_LIMIT:-100}"
timeout "$L" python3 bench/lab/conv_bwd/check.py check > "$OUT/check.log" 2>&1 &
c1=$!
timeout "$L" compute-sanitizer --tool memcheck --error-exitcode 9 python3 bench/lab/conv_bwd/check.py sanitize \
  > "$OUT/memcheck.log" 2>&1 &
c2=$!
pids=()
for f in test_gpu_causal_conv1d_bwd_paths test_gpu_conv_shards test_gpu_causal_conv1d_states test_gpu_peer_suite; do
  k=(); [ "$f" = test_gpu_causal_conv1d_states ] && [ -n "${STATES_K-grad or backward}" ] && k=(-k "${STATES_K-grad or backward}")
  lim=$L; [ "$f" = test_gpu_peer_suite ] && lim="${PEER_LIMIT:-$L}"
  timeout "$lim" python3 -m pytest -q -m gpu -p no:cacheprovider "tests/$f.py" "${k[@]}" > "/tmp/$f.log" 2>&1 &
  pids+=($!)
done
vpids=()
for v in ${CHECK_VARIANTS:-}; do  # check.py check on A/B variants too (their logs appended to check.log)
  timeout "$L" python3 bench/lab/conv_bwd/check.py check "$v" > "/tmp/check_$v.log" 2>&1 &
  vpids+=($!)
done
wait $c1; echo "check rc=$? $(tail -2 "$OUT/check.log" | tr '\n' ' ')"
i=0
for v in ${CHECK_VARIANTS:-}; do
  wait "${vpids[$i]}"; echo "check $v rc=$? $(tail -1 "/tmp/check_$v.log")"; i=$((i + 1))
  { echo "=== check $v"; tail -30 "/tmp/check_$v.log"; } >> "$OUT/check.log"
done
wait $c2; echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|sanitize calls' "$OUT/memcheck.log" | tr '\n' ' ')"
i=0
for f in test_gpu_causal_conv1d_bwd_paths test_gpu_conv_shards test_gpu_causal_conv1d_states test_gpu_peer_suite; do
  wait "${pids[$i]}"; echo "pytest $f rc=$? $(tail -1 "/tmp/$f.log")"; i=$((i + 1))
  { echo "=== $f"; tail -40 "/tmp/$f.log"; } >> "$OUT/pytest.log"  # (a call brings back at most 8 files)
done

if [ "${AB:-0}" = 1 ]; then
  stamp ab
  timeout "${AB_LIMIT:-60}" python3 bench/lab/conv_bwd/check.py ab "${AB_ROUNDS:-5}" 2>&1 | tee "$OUT/ab.log"
fi
if [ "${TIME:-0}" = 1 ]; then
  stamp time
  timeout "${TIME_LIMIT:-100}" python3 bench/lab/conv_bwd/check.py time --peer --quick 2>&1 | tee "$OUT/time.log" | tail -30
fi
if [ "${NCU:-0}" = 1 ]; then
  stamp ncu
  timeout "${NCU_LIMIT:-60}" ncu -k "regex:${NCU_KERNELS:-channel_last_staged|bwd_rows_kernel}" --launch-count "${NCU_COUNT:-2}" \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section SchedulerStats \
    --section WarpStateStats --section LaunchStats --section InstructionStats --print-details all \
    python3 bench/lab/conv_bwd/check.py profile > "$OUT/ncu.log" 2>&1
  echo "ncu rc=$? $(grep -c 'Section: ' "$OUT/ncu.log") sections"
fi
if [ "${BENCH:-0}" = 1 ]; then
  stamp bench
  # shellcheck disable=SC2086
  timeout "${BENCH_LIMIT:-110}" python3 bench/bench_conv_bwd.py --quick ${BENCH_ARGS:-} --out "$OUT/bench_conv_bwd.json" \
    > "$OUT/bench.log" 2>&1
  echo "bench rc=$?"; grep -E "^\s+(bf16|fp16|fp32)/|narrowed|^\|" "$OUT/bench.log" | tail -60
fi
stamp done
