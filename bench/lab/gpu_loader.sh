#!/usr/bin/env bash
# Issue 22 on a GPU machine, in one run: cold builds with build-time shards and without (A/B, same host),
# each build's slowest translation units from its .ninja_log, the sharded kernels' GPU tests, and the
# first-call timings (bench/lab/first_call.py). docs/jit.md records the results.
#   cd <repo> && PYTHONPATH=$PWD bash bench/lab/gpu_loader.sh 2>&1 | tee log
set -uo pipefail
PY=${PYTHON:-python3}
export AITER_LITE_LOCK_DIR=$(mktemp -d) AITER_LITE_LOG=warning PYTHONUNBUFFERED=1
echo "host: $(nproc) cores, $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(date -u +%F)"
$PY -c "import aiter_lite.ops, aiter_lite.jit.builder, aiter_lite.jit.admin" || exit 1  # .pyc written once
$PY bench/lab/unsharded_registry.py /tmp/unsharded.json
rows=()

slowest() {  # cache dir, module: the build's units by wall time, from ninja's log (ms start/end)
  local log=$(ls "$1"/$2/cuda-*/.ninja_log 2>/dev/null | head -1)
  [ -n "$log" ] || return 0
  awk 'NR > 1 { n = split($4, p, "/"); printf "%6.1f s  %s (ends %.1f s)\n", ($2 - $1) / 1000, p[n], $2 / 1000 }' "$log" \
    | sort -rn | head -${3:-6} | sed 's/^/    /'
}

cold() {  # label, cache dir, command...: seconds of one build from an empty cache dir
  local label=$1 cache=$2; shift 2
  local s=$(date +%s%N)
  AITER_LITE_CACHE_DIR=$cache timeout 100 "$@" >/dev/null 2>/tmp/cold.err
  local rc=$? e=$(date +%s%N)
  local secs=$(awk "BEGIN { printf \"%.1f\", ($e - $s) / 1e9 }")
  [ $rc = 0 ] || { echo "FAILED ($rc): $label"; tail -5 /tmp/cold.err; }
  rows+=("| $label | $secs |")
  echo "$label: $secs s"
}

A=$(mktemp -d)
cold "module_causal_conv1d cuda, sharded" "$A" $PY -m aiter_lite build module_causal_conv1d --backend cuda
slowest "$A" module_causal_conv1d 8
cold "module_matmul cuda, sharded" "$A" $PY -m aiter_lite build module_matmul --backend cuda
slowest "$A" module_matmul 8

echo "--- first calls (modules cached)"
AITER_LITE_CACHE_DIR=$A timeout 60 $PY bench/lab/first_call.py

echo "--- GPU tests of the sharded kernels (cache of the builds above)"
for t in "tests/test_gpu_matmul.py -k every_config and 257x383x1000" \
         "tests/test_gpu_matmul_wgmma.py -k every_config and 257x383x1000" \
         "tests/test_gpu_causal_conv1d.py -k update or forward_sweep"; do
  set -- $t
  file=$1; shift 2
  AITER_LITE_CACHE_DIR=$A timeout 45 $PY -m pytest -q -x -p no:cacheprovider "$file" -k "$*" 2>&1 | tail -2
done

B=$(mktemp -d)
cold "module_matmul cuda, unsharded (same host)" "$B" env AITER_LITE_JIT_CONFIG=/tmp/unsharded.json \
  $PY -m aiter_lite build module_matmul_unsharded --backend cuda
slowest "$B" module_matmul_unsharded 4
C=$(mktemp -d)
cold "build --all (cpu + cuda), sharded" "$C" $PY -m aiter_lite build --all
cold "module_causal_conv1d cuda, unsharded (same host)" "$B" env AITER_LITE_JIT_CONFIG=/tmp/unsharded.json \
  $PY -m aiter_lite build module_causal_conv1d_unsharded --backend cuda
slowest "$B" module_causal_conv1d_unsharded 4

echo
echo "| build (cold) | s |"
echo "| --- | --- |"
printf '%s\n' "${rows[@]}"
