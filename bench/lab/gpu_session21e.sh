#!/bin/bash
# Session 21, call 5: the seq_idx marks with guard words (both loads of a window's marks unconditional, 32-bit
# indices), the cut without branches (keep_mask) and padding outputs masked before the conversion, against the
# first committed form (ef1ff34, .peers/old_tree.tar): forward (conv_seq_idx_split.py, two rounds) and backward
# (conv_bwd_seq_idx_ab.py, one round) A/B; ncu instruction counts of the rows kernel with seq_idx; the GPU tests of the
# states file, the backward paths and every shard; memcheck on the forward's and backward's seq_idx rows tests.
source bench/lab/lab_steps.sh
NEW=$PWD OLD=/tmp/old_tree
build_trees "$NEW" "$OLD"
ROUNDS=2 ab_rounds conv_seq_idx_split.py 120
ROUNDS=1 ab_rounds conv_bwd_seq_idx_ab.py 120
export PYTHONPATH=$NEW AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
timeout 60 ncu --kernel-name regex:fwd_rows --launch-count 1 --metrics smsp__inst_executed.sum,gpu__time_duration.sum \
  python3 bench/lab/conv_fwd_kernel_split.py --one seq4_8x5120x2048 > "$L/ncu_seq.txt" 2>&1
grep -E "inst_executed|duration" "$L/ncu_seq.txt"
gpu_checks "tests/test_gpu_causal_conv1d_states.py tests/test_gpu_conv_shards.py tests/test_gpu_causal_conv1d_bwd_paths.py" \
  "tests/test_gpu_causal_conv1d_states.py tests/test_gpu_causal_conv1d_bwd_paths.py" \
  "(rows_kernel and dtype2 and (shape0 or shape1-4-)) or (rows_seq_idx and 4-) or (not_non_decreasing and 4-)" 240 120
grep -E "^\| (old|new) " "$L/ab.txt" | sort -t'|' -k4,4 -s
check_summary
