#!/usr/bin/env bash
# Cold build times and first-call latency on a GPU machine (docs/jit.md, issue 22).
#   cd <repo> && PYTHONPATH=$PWD bash bench/lab/gpu_jit_times.sh 2>&1 | tee log
# Each build starts from an empty cache dir. "threads 1" is the build as it was before device compiles
# were spread over threads (AITER_LITE_DEVICE_THREADS=1); "auto" is the default.
set -uo pipefail
PY=${PYTHON:-python3}
export AITER_LITE_LOCK_DIR=$(mktemp -d) AITER_LITE_LOG=warning
echo "host: $(nproc) cores, $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(date -u +%F)"
rows=()

cold() {  # label, then the command; prints and records seconds
  local label=$1; shift
  export AITER_LITE_CACHE_DIR=$(mktemp -d)
  local s=$(date +%s%N)
  timeout 200 "$@" >/dev/null 2>"$AITER_LITE_CACHE_DIR.err"
  local rc=$? e=$(date +%s%N)
  local secs=$(awk "BEGIN { printf \"%.1f\", ($e - $s) / 1e9 }")
  [ $rc = 0 ] || { echo "FAILED ($rc): $label"; tail -5 "$AITER_LITE_CACHE_DIR.err"; }
  rows+=("| $label | $secs |")
  echo "$label: $secs s"
}

unset AITER_LITE_DEVICE_THREADS
for m in module_causal_conv1d module_matmul; do
  cold "$m cuda, threads auto" $PY -m aiter_lite build $m --backend cuda
done
cold "build --all (cpu + cuda), threads auto" $PY -m aiter_lite build --all

echo "--- first calls, module cached (fresh process each)"
for dev in cuda cpu; do
  $PY - "$dev" <<'EOF'
import json, sys, time
dev = sys.argv[1]
t0 = time.perf_counter()
import torch
t1 = time.perf_counter()
x, w, b = (torch.randn(*s, device=dev) for s in ((2, 64, 33), (64, 4), (64,)))
state = torch.randn(2, 64, 3, device=dev)
a, bm = torch.randn(65, 33, device=dev), torch.randn(33, 17, device=dev)
if dev == "cuda":
    torch.cuda.synchronize()
t2 = time.perf_counter()
import aiter_lite
out = {}
for name, call in [("causal_conv1d", lambda: aiter_lite.causal_conv1d(x, w, b, activation="silu")),
                   ("causal_conv1d_update", lambda: aiter_lite.causal_conv1d_update(x[:, :, 0].contiguous(), state, w, b)),
                   ("matmul", lambda: aiter_lite.matmul(a, bm))]:
    s = time.perf_counter()
    call()
    if dev == "cuda":
        torch.cuda.synchronize()
    out[name] = f"{(time.perf_counter() - s) * 1e3:.1f} ms" + (" +dynamo" if "torch._dynamo" in sys.modules else "")
print(f"{dev}: import torch {(t1 - t0) * 1e3:.0f} ms, tensors {(t2 - t1) * 1e3:.0f} ms, first calls {out}, "
      f"all first calls {(time.perf_counter() - t2) * 1e3:.0f} ms")
EOF
done

echo "--- correctness after the threaded build"
$PY op_tests/test_causal_conv1d.py --batch 2 --dim 96 --seqlen 129,1000 --width 2,4 --dtype float16,bfloat16,float32 --check_only --update 2>&1 | tail -2
$PY op_tests/test_matmul.py -m 129 -n 257 -k 96 --dtype half,bfloat16,float --check_only 2>&1 | tail -2

echo "--- 2 cores (taskset, MAX_JOBS=2): the CPU backend, as CI builds it"
for m in module_causal_conv1d module_matmul; do
  cold "$m cpu, 2 cores" taskset -c 0,1 env MAX_JOBS=2 $PY -m aiter_lite build $m --backend cpu
done

export AITER_LITE_DEVICE_THREADS=1
for m in module_causal_conv1d module_matmul; do
  cold "$m cuda, threads 1 (before)" $PY -m aiter_lite build $m --backend cuda
done
cold "build --all (cpu + cuda), threads 1 (before)" $PY -m aiter_lite build --all

echo
echo "| build (cold) | s |"
echo "| --- | --- |"
printf '%s\n' "${rows[@]}"
