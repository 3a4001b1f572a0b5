"""Why does the 4095 x 1025 family (N = 4095, K = 1025, rows off 16 bytes) take ~300 us at any M?

For M = 128 and 1000 (bf16): the whole call against cuBLAS, the plan, each repack copy alone
(ops/matmul_repack.py), the kernel on operands repacked beforehand, the host time of a call, and a
profiler listing of the kernels one call launches. Run: bench/gpu.sh lab/matmul_odd_4095.py
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from common import make_timer, need_cuda  # noqa: E402


def main() -> int:
    need_cuda("matmul_odd_4095")
    import aiter_lite
    from aiter_lite.ops.matmul import matmul_plan
    from aiter_lite.ops.matmul_repack import repack

    time_us, timer = make_timer(rep_ms=40)
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, {timer}, bf16")
    for m in (128, 1000):
        n, k = 4095, 1025
        a = torch.randn(m, k, device="cuda").bfloat16()
        b = torch.randn(k, n, device="cuda").bfloat16()
        out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        ra, rb = repack(a), repack(b)
        rows = {
            "call (ours)": time_us(lambda: aiter_lite.matmul(a, b, out)),
            "cuBLAS": time_us(lambda: torch.matmul(a, b, out=out)),
            "repack(a)": time_us(lambda: repack(a)),
            "repack(b)": time_us(lambda: repack(b)),
            "kernel on repacked": time_us(lambda: aiter_lite.matmul(ra, rb, out)),
            "b.contiguous-style copy (torch.empty_like + copy_)": time_us(lambda: torch.empty_like(b).copy_(b)),
        }
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(50):
            aiter_lite.matmul(a, b, out)
        host = (time.perf_counter() - t) / 50 * 1e6
        torch.cuda.synchronize()
        print(f"\n{m}x{n}x{k}: plan {matmul_plan(a, b, out)}, repacked plan {matmul_plan(ra, rb, out)}, "
              f"ra stride {ra.stride()}, rb stride {rb.stride()}")
        for name, us in rows.items():
            print(f"  {name}: {us:.1f} us")
        print(f"  host time per call (50 back to back, no sync): {host:.1f} us")
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            aiter_lite.matmul(a, b, out)
            torch.cuda.synchronize()
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=8))
    return 0


if __name__ == "__main__":
    sys.exit(main())
