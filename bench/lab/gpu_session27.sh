#!/bin/bash
# Session 27, call 1 (nvidia-h200-x2): context parallelism on two GPUs over NCCL, on main. The conv module
# built cold while the peers unpack; tests/test_gpu_distributed_cp.py (world size 1, and two GPUs against the
# float64 reference: -m multigpu is part of -m gpu); then bench_cp_conv.py under torchrun, eager and CUDA
# graphs, with per-rank profiler tables of one eager fwd+bwd of plain, CP and fla (logs/profile/).
#   bash bench/gpu.sh lab/gpu_session27.sh
source bench/lab/lab_steps.sh
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off on the lent machines
P="python3 -m pytest -q -m gpu -p no:cacheprovider"
( timeout 200 python3 bench/peer_cache.py --peers .peers --cache /tmp/peers > "$L/peers.txt" 2>&1 ) &
timeout 200 /usr/bin/time -f "%e s wall, %U+%S CPU s" python3 -m aiter_lite -q build module_causal_conv1d \
  --backend cuda > "$L/build.txt" 2>&1
echo "build rc=$? $(tail -n 1 "$L/build.txt") at $((SECONDS - t0)) s"
wait
export PYTHONPATH=/tmp/peers/site:$PYTHONPATH
timeout 240 $P tests/test_gpu_distributed_cp.py -rs > "$L/tests.txt" 2>&1
echo "tests rc=$? at $((SECONDS - t0)) s"; grep -E "^FAILED|^ERROR|SKIP|passed|failed" "$L/tests.txt" | tail -n 8
timeout 300 torchrun --nproc-per-node=2 bench/bench_cp_conv.py --profile "$L/profile" > "$L/cp.txt" 2>&1
echo "cp rc=$? at $((SECONDS - t0)) s"
grep -vE "^\s*$" "$L/cp.txt" | grep -E "^\||rank|failed|Error" | head -n 120
for f in "$L"/profile/*_cp_rank1.txt; do echo "== $f"; awk '{print substr($1,1,60), $(NF-4), $(NF-3), $NF}' "$f" | head -n 22; done
