#!/bin/bash
# Session 21, call 4: where the forward's seq_idx time goes on the rows kernel (conv_fwd_kernel_split.py), and Nsight
# Compute on the rows kernel plain against with seq_idx (bf16 8 x 5120 x 2048, W = 4). Summary last; logs under $OUT.
source bench/lab/lab_steps.sh
export PYTHONPATH=$PWD AITER_LITE_CACHE_DIR=/tmp/c_new AITER_LITE_LOCK_DIR=/tmp/c_new.locks
build_tree "$PWD" /tmp/c_new "$L/build_new.txt"; tail -n 2 "$L/build_new.txt"
timeout 120 python3 bench/lab/conv_fwd_kernel_split.py > "$L/split.txt" 2>&1
for c in plain_8x5120x2048 seq4_8x5120x2048; do
  timeout 120 ncu --kernel-name regex:fwd_rows --launch-skip 0 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section SchedulerStats --metrics smsp__inst_executed.sum,dram__bytes.sum \
    python3 bench/lab/conv_fwd_kernel_split.py --one $c > "$L/ncu_$c.txt" 2>&1
  echo "== $c"; grep -E "Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|Issued Warp|No Eligible|Memory Throughput|DRAM Throughput|inst_executed|dram__bytes|Block Limit Reg|Warp Cycles Per Issued" "$L/ncu_$c.txt" | head -20
done
cat "$L/split.txt"
