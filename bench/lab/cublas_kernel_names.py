#!/usr/bin/env python3
"""Which kernels torch.matmul (cuBLAS) runs for given shapes, and how long each takes (torch.profiler).

Tells whether cuBLAS uses a stream-K or split-K schedule, a cluster shape or a tile size at the shapes
the wgmma targets are measured on, which a tile-for-tile comparison needs.

  python bench/lab/cublas_kernel_names.py [--shapes 4096x4096x4096,8192x8192x8192] [--dtypes fp16,bf16]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from aiter_lite.testing import dtype_names  # noqa: E402

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default="4096x4096x4096,8192x8192x8192,2048x2048x2048,4096x11008x4096")
    p.add_argument("--dtypes", default="fp16,bf16")
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("cublas_kernel_names: needs a CUDA GPU", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = True
    for shape in args.shapes.split(","):
        m, n, k = (int(v) for v in shape.split("x"))
        for name in dtype_names(args.dtypes, allowed=DTYPES):
            a = torch.randn(m, k, device="cuda", dtype=DTYPES[name])
            b = torch.randn(k, n, device="cuda", dtype=DTYPES[name])
            for _ in range(3):
                torch.matmul(a, b)
            torch.cuda.synchronize()
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                for _ in range(5):
                    torch.matmul(a, b)
                torch.cuda.synchronize()
            for ev in prof.key_averages():
                if ev.device_type == torch.autograd.DeviceType.CUDA:
                    us = ev.device_time_total / max(ev.count, 1)
                    print(f"{shape} {name}: {ev.count}x {us:8.1f} us  {ev.key}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
