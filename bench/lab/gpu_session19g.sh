#!/bin/bash
# Session 19, the final device call for the backward changes: this tree (odd L through row-relative vectors,
# padding tokens masked inside the kernels) against main (.peers/old_tree.tar) on the seq_idx backward
# (conv_bwd_seq_idx_ab.py, 1 round) and on odd L beside causal-conv1d (conv_bwd_odd_ab.py --dao); the GPU tests of
# the backward paths, the states file and causal-conv1d's own test file; memcheck on the shifted rows and the
# padding tests. Summary last; logs under $OUT.
source bench/lab/lab_steps.sh
NEW=$PWD OLD=/tmp/old_tree
peers_and_trees "$NEW" "$OLD"
ROUNDS=1 ab_rounds conv_bwd_seq_idx_ab.py 90
for v in old new; do
  T=$([ $v = old ] && echo "$OLD" || echo "$NEW")
  (cd "$T" && PYTHONPATH=$T:/tmp/peers/site AITER_LITE_CACHE_DIR=/tmp/c_$v timeout 90 python3 "$NEW/bench/lab/conv_bwd_odd_ab.py" \
    $v $([ $v = new ] && echo --dao)) >> "$L/odd.txt" 2>> "$L/odd_err.txt"
done
echo "odd done at $((SECONDS - t0)) s"; tail -n 3 "$L/odd_err.txt"
export PYTHONPATH=$NEW:/tmp/peers/site AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
gpu_checks "tests/test_gpu_causal_conv1d_bwd_paths.py tests/test_gpu_causal_conv1d_states.py tests/test_gpu_peer_suite.py" \
  "tests/test_gpu_causal_conv1d_bwd_paths.py tests/test_gpu_causal_conv1d_states.py" "shifted_rows or padding_tokens_gradients_on_every_path and 4-" 240 100
cat "$L/ab.txt" "$L/odd.txt"; echo
check_summary
