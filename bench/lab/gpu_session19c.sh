#!/bin/bash
# Session 19, one device call: the backward's kernels timed one by one (conv_bwd_kernel_split.py), then ncu on
# the rows kernel for the aligned and the odd-L call. Run from the repository root; logs under $OUT.
source bench/lab/lab_steps.sh
export PYTHONPATH=$PWD AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
[ -d /tmp/c_new ] || build_tree "$PWD" /tmp/c_new "$L/build_new.txt"; tail -n 2 "$L/build_new.txt" 2>/dev/null
timeout 120 python3 bench/lab/conv_bwd_kernel_split.py > "$L/split.txt" 2>&1; echo "split rc=$?"
for c in aligned odd; do
  timeout 90 ncu -k regex:rows_kernel -c 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
    python3 bench/lab/conv_bwd_kernel_split.py --one $c > "$L/ncu_$c.txt" 2>&1; echo "ncu $c rc=$?"
  grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Issued Ipc|No Eligible|Block Limit|Waves Per|Grid Size|Stall|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth" "$L/ncu_$c.txt" | head -40
done
cat "$L/split.txt"
