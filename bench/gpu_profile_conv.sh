#!/usr/bin/env bash
# Nsight Compute profile of the conv forward kernels (ours dense, ours channel-last, dao) on a few
# shapes; full reports under $OUT, key metrics printed.  usage: bash bench/gpu_profile_conv.sh
set -uo pipefail
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export AITER_LITE_CACHE_DIR="${AITER_LITE_CACHE_DIR:-/tmp/aiter_lite_cache}"
SECTIONS="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis"
for cfg in "8x5120x2048 4 fp16" "8x5120x2048 4 fp32" "2x256x1024 4 fp16" "16x2048x129 4 fp16"; do
  set -- $cfg
  f="$OUT/ncu_${3}_${1}_w${2}.txt"
  timeout 120 ncu --profile-from-start off -k regex:causal_conv1d $SECTIONS \
    python3 bench/profile_conv.py --shape $1 --width $2 --dtype $3 > "$f" 2>&1
  echo "== $cfg (rc=$?)"
  grep -E "causal_conv1d.*(Kernel|kernel)|^  [a-z_:]*causal|Duration|DRAM Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|No Eligible|Executed Ipc Active|Block Limit Registers|Grid Size|Warp Cycles Per Issued" "$f" | sed 's/  */ /g' | head -60
done
