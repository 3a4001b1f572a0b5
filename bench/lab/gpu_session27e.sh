#!/bin/bash
# Session 27, call 5 (nvidia-h200-x2): the rows forward's cut slots computed with the plain taps and then only the
# outputs within the halo after a sequence start again (this tree), against main (.peers/old_tree.tar: the cut of
# every output of a slot). conv_seq_idx_split.py on both GPUs at once, then swapped; then the conv GPU suites
# (states, forward, backward paths) and causal-conv1d's own tests on the two GPUs; memcheck on the new seq_idx
# tests.
#   bash bench/gpu.sh lab/gpu_session27e.sh
source bench/lab/lab_steps.sh
NEW=$PWD OLD=/tmp/t_old
peers_and_trees "$NEW" "$OLD"
ab_two_gpus conv_seq_idx_split.py
cat "$L"/ab_*.txt | grep -E "^\| (old|new)" | sort -t'|' -k4,4 -k3,3 -k2,2 | cut -c1-200
export AITER_LITE_CACHE_DIR=/tmp/c_new
( CUDA_VISIBLE_DEVICES=0 timeout 240 $P tests/test_gpu_causal_conv1d_states.py tests/test_gpu_causal_conv1d.py \
    > "$L/tests_a.txt" 2>&1
  CUDA_VISIBLE_DEVICES=0 timeout 90 compute-sanitizer --tool memcheck --print-limit 20 $P -s \
    tests/test_gpu_causal_conv1d_states.py -k "long_sequences and (4 or 8)" > "$L/memcheck.txt" 2>&1 ) &
( CUDA_VISIBLE_DEVICES=1 timeout 150 $P tests/test_gpu_peer_suite.py > "$L/tests_peer.txt" 2>&1
  CUDA_VISIBLE_DEVICES=1 timeout 300 $P tests/test_gpu_causal_conv1d_bwd_paths.py > "$L/tests_bwd.txt" 2>&1 ) &
wait
echo "tests done at $((SECONDS - t0)) s"
for f in tests_a tests_peer tests_bwd; do echo "$f: $(grep -E "^FAILED|^ERROR|passed|failed" "$L/$f.txt" | tail -n 4 | tr '\n' ' ')"; done
echo "memcheck: $(grep -hE "ERROR SUMMARY|passed|failed" "$L/memcheck.txt" | tail -n 3 | tr '\n' ' ')"
