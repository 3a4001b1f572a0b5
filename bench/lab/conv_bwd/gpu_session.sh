#!/bin/bash
# One device call for the backward kernels (session 14's plan: build, every check, then the timings alone
# on the GPU). Kernel objects prebuilt off the GPU in $PREBUILT (same flags as check.py build) are linked
# as they are; the rest compile here.
#   1. in parallel: the real module's JIT build, the test shim and its A/B variants (check.py VARIANTS)
#   2. in parallel (correctness only, no timing): check.py check (NaN-poisoned outputs and workspace),
#      compute-sanitizer memcheck, the real-API GPU tests of the backward (two pytest processes)
#   3. alone: check.py time --peer --quick (kernels vs a same-bytes copy and causal-conv1d; A/B columns)
#   4. BENCH=1: bench/bench_conv_bwd.py --quick through autograd (aiter_lite, causal-conv1d, fla, torch)
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
( timeout 120 python3 -m aiter_lite -q build module_causal_conv1d --backend cuda ) > "$OUT/jit_build.log" 2>&1 &
jit=$!
timeout 120 python3 bench/lab/conv_bwd/check.py build 2>&1 | tail -3
wait $jit; echo "jit build rc=$? $(tail -1 "$OUT/jit_build.log")"

stamp correctness
timeout 100 python3 bench/lab/conv_bwd/check.py check > "$OUT/check.log" 2>&1 &
c1=$!
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 python3 bench/lab/conv_bwd/check.py sanitize \
  > "$OUT/memcheck.log" 2>&1 &
c2=$!
timeout 100 python3 -m pytest -q -x -m gpu -p no:cacheprovider tests/test_gpu_causal_conv1d_bwd_paths.py \
  > /tmp/pytest_bwd_paths.log 2>&1 &
c3=$!
timeout 100 python3 -m pytest -q -x -m gpu -p no:cacheprovider tests/test_gpu_causal_conv1d_states.py \
  > /tmp/pytest_states.log 2>&1 &
c4=$!
wait $c1; echo "check rc=$? $(tail -2 "$OUT/check.log" | tr '\n' ' ')"
wait $c2; echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|sanitize calls' "$OUT/memcheck.log" | tr '\n' ' ')"
wait $c3; echo "pytest bwd_paths rc=$? $(tail -1 /tmp/pytest_bwd_paths.log)"
wait $c4; echo "pytest states rc=$? $(tail -1 /tmp/pytest_states.log)"
cat /tmp/pytest_bwd_paths.log /tmp/pytest_states.log > "$OUT/pytest.log"  # (a call brings back at most 8 files)

stamp time
timeout "${TIME_LIMIT:-100}" python3 bench/lab/conv_bwd/check.py time --peer --quick 2>&1 | tee "$OUT/time.log" | tail -30
if [ "${BENCH:-0}" = 1 ]; then
  stamp bench
  timeout "${BENCH_LIMIT:-110}" python3 bench/bench_conv_bwd.py --quick --out "$OUT/bench_conv_bwd.json" > "$OUT/bench.log" 2>&1
  echo "bench rc=$?"; grep -E "^\s+(bf16|fp16|fp32)/|narrowed|^\|" "$OUT/bench.log" | tail -60
fi
stamp done
