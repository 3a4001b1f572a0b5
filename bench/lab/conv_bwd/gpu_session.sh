#!/bin/bash
# One device call for the backward kernels: link the kernels (objects prebuilt in $PREBUILT when carried,
# else compiled here) into the test shim, check them (NaN-poisoned outputs and workspace), time them
# against a same-bytes copy and causal-conv1d's backward (peers from the carried .peers prebuilt site),
# the real-API GPU tests of the backward paths, compute-sanitizer; then, with STAGE=2, the autograd bench
# (bench_conv_bwd, with fla) and racecheck. Run from the worktree root; writes under $OUT.
set -uo pipefail
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 BUILD=/tmp/conv_bwd PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export AITER_LITE_CACHE_DIR=/tmp/aiter_lite_cache AITER_LITE_LOCK_DIR=/tmp/aiter_lite_locks TRITON_CACHE_DIR=/tmp/triton_cache
t0=$SECONDS
stamp() { echo "== $1 (t=$((SECONDS - t0)) s)"; }
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader; date -u
  nvcc --version | grep release; ls "${PREBUILT:-none}" 2>&1 | tr '\n' ' '; echo; } | tee "$OUT/env.txt"
python3 bench/peer_cache.py --peers .peers --cache /tmp/aiter_lite_peers > "$OUT/peers.log" 2>&1 \
  && export PYTHONPATH="/tmp/aiter_lite_peers/site:$PYTHONPATH"
tail -2 "$OUT/peers.log"
( python3 -m aiter_lite -q build module_causal_conv1d --backend cuda ) > "$OUT/jit_build.log" 2>&1 &
jit=$!
stamp build; python3 bench/lab/conv_bwd/check.py build 2>&1 | tail -3
cp $BUILD/ptxas.txt "$OUT/" 2>/dev/null
if [ "${STAGE:-1}" = 1 ]; then
  stamp check; timeout 75 python3 bench/lab/conv_bwd/check.py check 2>&1 | tee "$OUT/check.log" | tail -25
  stamp time; timeout 50 python3 bench/lab/conv_bwd/check.py time --peer --quick 2>&1 | tee "$OUT/time.log" | tail -30
  wait $jit; tail -1 "$OUT/jit_build.log"
  stamp pytest; timeout 45 python3 -m pytest -q --maxfail=2 -m gpu tests/test_gpu_causal_conv1d_bwd_paths.py 2>&1 | tee "$OUT/pytest.log" | tail -12
  stamp memcheck; timeout 35 compute-sanitizer --tool memcheck --error-exitcode 9 python3 bench/lab/conv_bwd/check.py sanitize 2>&1 | tail -3
else
  stamp check; timeout 40 python3 bench/lab/conv_bwd/check.py check 2>&1 | tee "$OUT/check.log" | tail -12
  stamp memcheck; timeout 30 compute-sanitizer --tool memcheck --error-exitcode 9 python3 bench/lab/conv_bwd/check.py sanitize 2>&1 | tail -3
  stamp time; timeout 45 python3 bench/lab/conv_bwd/check.py time --peer 2>&1 | tee "$OUT/time.log" | tail -31
  wait $jit; tail -1 "$OUT/jit_build.log"
  stamp pytest; timeout 45 python3 -m pytest -q --maxfail=3 -m gpu tests/test_gpu_causal_conv1d_bwd_paths.py 2>&1 | tee "$OUT/pytest.log" | tail -6
  timeout 30 python3 -m pytest -q --maxfail=3 -m gpu tests/test_gpu_causal_conv1d_states.py -k "grad or backward" 2>&1 | tee "$OUT/pytest_states.log" | tail -4
  stamp bench; timeout 110 python3 bench/bench_conv_bwd.py --out "$OUT/conv_bwd.json" 2>&1 | tee "$OUT/bench.log" | tail -34
  stamp racecheck; timeout 30 compute-sanitizer --tool racecheck --error-exitcode 9 python3 bench/lab/conv_bwd/check.py sanitize 2>&1 | tail -3
fi
stamp done
