#!/bin/bash
# Session 21, call 6: the final state written with every load issued before any store (state_len = width - 1), against
# the committed form (.peers/old_tree.tar); forward A/B (conv_seq_idx_split.py, two rounds), the GPU tests of the
# states file, memcheck on the forward's rows-kernel tests (final states included).
source bench/lab/lab_steps.sh
NEW=$PWD OLD=/tmp/old_tree
build_trees "$NEW" "$OLD"
ROUNDS=2 ab_rounds conv_seq_idx_split.py 120
export PYTHONPATH=$NEW AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
gpu_checks "tests/test_gpu_causal_conv1d_states.py" "tests/test_gpu_causal_conv1d_states.py" \
  "rows_kernel and (dtype2 or dtype0) and (shape0 or shape1-4- or shape1-8-)" 150 100
grep -E "^\| (old|new) " "$L/ab.txt" | sort -t'|' -k4,4 -s
check_summary
