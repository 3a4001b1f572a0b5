"""Few rows of A times a B whose rows are off 16 bytes (N = 4095, 32001, 50257, b row-major): the skinny kernel
(auto today: ops/matmul_repack.py never repacks for at most 16 rows) against copying B to rows padded to 16 bytes and
running the wgmma kernel (configs 31/32 for at most 32 rows), and cuBLAS. GPU time in CUDA graphs with L2 flushed
(graph_time_us), medians of 30; the copy is inside the timed graph. Each result checked against a float64 product.
Run: bench/gpu.sh lab/matmul_repack_few_rows.py"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from common import graph_time_us, need_cuda  # noqa: E402

SHAPES = [(m, n, k) for n, k in ((4095, 1025), (32001, 4096), (50257, 4096)) for m in (1, 7, 16, 32, 128)]


def main() -> int:
    need_cuda("matmul_repack_few_rows")
    import aiter_lite
    from aiter_lite.ops.matmul import matmul_plan

    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, CUDA graphs, L2 flushed, us")
    print("| M x N x K | dtype | auto (plan) | B copy alone | copy + matmul (plan) | cuBLAS | cuBLAS / auto | "
          "cuBLAS / copy+matmul |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for dtype, name in ((torch.bfloat16, "bf16"), (torch.float16, "fp16")):
        for m, n, k in SHAPES:
            a = torch.randn(m, k, device="cuda").to(dtype)
            b = torch.randn(k, n, device="cuda").to(dtype)
            out = torch.empty(m, n, device="cuda", dtype=dtype)
            bp = torch.empty(k, (n + 7) // 8 * 8, device="cuda", dtype=dtype)[:, :n]  # rows padded to 16 bytes
            ref = torch.matmul(a.double(), b.double())

            def repacked():
                bp.copy_(b)
                aiter_lite.matmul(a, bp, out)

            errs = []
            for fn in (lambda: aiter_lite.matmul(a, b, out), repacked):
                out.fill_(float("nan"))
                fn()
                errs.append(((out.double() - ref).norm() / ref.norm()).item())
            if not max(errs) < 1e-2:
                print(f"| {m}x{n}x{k} | {name} | errors {errs} |")
                continue
            t_auto = graph_time_us(lambda: aiter_lite.matmul(a, b, out))
            t_copy = graph_time_us(lambda: bp.copy_(b))
            t_rep = graph_time_us(repacked)
            t_ref = graph_time_us(lambda: torch.matmul(a, b, out=out))
            print(f"| {m}x{n}x{k} | {name} | {t_auto:.1f} ({matmul_plan(a, b)}) | {t_copy:.1f} | {t_rep:.1f} "
                  f"({matmul_plan(a, bp)}) | {t_ref:.1f} | {t_ref / t_auto:.2f} | {t_ref / t_rep:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
