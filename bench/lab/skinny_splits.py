"""The skinny kernel's split-K count against its cost model: one row of GPU times per shape for the count set in
AITER_LITE_SKINNY_SPLITS (read once per process, so the shell runs this once per count; unset or 0 = the model's
choice, `skinny_splits` in csrc/kernels/matmul_skinny.cuh), with cuBLAS beside it. CUDA graphs, L2 flushed
(graph_time_us), bf16, variant "skinny".

    for s in 0 1 2 3 4 6 8; do AITER_LITE_SKINNY_SPLITS=$s python3 bench/lab/skinny_splits.py; done
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from common import graph_time_us, need_cuda  # noqa: E402

# (M, N, K, B layout): "n" b row-major [K, N], "t" w.t() of [N, K]
SHAPES = [(m, 4095, 1025, "n") for m in (1, 7, 16)] + [(16, 32001, 4096, "n"), (16, 4096, 4096, "n"),
                                                       (1, 4096, 4096, "t"), (16, 11008, 4096, "t"),
                                                       (7, 4096, 4095, "n"), (1, 8192, 8192, "n")]


def main() -> int:
    need_cuda("skinny_splits")
    import aiter_lite

    splits = os.environ.get("AITER_LITE_SKINNY_SPLITS", "0") or "0"
    for m, n, k, bl in SHAPES:
        a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
        b = (torch.randn(k, n, device="cuda") if bl == "n" else torch.randn(n, k, device="cuda").t()).to(torch.bfloat16)
        out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        ref = torch.matmul(a.double(), b.double())
        aiter_lite.matmul(a, b, out, variant="skinny")
        err = float((out.double() - ref).norm() / ref.norm())
        ours = graph_time_us(lambda: aiter_lite.matmul(a, b, out, variant="skinny"))
        cublas = graph_time_us(lambda: torch.matmul(a, b, out=out))
        print(f"| {m}x{n}x{k} {bl} | splits {splits} | {ours:.1f} | {cublas:.1f} | {cublas / ours:.2f} | {err:.1e} |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
