#!/usr/bin/env python3
"""Forward conv builds side by side (the shipped module and experiment builds from
bench/jit_experiments.json), against a copy of the same bytes and the 1 GiB copy ceiling.

Each module's contiguous forward binding is called directly on the same random data, its output
checked against the float64 reference (causal_conv1d_ref) first, then everything is timed with
do_bench (L2 flushed) in interleaved rounds; medians per implementation.

  AITER_LITE_JIT_CONFIG=bench/jit_experiments.json python bench/probe_conv_variants.py \\
      --modules module_causal_conv1d,<an experiment module of that file> --shapes fp16:8x5120x2048:4 --rounds 5
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from aiter_lite.jit import get_module  # noqa: E402
from aiter_lite.ops import causal_conv1d_ref  # noqa: E402
from aiter_lite.ops._common import DTYPE_CODES  # noqa: E402

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--modules", default="module_causal_conv1d")
    p.add_argument("--shapes", default="fp16:8x5120x2048:4,bf16:8x5120x2048:4,fp16:8x4096x4096:2,bf16:8x4096x4096:2")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    from triton.testing import do_bench

    def timer(fn):
        return do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e3

    n = 1 << 30
    src = torch.empty(n, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    ceiling = 2 * n / statistics.median(timer(lambda: dst.copy_(src)) for _ in range(3)) / 1e6
    del src, dst
    print(f"device {torch.cuda.get_device_name()}: 1 GiB copy {ceiling:.3f} TB/s", flush=True)
    mods = {name: get_module(name, "cuda") for name in args.modules.split(",")}
    stream = torch.cuda.current_stream().cuda_stream
    records = []
    for spec in args.shapes.split(","):
        dname, shape, width = spec.split(":")
        B, D, L = (int(v) for v in shape.split("x"))
        W = int(width)
        dtype = DTYPES[dname]
        x = torch.randn(B, D, L, device="cuda").to(dtype)
        w = torch.randn(D, W, device="cuda").to(dtype)
        b = torch.randn(D, device="cuda").to(dtype)
        ref = causal_conv1d_ref(x, w, b, "silu")  # float64
        copy_dst = torch.empty_like(x)
        impls = {"copy": lambda: copy_dst.copy_(x)}
        for name, mod in mods.items():
            out = torch.full_like(x, float("nan"))
            call = (lambda mod=mod, out=out: mod.causal_conv1d_fwd_contiguous(
                x.data_ptr(), w.data_ptr(), b.data_ptr(), out.data_ptr(), B, D, L, W, DTYPE_CODES[dtype],
                DTYPE_CODES[dtype], True, 0, stream))
            call()
            torch.cuda.synchronize()
            err = ((out.double() - ref).norm() / ref.norm()).item()
            if not err < 1e-2:
                print(f"{name} {spec}: relative error {err:.3e}: wrong output", flush=True)
                return 1
            impls[name] = call
        times = {k: [] for k in impls}
        for _ in range(args.rounds):
            for k, fn in impls.items():
                times[k].append(timer(fn))
        nbytes = 2 * x.numel() * x.element_size()
        base = statistics.median(times["copy"])
        for k, ts in times.items():
            us = statistics.median(ts)
            tbps = nbytes / us / 1e6
            records.append(dict(spec=spec, impl=k, us=round(us, 2), tbps=round(tbps, 4),
                                of_ceiling=round(tbps / ceiling, 4), of_copy=round(base / us, 4),
                                rounds=[round(t, 2) for t in ts]))
            print(f"{spec:22s} {k:32s} {us:8.2f} us {tbps:6.3f} TB/s  {tbps / ceiling:.3f} of 1 GiB copy  "
                  f"{base / us:.3f} of same-size copy  ({', '.join(f'{t:.1f}' for t in ts)})", flush=True)
        del x, w, b, ref, copy_dst
        torch.cuda.empty_cache()
    if args.json:
        args.json.write_text(json.dumps(dict(device=torch.cuda.get_device_name(), ceiling_tbps=ceiling,
                                             records=records), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
