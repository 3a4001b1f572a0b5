#!/bin/bash
# Session 20, the last device call: seq_idx on shifted rows (odd L through the rows kernel) and the settled A/B knobs
# removed. This tree against main at the session's start (.peers/old_tree.tar) on the seq_idx backward
# (conv_bwd_seq_idx_ab.py, one round), the GPU tests of the backward paths, the shards and causal-conv1d's own
# test file, memcheck on the seq_idx rows tests (odd L included). Summary last; logs under $OUT.
source bench/lab/lab_steps.sh
NEW=$PWD OLD=/tmp/old_tree
peers_and_trees "$NEW" "$OLD"
ROUNDS=1 ab_rounds conv_bwd_seq_idx_ab.py 120
export PYTHONPATH=$NEW:/tmp/peers/site AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
gpu_checks "tests/test_gpu_causal_conv1d_bwd_paths.py tests/test_gpu_conv_shards.py tests/test_gpu_peer_suite.py" \
  "tests/test_gpu_causal_conv1d_bwd_paths.py" \
  "shifted_rows and 4- or not_non_decreasing and 2047 or padding_inside_sequences and 4- or rows_seq_idx and 4-" 330 150
cat "$L/ab.txt"; echo
check_summary
