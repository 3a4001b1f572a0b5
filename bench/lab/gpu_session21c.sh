#!/bin/bash
# Session 21, call 3: the committed forward rows kernel with features (final states written before the tile's loads)
# against main at the session's start (.peers/old_tree.tar): the forward A/B (conv_seq_idx_split.py, two rounds, now
# with 64 and 1024 sequences in a 1 x 4096 x 32768 row) and the seq_idx backward (conv_bwd_seq_idx_ab.py, one round:
# its marks kernel moved and gained the recur bits); then the GPU tests of the states file, every shard's backward
# path, the backward paths and causal-conv1d's own test file, and memcheck on the new rows-kernel tests.
source bench/lab/lab_steps.sh
NEW=$PWD OLD=/tmp/old_tree
peers_and_trees "$NEW" "$OLD"
ROUNDS=2 ab_rounds conv_seq_idx_split.py 120
ROUNDS=1 ab_rounds conv_bwd_seq_idx_ab.py 120
export PYTHONPATH=$NEW:/tmp/peers/site AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
gpu_checks "tests/test_gpu_causal_conv1d_states.py tests/test_gpu_conv_shards.py tests/test_gpu_causal_conv1d_bwd_paths.py tests/test_gpu_peer_suite.py" \
  "tests/test_gpu_causal_conv1d_states.py" "rows_kernel and (dtype2 or dtype0) and (shape0 or shape1-4-)" 260 100
grep -E "^\| (old|new) " "$L/ab.txt" | sort -t'|' -k4,4 -s
check_summary
