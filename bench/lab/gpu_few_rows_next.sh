#!/bin/bash
# Prepared in session 28, not run (its device time was spent): the three open questions of the few-row matmul work.
#   1. For few rows of A times a B whose rows are off 16 bytes, does copying B to aligned rows and running the a_rows
#      wgmma configs beat the skinny kernel (matmul_repack_few_rows.py)? A size rule for ops/matmul_repack.py follows.
#   2. The few-row rule (fewest waves, then most tiles) took config 31 on 8 x 6144 x 4096 where 32 ran 10% faster:
#      configs 31 and 32 on N between 4096 and 8192.
#   3. bf16 128 x 11008 x 4096 ran 0.60-0.66x cuBLAS in the eager odd set where fp16 ran 0.98-1.00x on the same config
#      15: both dtypes in CUDA graphs, configs 15, 18, 20 and auto.
#   bash bench/gpu.sh lab/gpu_few_rows_next.sh
source bench/lab/lab_steps.sh
export AITER_LITE_CACHE_DIR=/tmp/c_new
timeout 200 python3 -m aiter_lite -q build module_matmul --backend cuda > "$L/build.txt" 2>&1
echo "build rc=$? at $((SECONDS - t0)) s"
timeout 200 python3 bench/lab/matmul_repack_few_rows.py > "$L/repack.txt" 2>&1
echo "repack rc=$? at $((SECONDS - t0)) s"; cat "$L/repack.txt"
timeout 120 python3 bench/lab/matmul_small_m_configs.py --dtypes bf16 --layouts n,t --configs 31,32 \
  --shapes 1x5120x4096,8x5120x4096,8x6144x4096,16x6144x4096,8x7168x4096,32x6144x4096,8x6144x8192 > "$L/rule.txt" 2>&1
echo "rule rc=$? at $((SECONDS - t0)) s"; cat "$L/rule.txt"
timeout 120 python3 bench/lab/matmul_small_m_configs.py --dtypes bf16,fp16 --layouts n --configs 15,18,20 \
  --shapes 128x11008x4096,128x4096x4096,128x14336x4096 > "$L/m128.txt" 2>&1
echo "m128 rc=$? at $((SECONDS - t0)) s"; cat "$L/m128.txt"
