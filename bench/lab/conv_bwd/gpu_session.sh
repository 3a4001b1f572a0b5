#!/bin/bash
# One device call for the backward kernels: link the kernels (objects prebuilt in $PREBUILT when carried,
# else compiled here) into the test shim and its A/B variants (check.py VARIANTS), check them (NaN-poisoned
# outputs and workspace), memcheck, time them against a same-bytes copy and causal-conv1d's backward (peers
# from the carried .peers prebuilt site), the real-API GPU tests of the backward; then STAGE=1: ncu on the
# channel-last and odd-L kernels and their SASS, STAGE=2: the autograd suite (bench/gpu.sh conv_bwd, with fla).
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
tail -1 "$OUT/peers.log"
( timeout 150 python3 -m aiter_lite -q build module_causal_conv1d --backend cuda ) > "$OUT/jit_build.log" 2>&1 &
jit=$!
stamp build; python3 bench/lab/conv_bwd/check.py build 2>&1 | tail -3
cp $BUILD/ptxas.txt "$OUT/" 2>/dev/null
stamp check; timeout 80 python3 bench/lab/conv_bwd/check.py check 2>&1 | tee "$OUT/check.log" | tail -12 &
chk=$!
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 python3 bench/lab/conv_bwd/check.py sanitize > "$OUT/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|sanitize calls' "$OUT/memcheck.log" | tr '\n' ' ')"
wait $chk
stamp time; timeout 70 python3 bench/lab/conv_bwd/check.py time --peer --quick 2>&1 | tee "$OUT/time.log" | tail -26
wait $jit; tail -1 "$OUT/jit_build.log"
stamp pytest; timeout 55 python3 -m pytest -q -x -m gpu tests/test_gpu_causal_conv1d_bwd_paths.py 2>&1 | tee "$OUT/pytest.log" | tail -3 &
p1=$!
timeout 50 python3 -m pytest -q -x -m gpu tests/test_gpu_causal_conv1d_states.py -k "grad or backward" 2>&1 | tee "$OUT/pytest_states.log" | tail -2
wait $p1
if [ "${STAGE:-1}" = 1 ]; then
  stamp ncu; timeout 30 ncu --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats \
    --section LaunchStats -k regex:"staged|rows_kernel|reduce" -c 4 python3 bench/lab/conv_bwd/check.py profile > "$OUT/ncu.txt" 2>&1
  grep -E "Duration|DRAM Throughput|Issue Slots|Warp Cycles Per Issued|Achieved Occupancy|No Eligible" "$OUT/ncu.txt" | head -24
  for o in "$BUILD"/causal_conv1d_bwd_channel_last.cu.o "$BUILD"/causal_conv1d_bwd_rows.cu.o; do
    cuobjdump -sass "$o" > "$OUT/$(basename "$o").sass" 2>&1; done
else
  stamp bench; timeout 90 bash bench/gpu.sh conv_bwd --quick 2>&1 | tee "$OUT/bench.log" | tail -16
fi
stamp done
