#!/bin/bash
# Session 28, call 5: Nsight Compute on the few-row wgmma kernel (config 16) beside cuBLAS's kernel, 1 and 16 x 11008 x
# 4096 bf16, B row-major: what holds config 16 at 0.8x cuBLAS there (throughputs, occupancy, stall reasons).
#   bash bench/gpu.sh lab/gpu_session28d.sh
source bench/lab/lab_steps.sh
export AITER_LITE_CACHE_DIR=/tmp/c_new
timeout 200 python3 -m aiter_lite -q build module_matmul --backend cuda > "$L/build.txt" 2>&1
echo "build rc=$? at $((SECONDS - t0)) s"
for m in 16 1; do
  timeout 200 ncu --profile-from-start off --cache-control all --clock-control base \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
    --section LaunchStats --section SchedulerStats \
    python3 bench/lab/profile_matmul.py --shape ${m}x11008x4096 --dtype bf16 --config 16 > "$L/ncu_m$m.txt" 2>&1
  echo "ncu M=$m rc=$? at $((SECONDS - t0)) s"
  grep -E "^  [a-zA-Z_].*\(|Duration|DRAM Throughput|Memory Throughput|L2 Cache Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Size|Grid Size|Issued Warp|No Eligible|Active Warps Per|Eligible Warps|Warp Cycles Per Issued|Dynamic Shared|Waves Per SM|Mem Busy|Max Bandwidth|L1/TEX Hit|L2 Hit" "$L/ncu_m$m.txt"
  grep -E "^    [A-Z].*(stall|Stall)|OPT|Est\." "$L/ncu_m$m.txt" | head -n 12
done
