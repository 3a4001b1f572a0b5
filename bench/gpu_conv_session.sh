#!/usr/bin/env bash
# One device call for causal_conv1d: environment, cold build time, warm load time, GPU tests,
# compute-sanitizer on small shapes, and the side-by-side benchmark. Full logs under $OUT.
#   usage (on the GPU machine, repo root, .peers carried): bash bench/gpu_conv_session.sh [--quick]
set -uo pipefail
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export AITER_LITE_CACHE_DIR="${AITER_LITE_CACHE_DIR:-/tmp/aiter_lite_cache}" AITER_LITE_LOCK_DIR=/tmp/aiter_lite_locks
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv | tee "$OUT/env.txt"
python3 -c "import torch, sys; print(sys.version.split()[0], torch.__version__, torch.cuda.get_device_name())" | tee -a "$OUT/env.txt"
nproc | tee -a "$OUT/env.txt"
echo "== cold build"
( time python3 -m aiter_lite build module_causal_conv1d --backend cuda ) 2>&1 | tee "$OUT/build.txt" | tail -4
echo "== warm load (new process)"
python3 - <<'PY' | tee -a "$OUT/build.txt"
import time
t = time.perf_counter()
from aiter_lite.jit import get_module
m = get_module("module_causal_conv1d", "cuda")
print(f"warm load of module_causal_conv1d: {(time.perf_counter() - t) * 1e3:.1f} ms")
PY
echo "== gpu tests"
timeout 300 python3 -m pytest -q -m "gpu and not slow" -x tests/test_gpu_causal_conv1d.py 2>&1 | tee "$OUT/pytest_conv.txt" | tail -8
echo "== sanitizer"
for tool in memcheck racecheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 python3 op_tests/test_causal_conv1d.py \
    --batch 2 --dim 40 --seqlen 1,65,129 --width 2,4,7 --layout contiguous --update --no_torch > "$OUT/sanitizer_$tool.txt" 2>&1
  echo "$tool rc=$? $(grep -c 'ERROR SUMMARY: 0 errors' "$OUT/sanitizer_$tool.txt") clean summaries"
done
echo "== bench"
timeout 330 python3 bench/bench_causal_conv1d.py "$@" --out "$OUT/causal_conv1d_bench.json" 2>&1 | tee "$OUT/bench_conv.txt" | tail -60
