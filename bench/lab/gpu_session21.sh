#!/bin/bash
# Session 21, first device call: the forward's seq_idx and initial states on the rows kernel (marks + cut, as the
# backward) against main at the session's start (.peers/old_tree.tar). Both trees built side by side; the GPU tests
# of the states file (new rows-kernel tests included), the backward's seq_idx rows tests and every shard's path
# (bwd_rows now in 8 shards); memcheck on the new rows-kernel tests; then the A/B (conv_seq_idx_split.py, two rounds
# in alternation). Summary last; logs under $OUT.
source bench/lab/lab_steps.sh
NEW=$PWD OLD=/tmp/old_tree
build_trees "$NEW" "$OLD"
export PYTHONPATH=$NEW AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
gpu_checks "tests/test_gpu_causal_conv1d_states.py tests/test_gpu_conv_shards.py tests/test_gpu_causal_conv1d_bwd_paths.py" \
  "tests/test_gpu_causal_conv1d_states.py" "rows_kernel and dtype2 and (shape0 or shape1-4-)" 330 120
ROUNDS=2 ab_rounds conv_seq_idx_split.py 100
grep -E "^\| (old|new)" "$L/ab.txt" | sort -t'|' -k4,4 -s
check_summary
