#!/bin/bash
# One device call (session 18, issue 19: seq_idx on x [B, D, L] through the plain kernels plus a fix-up kernel):
# this tree and the tree in .peers/old_tree.tar (`git archive -o .peers/old_tree.tar BASE`) built side by side,
# bench/lab/conv_seq_idx_split.py old/new in alternation (ROUNDS, default 2), then this tree's GPU tests of the
# states file (TESTS, default all), compute-sanitizer memcheck and racecheck on the seq_idx tests. Every step has a
# timeout. Run from the repository root with .peers carried; logs under $OUT.
source bench/lab/lab_steps.sh
NEW=$PWD OLD=/tmp/old_tree
build_trees "$NEW" "$OLD"
ab_rounds conv_seq_idx_split.py 90
export PYTHONPATH=$NEW AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
states_checks "${TESTS:-not zz}" "${SAN_TESTS:-padding_tokens or dense_kernel_states_and_seq_idx}" \
  "${RACE_TESTS:-padding_tokens and contiguous}" 300 150 90
echo; cat "$L/ab.txt"
