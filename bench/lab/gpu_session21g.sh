#!/bin/bash
# Session 21, call 7: the forward's rows kernel in two build shards: the forward sweep (every width, layout and dtype
# through the real API) and the rows-kernel feature tests on the GPU, and the module's cold build time here.
source bench/lab/lab_steps.sh
export PYTHONPATH=$PWD AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
build_tree "$PWD" /tmp/c_new "$L/build_new.txt"; echo "build: $(tail -n 2 "$L/build_new.txt" | tr '\n' ' ')"
gpu_checks "tests/test_gpu_causal_conv1d.py tests/test_gpu_causal_conv1d_states.py" "tests/test_gpu_causal_conv1d_states.py" \
  "rows_kernel and dtype1 and shape0" 200 60
check_summary
