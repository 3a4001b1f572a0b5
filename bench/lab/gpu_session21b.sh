#!/bin/bash
# Session 21, call 2: the forward's rows kernel with features (final states now written by the kernel) against main
# (.peers/old_tree.tar), four lab variants of the features kernel chosen at run time (AITER_LITE_FWD_ROWS_VARIANT:
# bit 0 skips the cut where a vector's window holds no mark, bit 1 runs 7 blocks an SM instead of 8), two rounds in
# alternation; the GPU tests of the states file (the new tests' bias dtype fixed) and memcheck on the new tests.
source bench/lab/lab_steps.sh
NEW=$PWD OLD=/tmp/old_tree
build_trees "$NEW" "$OLD"
for r in 1 2; do
  (cd "$OLD" && PYTHONPATH=$OLD AITER_LITE_CACHE_DIR=/tmp/c_old timeout 100 python3 "$NEW/bench/lab/conv_seq_idx_split.py" old) \
    >> "$L/ab.txt" 2>> "$L/ab_err.txt"
  for v in 0 1 2 3; do
    AITER_LITE_FWD_ROWS_VARIANT=$v PYTHONPATH=$NEW AITER_LITE_CACHE_DIR=/tmp/c_new timeout 100 \
      python3 bench/lab/conv_seq_idx_split.py "v$v" >> "$L/ab.txt" 2>> "$L/ab_err.txt"
  done
done
echo "A/B done at $((SECONDS - t0)) s"; tail -n 3 "$L/ab_err.txt"
export PYTHONPATH=$NEW AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
gpu_checks "tests/test_gpu_causal_conv1d_states.py" "tests/test_gpu_causal_conv1d_states.py" \
  "rows_kernel and dtype2 and (shape0 or shape1-4-)" 200 120
grep -E "^\| (old|v[0-3]) " "$L/ab.txt" | sort -t'|' -k4,4 -k3,3 -s | grep -v "16×2048×129\|3×1536×777\|2047"
check_summary
