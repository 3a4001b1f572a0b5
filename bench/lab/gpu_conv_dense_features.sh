#!/bin/bash
# One device call for the dense feature kernel (causal_conv1d_fwd_dense_features.cu): build, the lab
# correctness sweep, the states GPU tests, graph timings, compute-sanitizer memcheck on the quick sweep, then
# the plain forward's GPU tests (each test file in its own process). Run from the repository root; logs in $OUT.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
export AITER_LITE_CACHE_DIR=${AITER_LITE_CACHE_DIR:-/tmp/alc} AITER_LITE_LOCK_DIR=${AITER_LITE_LOCK_DIR:-/tmp/all}
OUT=${OUT:-/tmp/out}
nvidia-smi -L; date -u
( time python3 -m aiter_lite -q build module_causal_conv1d --backend cuda ) 2>&1 | tail -3
timeout ${CHECK_S:-50} python3 bench/lab/conv_dense_features.py --no-time 2>&1 | tail -30 | tee $OUT/check.txt
timeout ${TEST_S:-70} python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_causal_conv1d_states.py 2>&1 \
  | tail -8 | tee $OUT/tests_states.txt
timeout ${TIME_S:-60} python3 bench/lab/conv_dense_features.py --no-check 2>&1 | tee $OUT/time.txt
timeout ${SAN_S:-40} compute-sanitizer --tool memcheck python3 bench/lab/conv_dense_features.py --quick --no-time 2>&1 \
  | tail -3 | tee $OUT/memcheck.txt
timeout ${PLAIN_S:-60} python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_causal_conv1d.py -k "not past_2_31" \
  2>&1 | tail -4 | tee $OUT/tests_plain.txt
