#!/bin/bash
# Session 27, call 3 (nvidia-h200-x2): the rows backward's seq_idx cut chosen per warp vector (not per tile) in this
# tree, against main (.peers/old_tree.tar), built side by side: conv_bwd_seq_idx_ab.py on both GPUs at once, then
# swapped; the seq_idx backward tests and memcheck on some; bench_cp_conv.py (now with the plain op given each
# rank's sequence ids) under torchrun (cp_two_gpus, written after the call, also runs the distributed tests first;
# call 3 ran the bench alone).
#   bash bench/gpu.sh lab/gpu_session27c.sh
source bench/lab/lab_steps.sh
NEW=$PWD OLD=/tmp/t_old
peers_and_trees "$NEW" "$OLD"
ab_two_gpus conv_bwd_seq_idx_ab.py
export AITER_LITE_CACHE_DIR=/tmp/c_new
CUDA_VISIBLE_DEVICES=0 timeout 300 $P tests/test_gpu_causal_conv1d_bwd_paths.py -k "seq_idx or seq" > "$L/tests.txt" 2>&1 &
CUDA_VISIBLE_DEVICES=1 timeout 300 $P tests/test_gpu_causal_conv1d_states.py -k "long_sequences or rows_kernel or \
grads_every_feature or padding or deterministic" > "$L/tests2.txt" 2>&1 &
wait
echo "tests done at $((SECONDS - t0)) s"
for f in tests tests2; do grep -E "^FAILED|^ERROR|passed|failed" "$L/$f.txt" | tail -n 6; done
cp_two_gpus
timeout 150 compute-sanitizer --tool memcheck --print-limit 20 $P -s tests/test_gpu_causal_conv1d_states.py \
  -k "long_sequences and (bfloat16 or float32) and (4 or 8)" > "$L/memcheck.txt" 2>&1
echo "memcheck: $(grep -hE "ERROR SUMMARY|passed|failed" "$L/memcheck.txt" | tail -n 3 | tr '\n' ' ')"
cat "$L"/ab_*.txt | grep -E "^\| (old|new)" | sort -t'|' -k4,4 -k2,2 | cut -c1-220
