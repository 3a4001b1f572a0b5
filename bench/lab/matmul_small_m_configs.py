"""Every 16-bit wgmma config forced on the few-row shapes where auto trails cuBLAS (issue 21: 1..64 x 11008 x 4096
and 16 x 32001 x 4096 with b row-major), beside auto, the skinny kernel and cuBLAS. GPU time in CUDA graphs, L2
flushed (graph_time_us), medians of 30, b row-major and/or w.t(); each output checked against a float64 product first. A config the planner
cannot run on the layout prints "-". The question: does one of the existing configs already beat the planner's
choice here (a cost-model fix), or does the kernel need a new tile (a kernel fix)?
Run: bench/gpu.sh lab/matmul_small_m_configs.py [--configs 13,14,...] [--shapes MxNxK,...]"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from common import graph_time_us, need_cuda  # noqa: E402

SHAPES = "1x11008x4096,7x11008x4096,16x11008x4096,32x11008x4096,64x11008x4096,16x32001x4096,16x4096x4096,16x50257x4096"
CONFIGS = "13,14,15,16,17,18,19,20,21,22"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--configs", default=CONFIGS)
    ap.add_argument("--dtypes", default="bf16,fp16")
    ap.add_argument("--layouts", default="n", help="b row-major (n) and/or w.t() (t)")
    args = ap.parse_args(argv)
    need_cuda("matmul_small_m_configs")
    import aiter_lite
    from aiter_lite.ops.matmul import matmul_plan

    configs = [int(c) for c in args.configs.split(",") if c]
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, CUDA graphs, L2 flushed, us")
    print("| M x N x K | dtype | B | auto (plan) | skinny | " + " | ".join(f"c{c}" for c in configs) +
          " | cuBLAS | best / cuBLAS |")
    print("| --- " * (7 + len(configs)) + "|")
    for dname in args.dtypes.split(","):
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dname]
        for shape, layout in ((s, bl) for s in args.shapes.split(",") for bl in args.layouts.split(",")):
            m, n, k = (int(v) for v in shape.split("x"))
            a = torch.randn(m, k, device="cuda").to(dtype)
            b = (torch.randn(k, n, device="cuda") if layout == "n" else torch.randn(n, k, device="cuda").t()).to(dtype)
            out = torch.empty(m, n, device="cuda", dtype=dtype)
            ref = torch.matmul(a.double(), b.double())

            def timed(**kw):
                try:
                    out.fill_(float("nan"))
                    aiter_lite.matmul(a, b, out, **kw)
                    err = ((out.double() - ref).norm() / ref.norm()).item()
                    if not err < 1e-2:
                        return f"err {err:.1e}"
                    return graph_time_us(lambda: aiter_lite.matmul(a, b, out, **kw))
                except (ValueError, RuntimeError) as e:
                    return "-" if "config" in str(e) or "variant" in str(e) else f"! {str(e)[:40]}"

            t_auto = timed()
            t_sk = timed(variant="skinny") if m <= 16 else "-"
            cells = []
            for c in configs:
                plan = matmul_plan(a, b, variant="wgmma", config=c)
                cells.append(timed(variant="wgmma", config=c) if plan == f"wgmma {c}" else "-")
            t_ref = graph_time_us(lambda: torch.matmul(a, b, out=out))
            nums = [t for t in [t_auto, t_sk] + cells if isinstance(t, float)]
            fmt = lambda t: f"{t:.1f}" if isinstance(t, float) else str(t)  # noqa: E731
            print(f"| {shape} | {dname} | {layout} | {fmt(t_auto)} ({matmul_plan(a, b)}) | {fmt(t_sk)} | " +
                  " | ".join(fmt(t) for t in cells) + f" | {t_ref:.1f} | {t_ref / min(nums):.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
