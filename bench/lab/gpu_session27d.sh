#!/bin/bash
# Session 27, call 4 (nvidia-h200-x2): the short-rows backward kernel (dx and dinit of rows shorter than the width,
# one thread a row) in the context-parallel heads. Tests of the heads and the states sweep on one GPU, the
# distributed tests on two, compute-sanitizer on the heads test; bench_cp_conv.py under torchrun with profiles.
#   bash bench/gpu.sh lab/gpu_session27d.sh
source bench/lab/lab_steps.sh
export NCCL_NVLS_ENABLE=0
P="python3 -m pytest -q -m gpu -p no:cacheprovider"
( timeout 200 python3 bench/peer_cache.py --peers .peers --cache /tmp/peers > "$L/peers.txt" 2>&1 ) &
build_tree "$PWD" /tmp/c_new "$L/build_new.txt"
echo "build: $(tail -n 2 "$L/build_new.txt" | tr '\n' ' ') at $((SECONDS - t0)) s"
wait
export PYTHONPATH=/tmp/peers/site:$PYTHONPATH AITER_LITE_CACHE_DIR=/tmp/c_new
CUDA_VISIBLE_DEVICES=0 timeout 300 $P tests/test_gpu_causal_conv1d_states.py > "$L/tests.txt" 2>&1 &
CUDA_VISIBLE_DEVICES=1 timeout 300 compute-sanitizer --tool memcheck --print-limit 20 $P -s \
  tests/test_gpu_causal_conv1d_states.py -k "heads_of_long and (4 or 8)" > "$L/memcheck.txt" 2>&1 &
wait
echo "tests done at $((SECONDS - t0)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$L/tests.txt" | tail -n 6
echo "memcheck: $(grep -hE "ERROR SUMMARY|passed|failed" "$L/memcheck.txt" | tail -n 3 | tr '\n' ' ')"
timeout 200 $P tests/test_gpu_distributed_cp.py > "$L/tests_cp.txt" 2>&1
echo "cp tests rc=$? at $((SECONDS - t0)) s"; grep -E "^FAILED|^ERROR|passed|failed" "$L/tests_cp.txt" | tail -n 4
timeout 240 torchrun --nproc-per-node=2 bench/bench_cp_conv.py --profile "$L/profile" > "$L/cp.txt" 2>&1
echo "cp rc=$? at $((SECONDS - t0)) s"
grep -E "^\|" "$L/cp.txt"
for f in "$L"/profile/*_cp_rank1.txt "$L"/profile/*_cp_rank0.txt; do echo "== $f"; grep -E "^(void|ncclDev|at::)" "$f" |
  python3 -c "import sys
for l in sys.stdin: c = l[70:].split(); print(l[:70].strip()[-50:], c[5], c[-1])"; done
