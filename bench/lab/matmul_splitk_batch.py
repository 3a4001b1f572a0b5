"""Split-K through the batch, prototyped with the op as it is: for few rows of A and a wide B whose 64-column tiles
leave the last wave part-empty (1..64 x 11008 x 4096: 172 tiles on 132 SMs), run the K slices as a batch of s
products into an fp32 workspace (A and B as strided views, no copy; out_dtype=float32), then add the s partials in
order and round once. Does a balanced count of smaller units beat one wave and a third of whole tiles? Times the
batched product alone, the sum alone and both, in CUDA graphs with L2 flushed (medians of 30), beside auto and
cuBLAS; each result checked against a float64 product.
Run: bench/gpu.sh lab/matmul_splitk_batch.py [--shapes MxNxK,...] [--splits 1,2,4,8] [--configs 16,19]"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from common import graph_time_us, need_cuda  # noqa: E402

SHAPES = ("1x11008x4096,7x11008x4096,16x11008x4096,32x11008x4096,64x11008x4096,16x14336x4096,32x32000x4096,"
          "16x4096x4096,64x4096x4096,16x8192x8192")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--splits", default="2,4,8")
    ap.add_argument("--configs", default="16,19")
    ap.add_argument("--layouts", default="n,t")
    ap.add_argument("--dtype", default="bf16")
    args = ap.parse_args(argv)
    need_cuda("matmul_splitk_batch")
    import aiter_lite
    from aiter_lite.ops.matmul import matmul_plan

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype]
    splits = [int(s) for s in args.splits.split(",")]
    configs = [int(c) for c in args.configs.split(",")]
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, {args.dtype}, CUDA graphs, L2 flushed, us;"
          " cell: batched product + sum = total")
    print("| M x N x K | B | auto (plan) | cuBLAS | " +
          " | ".join(f"c{c} s{s}" for c in configs for s in splits) + " | best total / cuBLAS |")
    print("| --- " * (5 + len(configs) * len(splits)) + "|")
    for shape in args.shapes.split(","):
        m, n, k = (int(v) for v in shape.split("x"))
        for layout in args.layouts.split(","):
            a = torch.randn(m, k, device="cuda").to(dtype)
            b = (torch.randn(k, n, device="cuda") if layout == "n" else torch.randn(n, k, device="cuda").t()).to(dtype)
            out = torch.empty(m, n, device="cuda", dtype=dtype)
            ref = torch.matmul(a.double(), b.double())
            t_auto = graph_time_us(lambda: aiter_lite.matmul(a, b, out))
            plan = matmul_plan(a, b)
            t_ref = graph_time_us(lambda: torch.matmul(a, b, out=out))
            cells, best = [], float("inf")
            for c in configs:
                for s in splits:
                    ks = k // s
                    if k % s or ks % 64:
                        cells.append("-")
                        continue
                    av = a.as_strided((s, m, ks), (ks, k, 1))
                    bv = (b.as_strided((s, ks, n), (ks * n, n, 1)) if layout == "n"
                          else b.as_strided((s, ks, n), (ks, 1, k)))
                    ws = torch.empty(s, m, n, device="cuda", dtype=torch.float32)

                    def prod():
                        aiter_lite.matmul(av, bv, ws, out_dtype=torch.float32, variant="wgmma", config=c)

                    def red():
                        torch.sum(ws, 0, out=out)  # fp32 sum of the partials, one rounding into out

                    try:
                        if not matmul_plan(av, bv, ws, out_dtype=torch.float32, variant="wgmma",
                                           config=c).startswith("wgmma"):
                            cells.append("-")
                            continue
                        out.fill_(float("nan"))
                        prod()
                        red()
                        err = ((out.double() - ref).norm() / ref.norm()).item()
                        if not err < 1e-2:
                            cells.append(f"err {err:.1e}")
                            continue
                        tp, tr = graph_time_us(prod), graph_time_us(red)
                        tt = graph_time_us(lambda: (prod(), red()))
                        best = min(best, tt)
                        cells.append(f"{tp:.1f}+{tr:.1f}={tt:.1f}")
                    except (ValueError, RuntimeError) as e:
                        cells.append(f"! {str(e)[:30]}")
            print(f"| {shape} | {layout} | {t_auto:.1f} ({plan}) | {t_ref:.1f} | " + " | ".join(cells) +
                  f" | {t_ref / best if best < float('inf') else 0:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
