#!/bin/bash
# Session 27, call 2 (nvidia-h200-x2): this tree (heads of rows shorter than the width: the features kernel alone
# forward, naive kernels backward, naive plain forward on short strided rows; the rows forward's seq_idx cut only on
# warp vectors that meet a start) against main (.peers/old_tree.tar), built side by side. conv_seq_idx_split.py on
# both GPUs at once (old on one, new on the other, then swapped); the GPU tests of the changed paths; the CP
# distributed tests on two GPUs; bench_cp_conv.py under torchrun with profiles.
#   bash bench/gpu.sh lab/gpu_session27b.sh
source bench/lab/lab_steps.sh
NEW=$PWD OLD=/tmp/t_old
peers_and_trees "$NEW" "$OLD"
ab_two_gpus conv_seq_idx_split.py
export AITER_LITE_CACHE_DIR=/tmp/c_new
CUDA_VISIBLE_DEVICES=0 timeout 300 $P tests/test_gpu_causal_conv1d_states.py -k "heads_of_long or long_sequences or \
rows_kernel or states_on_plain or seq_idx_on_plain or grads_every_feature or padding" > "$L/tests.txt" 2>&1 &
CUDA_VISIBLE_DEVICES=1 timeout 300 $P tests/test_gpu_causal_conv1d.py > "$L/tests_conv.txt" 2>&1 &
wait
echo "tests done at $((SECONDS - t0)) s"
for f in tests tests_conv; do grep -E "^FAILED|^ERROR|passed|failed" "$L/$f.txt" | tail -n 6; done
cp_two_gpus --profile "$L/profile"
cat "$L"/ab_*.txt | grep -E "^\| (old|new)" | sort -t'|' -k4,4 -k2,2 | cut -c1-200
