#!/usr/bin/env bash
# One device call after a conv kernel change: cold build, GPU tests (incl. the rows kernel's 2^31
# case), memcheck on small shapes, the quick side-by-side bench, and an ncu look at one large shape.
#   usage (GPU machine, repo root, .peers carried): bash bench/gpu_conv_check.sh
set -uo pipefail
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export AITER_LITE_CACHE_DIR="${AITER_LITE_CACHE_DIR:-/tmp/aiter_lite_cache}"
/usr/bin/time -f "conv cold build %e s" python3 -m aiter_lite -q build module_causal_conv1d --backend cuda
timeout 200 python3 -m pytest -q -m gpu tests/test_gpu_causal_conv1d.py -k "not past_2_31 or 32776" 2>&1 \
  | tee "$OUT/pytest_conv.txt" | tail -4
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 python3 op_tests/test_causal_conv1d.py --check_only \
  --batch 2 --dim 40 --seqlen 1,64,65,129,1024 --width 2,4,7 --update --no_torch > "$OUT/memcheck.txt" 2>&1
echo "memcheck rc=$? $(grep -h 'ERROR SUMMARY' "$OUT/memcheck.txt" | tail -1)"
timeout 60 ncu --profile-from-start off -k regex:causal_conv1d --section SpeedOfLight --section Occupancy \
  --section LaunchStats --section ComputeWorkloadAnalysis python3 bench/profile_conv.py --shape 8x5120x2048 \
  > "$OUT/ncu.txt" 2>&1
grep -E "^  [a-z].*causal_conv1d|Duration|DRAM Throughput|Issue Slots Busy|Registers Per|Achieved Occ" "$OUT/ncu.txt" \
  | sed 's/  */ /g; s/(aiter_lite[^)]*)//'
timeout 220 python3 bench/bench_causal_conv1d.py --quick --out "$OUT/quick.json" > "$OUT/bench.txt" 2>&1
tail -42 "$OUT/bench.txt"
