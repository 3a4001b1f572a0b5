#!/usr/bin/env bash
# One device call for everything GPU: environment, cold build time of each module (in parallel,
# as `python -m aiter_lite build --all` does), warm load time, GPU tests (conv; matmul with -k),
# compute-sanitizer on small shapes (check only), host overhead and the conv benchmark.
#   usage (GPU machine, repo root, .peers carried): bash bench/gpu_session.sh [bench args]
set -uo pipefail
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export AITER_LITE_CACHE_DIR="${AITER_LITE_CACHE_DIR:-/tmp/aiter_lite_cache}" AITER_LITE_LOCK_DIR=/tmp/aiter_lite_locks
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/env.txt"
python3 -c "import torch, sys; print(sys.version.split()[0], torch.__version__)" | tee -a "$OUT/env.txt"
echo "== cold build of each module (16 cores)"
for m in module_causal_conv1d module_matmul; do
  ( /usr/bin/time -f "$m cold build %e s" python3 -m aiter_lite -q build $m --backend cuda ) 2>&1 | tail -1 &
done; wait
echo "== warm load in a new process"
for m in module_causal_conv1d module_matmul; do
  python3 -c "
import time, torch
torch.cuda.init()
t = time.perf_counter()
from aiter_lite.jit import get_module
get_module('$m', 'cuda')
print('$m warm load: %.1f ms (torch already imported)' % ((time.perf_counter() - t) * 1e3))"
done | tee -a "$OUT/build.txt"
echo "== gpu tests"
timeout 150 python3 -m pytest -q -m "gpu and not slow" tests/test_gpu_causal_conv1d.py 2>&1 | tee "$OUT/pytest_conv.txt" | tail -3
timeout 150 python3 -m pytest -q -m "gpu and not slow" tests/test_gpu_matmul.py -x 2>&1 | tee "$OUT/pytest_matmul.txt" | tail -3
echo "== sanitizer (check only, small shapes)"
for tool in memcheck racecheck; do
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 python3 op_tests/test_causal_conv1d.py --check_only \
    --batch 2 --dim 40 --seqlen 1,65,129 --width 2,4,7 --update --no_torch > "$OUT/sanitizer_conv_$tool.txt" 2>&1
  echo "conv $tool rc=$? $(grep -h 'ERROR SUMMARY' "$OUT/sanitizer_conv_$tool.txt" | tail -1)"
done
echo "== conv bench"
timeout 240 python3 bench/bench_causal_conv1d.py "$@" --out "$OUT/causal_conv1d_bench.json" 2>&1 | tee "$OUT/bench_conv.txt" | tail -45
