#!/bin/bash
# One device call (session 19): this tree (main + the forward seq_idx fix-up as resident warps + the backward
# seq_idx fix-up) and the tree in .peers/old_tree.tar (`git archive -o .peers/old_tree.tar main`) built side by
# side; the backward paths' GPU tests; forward and backward seq_idx A/B (conv_seq_idx_split.py,
# conv_bwd_seq_idx_ab.py, ROUNDS each, default 2); the states file's GPU tests; memcheck on the seq_idx tests of
# both directions; racecheck on the fix-up tests. Every step has a timeout. Run from the repository root with
# .peers carried; logs under $OUT.
source bench/lab/lab_steps.sh
NEW=$PWD OLD=/tmp/old_tree
build_trees "$NEW" "$OLD"
P="python3 -m pytest -q -m gpu -p no:cacheprovider"
( export PYTHONPATH=$NEW AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
  timeout 150 $P tests/test_gpu_causal_conv1d_bwd_paths.py > "$L/bwd_tests.txt" 2>&1
  echo "bwd tests rc=$? at $((SECONDS - t0)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$L/bwd_tests.txt" | tail -n 12 )
ab_rounds conv_seq_idx_split.py 90
ab_rounds conv_bwd_seq_idx_ab.py 90
export PYTHONPATH=$NEW AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
timeout 100 compute-sanitizer --tool memcheck --print-limit 20 $P -s tests/test_gpu_causal_conv1d_bwd_paths.py \
  -k "rows_seq_idx_fixup" > "$L/bwd_memcheck.txt" 2>&1
echo "bwd memcheck rc=$? at $((SECONDS - t0)) s"; grep -hE "ERROR SUMMARY|Invalid|passed|failed" "$L/bwd_memcheck.txt" | tail -n 4
timeout 80 compute-sanitizer --tool racecheck --print-limit 20 $P -s tests/test_gpu_causal_conv1d_bwd_paths.py \
  -k "rows_seq_idx_fixup and bfloat16" > "$L/bwd_racecheck.txt" 2>&1
echo "bwd racecheck rc=$? at $((SECONDS - t0)) s"; grep -hE "RACECHECK SUMMARY|hazard|passed|failed" "$L/bwd_racecheck.txt" | tail -n 4
states_checks "${TESTS:-not zz}" "${SAN_TESTS:-padding_tokens or seq_idx_on_plain_kernels_with_fixup}" \
  "${RACE_TESTS:-seq_idx_on_plain_kernels_with_fixup and bfloat16}" 200 100 70
echo; cat "$L/ab.txt"
