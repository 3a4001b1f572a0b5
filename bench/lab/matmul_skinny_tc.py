"""The skinny kernel (variant "skinny": its tensor-core form, csrc/kernels/matmul_skinny_tc.cuh, where it reads
B) against what auto picks, the wgmma kernel and cuBLAS: fp16/bf16, M in 1, 7, 16, issue 21's odd (N, K) set with b row-major and the
skinny rows with b row-major ("n") and w.t() ("t"). GPU time in CUDA graphs with L2 flushed (graph_time_us),
the fraction of a device copy's bandwidth that the bytes read (a + b + out) reach, and the error against a
float64 product. wgmma only where its layout rules let it run (else "-").
Run: bench/gpu.sh lab/matmul_skinny_tc.py"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from common import copy_tbps, graph_time_us, need_cuda  # noqa: E402

ODD_NK = [(4095, 1025), (50257, 4096), (32001, 4096), (4096, 4095), (11008, 4096)]
SKINNY = [(n, k, bl) for n, k in ((4096, 4096), (8192, 8192), (11008, 4096), (4096, 11008)) for bl in ("n", "t")
          if (n, k, bl) != (11008, 4096, "n")]  # that one is in the odd set


def main() -> int:
    need_cuda("matmul_skinny_tc")
    import aiter_lite
    from aiter_lite.ops.matmul import matmul_plan

    copy_gbs = copy_tbps(graph_time_us, 1 << 28) * 1e3
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, CUDA graphs, L2 flushed; "
          f"copy {copy_gbs:.0f} GB/s (read + write, 256 MiB)")
    print("| M x N x K | dtype | B | auto us | plan | skinny us | wgmma us | cuBLAS us | cuBLAS / auto | "
          "cuBLAS / skinny | auto x copy | cuBLAS x copy | err |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    cases = [(n, k, "n") for n, k in ODD_NK] + SKINNY
    ratios = {}
    for dtype, name in ((torch.float16, "fp16"), (torch.bfloat16, "bf16")):
        for n, k, bl in cases:
            for m in (1, 7, 16):
                a = torch.randn(m, k, device="cuda").to(dtype)
                b = (torch.randn(k, n, device="cuda") if bl == "n" else torch.randn(n, k, device="cuda").t()).to(dtype)
                out = torch.empty(m, n, device="cuda", dtype=dtype)
                ref = torch.matmul(a.double(), b.double())
                aiter_lite.matmul(a, b, out)
                err = ((out.double() - ref).norm() / ref.norm()).item()
                t_ours = graph_time_us(lambda: aiter_lite.matmul(a, b, out))
                t_skinny = graph_time_us(lambda: aiter_lite.matmul(a, b, out, variant="skinny"))
                try:
                    t_wgmma = f"{graph_time_us(lambda: aiter_lite.matmul(a, b, out, variant='wgmma')):.1f}"
                    if not matmul_plan(a, b, variant="wgmma").startswith("wgmma"):
                        t_wgmma = "-"
                except (ValueError, RuntimeError):
                    t_wgmma = "-"
                t_ref = graph_time_us(lambda: torch.matmul(a, b, out=out))
                nbytes = (a.numel() + b.numel() + out.numel()) * a.element_size()
                frac, ref_frac = (nbytes / (t * 1e-6) / 1e9 / copy_gbs for t in (t_ours, t_ref))
                ratios.setdefault((name, bl, (n, k) in ODD_NK and bl == "n"), []).append(t_ref / t_ours)
                print(f"| {m}x{n}x{k} | {name} | {bl} | {t_ours:.1f} | {matmul_plan(a, b)} | {t_skinny:.1f} | {t_wgmma} | "
                      f"{t_ref:.1f} | {t_ref / t_ours:.2f} | {t_ref / t_skinny:.2f} | {frac:.2f} | {ref_frac:.2f} | "
                      f"{err:.1e} |", flush=True)
    for (name, bl, odd), r in ratios.items():
        geo = float(torch.tensor(r).log().mean().exp())
        print(f"{name} B {bl}{' odd set' if odd else ''}: geomean {geo:.3f}x cuBLAS, min {min(r):.2f}, "
              f"{sum(x >= 0.95 for x in r)}/{len(r)} at >= 0.95x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
