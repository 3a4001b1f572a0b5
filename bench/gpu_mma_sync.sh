#!/usr/bin/env bash
# One device call for the portable mma.sync path (issue 5): cold build of module_matmul, the matmul GPU
# tests (stopping at the first failure), the tf32 rounding microbenchmark, then every tensor_core
# config (5-9 in fp16 and bf16, 10-12 in tf32) against torch.matmul (cuBLAS; TF32 allowed for tf32)
# at 4096^3 and 8192^3. Ends with a short table: TFLOP/s and ratio to cuBLAS per config, the best
# config per dtype and shape against the 0.6x target, and the last recorded run's TFLOP/s where
# bench/results has one (tf32 configs 10-12 were BK = 16 before issue 5's BK = 32 change: their "last run" is
# the old tile). About 3-4 minutes on an H100 (budget: under 5).
#   usage (H100, repo root): bash bench/gpu_mma_sync.sh
# Everything also lands in $OUT (default /tmp/out): build.txt, pytest_matmul.txt, tf32_round_rate.txt,
# mma_sync_16.json / mma_sync_tf32.json (bench_matmul.py records) and their logs.
source "$(dirname "$0")/gpu_prelude.sh"
cold_build_matmul

echo "== matmul GPU tests (t=$((SECONDS - t0)) s)"
timeout 170 python3 -m pytest -q -m gpu tests/test_gpu_matmul.py -x -p no:cacheprovider 2>&1 \
  | tee "$OUT/pytest_matmul.txt" | tail -6

echo "== tf32 rounding forms: throughput (t=$((SECONDS - t0)) s)"
if nvcc -O3 -arch=sm_90a -o /tmp/tf32_round_rate bench/tf32_round_rate.cu > "$OUT/tf32_round_rate_build.txt" 2>&1; then
  timeout 30 /tmp/tf32_round_rate 2>&1 | tee "$OUT/tf32_round_rate.txt"
else
  tail -5 "$OUT/tf32_round_rate_build.txt"
fi

echo "== timing: tensor_core configs vs cuBLAS, 4096^3 and 8192^3 (t=$((SECONDS - t0)) s)"
SHAPES=4096x4096x4096,8192x8192x8192
timeout 150 python3 bench/bench_matmul.py --shapes $SHAPES --dtypes fp16,bf16 --variants tensor_core \
  --sweep-path tensor_core_16 --sweep-dtypes fp16,bf16 --sweep-rep-ms 40 --out "$OUT/mma_sync_16.json" \
  > "$OUT/bench_mma_sync_16.txt" 2>&1
echo "(fp16/bf16 bench rc=$?, t=$((SECONDS - t0)) s)"
timeout 120 python3 bench/bench_matmul.py --shapes $SHAPES --dtypes tf32 \
  --sweep-path tensor_core_tf32 --sweep-rep-ms 60 --out "$OUT/mma_sync_tf32.json" \
  > "$OUT/bench_mma_sync_tf32.txt" 2>&1
echo "(tf32 bench rc=$?, total $((SECONDS - t0)) s; timing lines: $OUT/bench_mma_sync_*.txt)"

python3 - "$OUT/mma_sync_16.json" "$OUT/mma_sync_tf32.json" bench/results/matmul_nvidia_h100_80gb_hbm3.json <<'EOF'
import json, sys
from pathlib import Path

def records(path):
    p = Path(path)
    return json.loads(p.read_text())["records"] if p.is_file() else []

runs = records(sys.argv[1]) + records(sys.argv[2])
prev = records(sys.argv[3])
shapes = [(4096, 4096, 4096), (8192, 8192, 8192)]
key = lambda r: (r["M"], r["N"], r["K"])
cublas = {(r["dtype"], key(r)): r["tflops"] for r in runs if r["impl"] == "cublas"}
# The last recorded TFLOP/s of each (dtype, config, shape) in bench/results (before this run), from
# per-config records and from default-config records that name the mma.sync kernel they ran.
last = {}
for r in prev:
    c = r["config"] if r["config"] >= 0 else r.get("config_resolved", -1)
    if r["impl"] == "aiter_lite" and 5 <= c <= 12 and str(r.get("kernel", "tensor_core")).startswith("tensor_core"):
        last[(r["dtype"], c, key(r))] = f"{r['tflops']:.0f}"
print("\n| dtype | config | " + " | ".join(f"{m}^3 TFLOP/s (ratio; last run)" for m, _, _ in shapes) + " |")
print("| --- | --- |" + " --- |" * len(shapes))
best = {}
for r in sorted((r for r in runs if r["impl"] == "aiter_lite" and r["config"] >= 5),
                key=lambda r: (["fp16", "bf16", "tf32"].index(r["dtype"]), r["config"], key(r))):
    s = key(r)
    if s not in shapes or (r["dtype"], s) not in cublas:
        continue
    ratio = r["tflops"] / cublas[(r["dtype"], s)]
    cell = best.setdefault((r["dtype"], r["config"]), {})
    cell[s] = f"{r['tflops']:.0f} ({ratio:.2f}; {last.get((r['dtype'], r['config'], s), '-')})"
    b = best.setdefault(("best", r["dtype"], s), (0.0, -1))
    if ratio > b[0]:
        best[("best", r["dtype"], s)] = (ratio, r["config"])
for (d, c), cells in [(k, v) for k, v in best.items() if k[0] != "best"]:
    print(f"| {d} | {c} | " + " | ".join(cells.get(s, "-") for s in shapes) + " |")
print("\n| dtype | shape | cuBLAS TFLOP/s | best config: ratio | >= 0.60 |")
print("| --- | --- | --- | --- | --- |")
for d in ("fp16", "bf16", "tf32"):
    for s in shapes:
        if ("best", d, s) in best:
            ratio, c = best[("best", d, s)]
            print(f"| {d} | {s[0]}^3 | {cublas[(d, s)]:.0f} | {c}: {ratio:.3f} | {'yes' if ratio >= 0.6 else 'no'} |")
EOF
