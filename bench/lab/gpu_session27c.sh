#!/bin/bash
# Session 27, call 3 (nvidia-h200-x2): the rows backward's seq_idx cut chosen per warp vector (not per tile) in this
# tree, against main (.peers/old_tree.tar), built side by side: conv_bwd_seq_idx_ab.py on both GPUs at once, then
# swapped; the seq_idx backward tests and memcheck on some; bench_cp_conv.py (now with the plain op given each
# rank's sequence ids) under torchrun.
#   bash bench/gpu.sh lab/gpu_session27c.sh
source bench/lab/lab_steps.sh
export NCCL_NVLS_ENABLE=0
P="python3 -m pytest -q -m gpu -p no:cacheprovider"
NEW=$PWD OLD=/tmp/t_old
( timeout 200 python3 bench/peer_cache.py --peers .peers --cache /tmp/peers > "$L/peers.txt" 2>&1 ) &
build_trees "$NEW" "$OLD"
wait
export PYTHONPATH=/tmp/peers/site:$PYTHONPATH
ab() {  # ab TREE GPU ROUND
  local root=$NEW; [ "$1" = old ] && root=$OLD
  (cd "$root" && CUDA_VISIBLE_DEVICES=$2 PYTHONPATH=$root AITER_LITE_CACHE_DIR=/tmp/c_$1 timeout 150 python3 \
    "$NEW/bench/lab/conv_bwd_seq_idx_ab.py" "$1-gpu$2-r$3") > "$L/ab_$1_$3.txt" 2>&1
}
ab old 0 1 & ab new 1 1 & wait
ab new 0 2 & ab old 1 2 & wait
echo "A/B done at $((SECONDS - t0)) s"
export AITER_LITE_CACHE_DIR=/tmp/c_new
CUDA_VISIBLE_DEVICES=0 timeout 300 $P tests/test_gpu_causal_conv1d_bwd_paths.py -k "seq_idx or seq" > "$L/tests.txt" 2>&1 &
CUDA_VISIBLE_DEVICES=1 timeout 300 $P tests/test_gpu_causal_conv1d_states.py -k "long_sequences or rows_kernel or \
grads_every_feature or padding or deterministic" > "$L/tests2.txt" 2>&1 &
wait
echo "tests done at $((SECONDS - t0)) s"
for f in tests tests2; do grep -E "^FAILED|^ERROR|passed|failed" "$L/$f.txt" | tail -n 6; done
timeout 240 torchrun --nproc-per-node=2 bench/bench_cp_conv.py > "$L/cp.txt" 2>&1
echo "cp rc=$? at $((SECONDS - t0)) s"
timeout 150 compute-sanitizer --tool memcheck --print-limit 20 $P -s tests/test_gpu_causal_conv1d_states.py \
  -k "long_sequences and (bfloat16 or float32) and (4 or 8)" > "$L/memcheck.txt" 2>&1
echo "memcheck: $(grep -hE "ERROR SUMMARY|passed|failed" "$L/memcheck.txt" | tail -n 3 | tr '\n' ' ')"
grep -E "^\|" "$L/cp.txt"
cat "$L"/ab_*.txt | grep -E "^\| (old|new)" | sort -t'|' -k4,4 -k2,2 | cut -c1-220
