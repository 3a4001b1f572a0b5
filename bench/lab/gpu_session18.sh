#!/bin/bash
# One device call (session 18, issue 19: serving prefill on [D, tokens] through the plain kernels plus a
# rewrite of each sequence's head): build this tree, time bench/lab/conv_prefill.py, then run the GPU tests of
# the states file (TESTS: a pytest -k expression, default all), compute-sanitizer memcheck on the varlen tests
# (SAN_TESTS) and racecheck on a short subset, one after another (in parallel they ran out of time in session
# 17). Every step has a timeout. Run from the repository root; logs under $OUT.
source bench/lab/lab_steps.sh
build_tree "$PWD" /tmp/c_new "$L/build.txt"; echo "build $(tail -n 2 "$L/build.txt" | tr '\n' ' ')at $((SECONDS - t0)) s"
export PYTHONPATH=$PWD AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
timeout 90 python3 bench/lab/conv_prefill.py "${LABEL:-new}" > "$L/prefill.txt" 2> "$L/prefill_err.txt"
echo "prefill rc=$? at $((SECONDS - t0)) s"; tail -n 3 "$L/prefill_err.txt"
states_checks "${TESTS:-not zz}" "${SAN_TESTS:-varlen or prefill}" "many_short and (dtype0 or dtype2)" \
  "${TEST_S:-300}" "${SAN_S:-150}" 60
echo; cat "$L/prefill.txt"
