#!/usr/bin/env bash
# Issue 21 on a lent H100, one call (run from .wt/<name> or the repo root): build, correctness of every
# path with every epilogue and autograd, compute-sanitizer on the epilogue paths, then the timings.
set -uo pipefail
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD" AITER_LITE_CACHE_DIR=/tmp/al_cache AITER_LITE_LOCK_DIR=/tmp/al_locks
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
time python3 -m aiter_lite -q build module_matmul --backend cuda 2>&1 | tail -2
echo "built at ${SECONDS}s"
timeout 75 python3 -m pytest -q -x tests/test_gpu_matmul_epilogue.py 2>&1 | tail -4 | tee "$OUT/tests.txt"
timeout 30 python3 -m pytest -q tests/test_gpu_matmul.py -k "test_batched or test_layouts" -x 2>&1 | tail -2 | tee -a "$OUT/tests.txt"
timeout 110 python3 bench/bench_matmul.py --host --epilogue --backward --odd ${QUICK:+--quick} 2>&1 | tee "$OUT/bench.txt" | grep -v "^  "
cat > /tmp/san.py <<'PY'
import torch, aiter_lite
for dt, tf32 in ((torch.bfloat16, False), (torch.float16, False), (torch.float32, True), (torch.float32, False)):
    for v in ("auto", "tensor_core", "tiled", "naive"):
        if dt is torch.float32 and v == "tensor_core" and not tf32:
            continue
        a, b = torch.randn(2, 137, 264, device="cuda").to(dt), torch.randn(264, 200, device="cuda").to(dt)
        r = torch.randn(2, 137, 200, device="cuda").to(dt)
        aiter_lite.matmul(a, b, bias=torch.randn(200, device="cuda"), activation="gelu", residual=r, allow_tf32=tf32,
                          variant=v)
torch.cuda.synchronize()
print("sanitized run done")
PY
timeout 45 compute-sanitizer --tool memcheck --error-exitcode 1 python3 /tmp/san.py 2>&1 | tail -3 | tee "$OUT/sanitizer.txt"
