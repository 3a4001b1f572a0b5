#!/usr/bin/env bash
# One device call for the conv results: cold build, GPU tests, memcheck + racecheck on small shapes,
# the full side-by-side bench (JSON for bench/results) and its plot.
#   usage (GPU machine, repo root, .peers carried): bash bench/gpu_conv_full.sh
set -uo pipefail
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export AITER_LITE_CACHE_DIR="${AITER_LITE_CACHE_DIR:-/tmp/aiter_lite_cache}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
/usr/bin/time -f "conv cold build %e s" python3 -m aiter_lite -q build module_causal_conv1d --backend cuda
timeout 150 python3 -m pytest -q -m gpu tests/test_gpu_causal_conv1d.py -k "not past_2_31" 2>&1 \
  | tee "$OUT/pytest_conv.txt" | tail -2
for tool in memcheck racecheck; do
  timeout 80 compute-sanitizer --tool $tool --error-exitcode 9 python3 op_tests/test_causal_conv1d.py --check_only \
    --batch 2 --dim 40 --seqlen 1,64,65,129,1024 --width 2,4,7 --layout contiguous --update --no_torch \
    > "$OUT/$tool.txt" 2>&1
  echo "$tool rc=$? $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.txt" | tail -1)"
done
timeout 330 python3 bench/bench_causal_conv1d.py --out "$OUT/causal_conv1d_nvidia_h100_80gb_hbm3.json" \
  > "$OUT/bench.txt" 2>&1
echo "bench rc=$?"; grep -A200 "### forward" "$OUT/bench.txt"
