#!/bin/bash
# Session 27, call 4 (nvidia-h200-x2): the short-rows backward kernel (dx and dinit of rows shorter than the width,
# one thread a row) in the context-parallel heads. Tests of the heads and the states sweep on one GPU, the
# distributed tests on two, compute-sanitizer on the heads test; bench_cp_conv.py under torchrun with profiles.
#   bash bench/gpu.sh lab/gpu_session27d.sh
source bench/lab/lab_steps.sh
peers_and_tree "$PWD" /tmp/c_new
export AITER_LITE_CACHE_DIR=/tmp/c_new
CUDA_VISIBLE_DEVICES=0 timeout 300 $P tests/test_gpu_causal_conv1d_states.py > "$L/tests.txt" 2>&1 &
CUDA_VISIBLE_DEVICES=1 timeout 300 compute-sanitizer --tool memcheck --print-limit 20 $P -s \
  tests/test_gpu_causal_conv1d_states.py -k "heads_of_long and (4 or 8)" > "$L/memcheck.txt" 2>&1 &
wait
echo "tests done at $((SECONDS - t0)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$L/tests.txt" | tail -n 6
echo "memcheck: $(grep -hE "ERROR SUMMARY|passed|failed" "$L/memcheck.txt" | tail -n 3 | tr '\n' ' ')"
cp_two_gpus --profile "$L/profile"
