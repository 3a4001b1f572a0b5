#!/bin/bash
# Session 27, call 2 (nvidia-h200-x2): this tree (heads of rows shorter than the width: the features kernel alone
# forward, naive kernels backward, naive plain forward on short strided rows; the rows forward's seq_idx cut only on
# warp vectors that meet a start) against main (.peers/old_tree.tar), built side by side. conv_seq_idx_split.py on
# both GPUs at once (old on one, new on the other, then swapped); the GPU tests of the changed paths; the CP
# distributed tests on two GPUs; bench_cp_conv.py under torchrun with profiles.
#   bash bench/gpu.sh lab/gpu_session27b.sh
source bench/lab/lab_steps.sh
export NCCL_NVLS_ENABLE=0
P="python3 -m pytest -q -m gpu -p no:cacheprovider"
NEW=$PWD OLD=/tmp/t_old
( timeout 200 python3 bench/peer_cache.py --peers .peers --cache /tmp/peers > "$L/peers.txt" 2>&1 ) &
build_trees "$NEW" "$OLD"
wait
export PYTHONPATH=/tmp/peers/site:$PYTHONPATH
split() {  # split TREE GPU ROUND
  local root=$NEW; [ "$1" = old ] && root=$OLD
  (cd "$root" && CUDA_VISIBLE_DEVICES=$2 PYTHONPATH=$root AITER_LITE_CACHE_DIR=/tmp/c_$1 timeout 150 python3 \
    "$NEW/bench/lab/conv_seq_idx_split.py" "$1-gpu$2-r$3") > "$L/split_$1_$3.txt" 2>&1
}
split old 0 1 & split new 1 1 & wait
split new 0 2 & split old 1 2 & wait
echo "split A/B done at $((SECONDS - t0)) s"
export AITER_LITE_CACHE_DIR=/tmp/c_new
CUDA_VISIBLE_DEVICES=0 timeout 300 $P tests/test_gpu_causal_conv1d_states.py -k "heads_of_long or long_sequences or \
rows_kernel or states_on_plain or seq_idx_on_plain or grads_every_feature or padding" > "$L/tests.txt" 2>&1 &
CUDA_VISIBLE_DEVICES=1 timeout 300 $P tests/test_gpu_causal_conv1d.py > "$L/tests_conv.txt" 2>&1 &
wait
echo "tests done at $((SECONDS - t0)) s"
for f in tests tests_conv; do grep -E "^FAILED|^ERROR|passed|failed" "$L/$f.txt" | tail -n 6; done
timeout 200 $P tests/test_gpu_distributed_cp.py > "$L/tests_cp.txt" 2>&1
echo "cp tests rc=$? at $((SECONDS - t0)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$L/tests_cp.txt" | tail -n 4
timeout 240 torchrun --nproc-per-node=2 bench/bench_cp_conv.py --profile "$L/profile" > "$L/cp.txt" 2>&1
echo "cp rc=$? at $((SECONDS - t0)) s"
grep -E "^\|" "$L/cp.txt"
for f in "$L"/profile/*_cp_rank1.txt "$L"/profile/*_cp_rank0.txt; do echo "== $f"; grep -E "^(void|ncclDev|at::)" "$f" |
  python3 -c "import sys
for l in sys.stdin: c = l[70:].split(); print(l[:70].strip()[-50:], c[5], c[-1])"; done
cat "$L"/split_*.txt | grep -E "^\| (old|new)" | sort -t'|' -k4,4 -k2,2 | cut -c1-200
