#!/bin/bash
# Session 28, call 1 (two H200s): the two-GPU graph-replay / no-host-sync test written in session 27 and never run,
# with the rest of the CP tests; then every 16-bit wgmma config forced on the few-row matmul shapes that trail cuBLAS.
#   bash bench/gpu.sh lab/gpu_session28.sh
source bench/lab/lab_steps.sh
export AITER_LITE_CACHE_DIR=/tmp/c_new
( cd "$PWD" && timeout 200 /usr/bin/time -f "%e s wall, %U+%S CPU s" python3 -m aiter_lite -q build module_matmul \
    --backend cuda > "$L/build_matmul.txt" 2>&1; echo "rc=$?" >> "$L/build_matmul.txt" ) &
build_tree "$PWD" /tmp/c_new "$L/build_new.txt"
wait
echo "conv build: $(tail -n 2 "$L/build_new.txt" | tr '\n' ' '); matmul build: $(tail -n 2 "$L/build_matmul.txt" | tr '\n' ' ') at $((SECONDS - t0)) s"
timeout 200 $P tests/test_gpu_distributed_cp.py -rA > "$L/tests_cp.txt" 2>&1
echo "cp tests rc=$? at $((SECONDS - t0)) s"; grep -E "^PASSED|^SKIPPED|^FAILED|^ERROR|passed|failed" "$L/tests_cp.txt" | tail -n 8
timeout 240 python3 bench/lab/matmul_small_m_configs.py > "$L/small_m.txt" 2>&1
echo "small-M configs rc=$? at $((SECONDS - t0)) s"; cat "$L/small_m.txt"
