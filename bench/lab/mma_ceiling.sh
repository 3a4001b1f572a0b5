# One device call on where the portable mma.sync kernel (issue 5) stands against the hardware:
#   1. bench/lab/mma_sync_ceiling.cu: the m16n8k16 rate from registers, + ldmatrix, + the tile fill by
#      cp.async, TMA or plain loads, and the fills alone (per SM and clock, at the clock the GPU ran);
#   2. every tensor_core fp16 config against cuBLAS at 4096^3, with the SM clock and power sampled
#      by nvidia-smi during the timing (does cuBLAS run at another clock than ours?);
#   3. Nsight Compute on config 5 at 4096^3 (pipe utilisation, issue, shared-memory wavefronts and
#      bank conflicts, warp stall reasons).
# About 3 minutes on an H100.   usage (sourced by bench/gpu.sh): bench/gpu.sh lab/mma_ceiling.sh

echo "== mma.sync ceilings (t=$((SECONDS - t0)) s)"
if nvcc -std=c++17 -O3 -arch=sm_90a -Icsrc/include -o /tmp/mma_sync_ceiling bench/lab/mma_sync_ceiling.cu \
    > "$OUT/ceiling_build.txt" 2>&1; then
  timeout 60 /tmp/mma_sync_ceiling 2>&1 | tee "$OUT/ceiling.txt"
else
  tail -5 "$OUT/ceiling_build.txt"
fi

echo "== cold build of module_matmul"
cold_build module_matmul

echo "== tensor_core fp16 configs vs cuBLAS at 4096^3, clocks sampled (t=$((SECONDS - t0)) s)"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 100 \
  > "$OUT/smi.csv" 2>/dev/null &
smi=$!
timeout 150 python3 bench/lab/matmul_configs.py --configs --shapes 4096x4096x4096 --dtypes fp16 --variants tensor_core \
  --sweep-path tensor_core_16 --sweep-dtypes fp16 --sweep-rep-ms 40 --out "$OUT/mma_sync_16.json" \
  > "$OUT/bench.txt" 2>&1
kill $smi 2>/dev/null
tail -14 "$OUT/bench.txt"
python3 - "$OUT/smi.csv" <<'EOF'
import sys
rows = [l.split(", ") for l in open(sys.argv[1]) if l.count(",") == 3]
mhz = [int(r[1].split()[0]) for r in rows]
watts = [float(r[2].split()[0]) for r in rows]
busy = [(m, w) for m, w in zip(mhz, watts) if w > 200]
print(f"nvidia-smi: {len(rows)} samples; under load (>200 W): "
      + (f"SM clock {min(m for m, _ in busy)}-{max(m for m, _ in busy)} MHz, power up to {max(w for _, w in busy):.0f} W"
         if busy else "none"))
EOF

echo "== ncu on config 5, 4096^3 fp16 (t=$((SECONDS - t0)) s)"
timeout 150 ncu --profile-from-start off -k regex:matmul_tc -c 1 --set full \
  python3 bench/lab/profile_matmul.py --shape 4096x4096x4096 --dtype fp16 --config 5 > "$OUT/ncu_cfg5.txt" 2>&1
grep -E "Duration|SM Frequency|Executed Ipc|Issue Slots Busy|Tensor|Shared Memory|Bank|Stall|Warp Cycles|Registers|No Eligible|One or More" \
  "$OUT/ncu_cfg5.txt" | head -40
echo "== done (t=$((SECONDS - t0)) s)"
