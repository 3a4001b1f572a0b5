#!/bin/bash
# The forward's rows kernel launched programmatically after the seq_idx marks kernel (branch wip/fwd-seq-pdl, written
# in session 21, not yet run on a GPU) against main (.peers/old_tree.tar = `git archive main`): the forward A/B
# (conv_seq_idx_split.py, two rounds; the small shapes are where the marks kernel's launch shows), the states file's
# GPU tests (also under CUDA graphs: the A/B captures every call), memcheck on the rows-kernel tests.
source bench/lab/lab_steps.sh
NEW=$PWD OLD=/tmp/old_tree
build_trees "$NEW" "$OLD"
ROUNDS=2 ab_rounds conv_seq_idx_split.py 120
export PYTHONPATH=$NEW AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
gpu_checks "tests/test_gpu_causal_conv1d_states.py" "tests/test_gpu_causal_conv1d_states.py" \
  "rows_kernel and dtype2 and (shape0 or shape1-4-)" 200 100
grep -E "^\| (old|new) " "$L/ab.txt" | sort -t'|' -k4,4 -s
check_summary
