"""Which kernel should serve M <= 16 rows on issue 21's odd-shape set: the planner's choice (auto), the
skinny kernel forced (variant="skinny"), or cuBLAS? fp16 and bf16, M in 1, 7, 16, the set's (N, K) plus the
aligned 4096 x 4096; do_bench medians (L2 flushed), each result checked against cuBLAS's first.
Run: bench/gpu.sh lab/matmul_skinny_route.py (or python3 bench/lab/matmul_skinny_route.py on a GPU machine)."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from common import make_timer, need_cuda  # noqa: E402

NK = [(4095, 1025), (50257, 4096), (32001, 4096), (4096, 4095), (11008, 4096), (4096, 4096)]


def main() -> int:
    need_cuda("matmul_skinny_route")
    import aiter_lite
    from aiter_lite.ops.matmul import matmul_plan

    time_us, timer = make_timer(rep_ms=40)
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, {timer}")
    print("| M x N x K | dtype | auto us (plan) | skinny us | cuBLAS us | auto / cuBLAS | skinny / cuBLAS | skinny err |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for dtype in (torch.float16, torch.bfloat16):
        for n, k in NK:
            for m in (1, 7, 16):
                a = torch.randn(m, k, device="cuda").to(dtype)
                b = torch.randn(k, n, device="cuda").to(dtype)
                ref = torch.matmul(a.double(), b.double())
                out = aiter_lite.matmul(a, b, variant="skinny")
                err = ((out.double() - ref).norm() / ref.norm()).item()
                t_auto = time_us(lambda: aiter_lite.matmul(a, b))
                t_skinny = time_us(lambda: aiter_lite.matmul(a, b, variant="skinny"))
                t_ref = time_us(lambda: torch.matmul(a, b))
                name = "fp16" if dtype == torch.float16 else "bf16"
                print(f"| {m}x{n}x{k} | {name} | {t_auto:.1f} ({matmul_plan(a, b)}) | {t_skinny:.1f} | {t_ref:.1f} | "
                      f"{t_ref / t_auto:.2f} | {t_ref / t_skinny:.2f} | {err:.1e} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
