#!/bin/bash
# One device call (session 18, issue 19: serving prefill on [D, tokens] through the plain kernels plus a
# rewrite of each sequence's head): build this tree, time bench/lab/conv_prefill.py, then run the GPU tests of
# the states file (TESTS: a pytest -k expression, default all), compute-sanitizer memcheck on the varlen tests
# (SAN_TESTS) and racecheck on a short subset, one after another (in parallel they ran out of time in session
# 17). Every step has a timeout. Run from the repository root; logs under $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; L=$OUT/logs; mkdir -p "$L"
nvidia-smi -L; date -u
t0=$SECONDS
export PYTHONPATH=$PWD AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
timeout 200 /usr/bin/time -f "%e s wall, %U+%S CPU s" python3 -m aiter_lite -q build module_causal_conv1d --backend cuda \
  > "$L/build.txt" 2>&1; echo "build rc=$? $(tail -n 1 "$L/build.txt") at $((SECONDS - t0)) s"
timeout 90 python3 bench/lab/conv_prefill.py "${LABEL:-new}" > "$L/prefill.txt" 2> "$L/prefill_err.txt"
echo "prefill rc=$? at $((SECONDS - t0)) s"; tail -n 3 "$L/prefill_err.txt"
P="python3 -m pytest -q -m gpu -p no:cacheprovider"
timeout "${TEST_S:-300}" $P tests/test_gpu_causal_conv1d_states.py -k "${TESTS:-not zz}" > "$L/tests.txt" 2>&1
echo "tests rc=$? at $((SECONDS - t0)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$L/tests.txt" | tail -n 15
timeout "${SAN_S:-150}" compute-sanitizer --tool memcheck --print-limit 20 $P -s tests/test_gpu_causal_conv1d_states.py \
  -k "${SAN_TESTS:-varlen or prefill}" > "$L/memcheck.txt" 2>&1
echo "memcheck rc=$? at $((SECONDS - t0)) s"; grep -hE "ERROR SUMMARY|Invalid|passed|failed" "$L/memcheck.txt" | tail -n 6
timeout 60 compute-sanitizer --tool racecheck --print-limit 20 $P -s tests/test_gpu_causal_conv1d_states.py \
  -k "many_short and (dtype0 or dtype2)" > "$L/racecheck.txt" 2>&1
echo "racecheck rc=$? at $((SECONDS - t0)) s"; grep -hE "RACECHECK SUMMARY|hazard|passed|failed" "$L/racecheck.txt" | tail -n 4
echo; cat "$L/prefill.txt"
