"""One launch each of the skinny kernel (variant "skinny") and of cuBLAS (torch.matmul) on a few skinny
shapes, for Nsight Compute (bench/lab/matmul_skinny.sh runs it under ncu): kernel time, DRAM throughput
and where the warps stall, without the host in the way.

    ncu --clock-control none -k regex:'skinny|gemv|gemm|nvjet|splitK|Kernel' python3 bench/lab/matmul_skinny_ncu.py
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import aiter_lite  # noqa: E402

CASES = [(1, 4096, 4096, "n", torch.bfloat16), (1, 50257, 4096, "n", torch.bfloat16),
         (16, 4096, 4096, "n", torch.float32), (1, 4095, 1025, "n", torch.bfloat16),
         (16, 4096, 4096, "t", torch.bfloat16)]

for m, n, k, layout, dt in CASES:
    a = torch.randn(m, k, device="cuda").to(dt)
    b = torch.randn(k, n, device="cuda").to(dt) if layout == "n" else torch.randn(n, k, device="cuda").to(dt).t()
    out = torch.empty(m, n, device="cuda", dtype=dt)
    for _ in range(2):  # the second launch of each is the one to read (the first may load modules)
        aiter_lite.matmul(a, b, out, variant="skinny", allow_tf32=False)
        torch.matmul(a, b, out=out)
    torch.cuda.synchronize()
    print(f"{m}x{n}x{k} B {layout} {dt}", flush=True)
