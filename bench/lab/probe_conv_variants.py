#!/usr/bin/env python3
"""Forward conv builds side by side (the shipped module and experiment builds from
bench/lab/jit_experiments.json), against a copy of the same bytes and the 1 GiB copy ceiling.

Each module's contiguous forward binding is called directly on the same random data, its output
checked against the float64 reference (causal_conv1d_ref) first, then everything is timed with
do_bench (L2 flushed) in interleaved rounds; medians per implementation. --dao adds causal-conv1d's
kernel (from the carried .peers) on the same data. --stat trimmed takes each round's mean over the
middle 60% of do_bench's repetitions instead of their median: CUDA events tick in steps of about
0.6 us on an H100, so the median of a ~10 us kernel jumps between steps, while the trimmed mean
resolves differences below one step and, unlike a plain mean (--stat mean), ignores the repetitions
a slow host call delayed (causal-conv1d's Python wrapper takes ~40 us per call).

  AITER_LITE_JIT_CONFIG=bench/lab/jit_experiments.json python bench/lab/probe_conv_variants.py \\
      --modules module_causal_conv1d,<an experiment module of that file> --shapes fp16:8x5120x2048:4 --rounds 5

A shape is dtype:BxDxL:W, with :cl appended for a channel-last x and out (stored [B, L, D]).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from aiter_lite.jit import get_module  # noqa: E402
from aiter_lite.ops import causal_conv1d_ref  # noqa: E402
from aiter_lite.ops._common import DTYPE_CODES  # noqa: E402
from aiter_lite.testing import dtype_name  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import load_peers  # noqa: E402 - bench/common.py: the peers bench/gpu.sh installs

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


def wrong_output(name: str, spec: str, out: torch.Tensor, ref: torch.Tensor) -> bool:
    """True (and says so) when out's relative Frobenius error against the float64 ref is 1e-2 or more,
    or NaN (an output left unwritten)."""
    err = ((out.double() - ref).norm() / ref.norm()).item()
    bad = not err < 1e-2
    if bad:
        print(f"{name} {spec}: relative error {err:.3e}: wrong output", flush=True)
    return bad


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--modules", default="module_causal_conv1d")
    p.add_argument("--shapes", default="fp16:8x5120x2048:4,bf16:8x5120x2048:4,fp16:8x4096x4096:2,bf16:8x4096x4096:2")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--dao", action="store_true", help="time causal-conv1d's forward too (needs .peers)")
    p.add_argument("--peers", default=".peers")
    p.add_argument("--stat", choices=("median", "mean", "trimmed"), default="median",
                   help="per-round statistic over do_bench's repetitions")
    args = p.parse_args(argv)
    from triton.testing import do_bench

    def timer(fn):
        if args.stat != "trimmed":
            return do_bench(fn, warmup=25, rep=100, return_mode=args.stat) * 1e3
        times = sorted(do_bench(fn, warmup=25, rep=100, return_mode="all"))
        cut = len(times) // 5
        middle = times[cut:len(times) - cut] or times
        return sum(middle) / len(middle) * 1e3

    dao = load_peers(args.peers)[0] if args.dao else None

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
        dname, shape, width, *layout = spec.split(":")
        channel_last = layout == ["cl"]
        B, D, L = (int(v) for v in shape.split("x"))
        W = int(width)
        dtype = DTYPES[dtype_name(dname)]
        x = torch.randn(B, D, L, device="cuda").to(dtype)
        if channel_last:  # stored [B, L, D], passed as a [B, D, L] view
            x = x.transpose(1, 2).contiguous().transpose(1, 2)
        w = torch.randn(D, W, device="cuda").to(dtype)
        b = torch.randn(D, device="cuda").to(dtype)
        ref = causal_conv1d_ref(x, w, b, "silu")  # float64
        copy_dst = torch.empty_like(x)
        impls = {"copy": lambda: copy_dst.copy_(x)}
        for name, mod in mods.items():
            out = torch.full_like(x, float("nan"))  # x's layout
            if channel_last:
                call = (lambda mod=mod, out=out: mod.causal_conv1d_fwd(
                    x.data_ptr(), w.data_ptr(), b.data_ptr(), out.data_ptr(), B, D, L, W, *x.stride(), *w.stride(),
                    b.stride(0), *out.stride(), DTYPE_CODES[dtype], DTYPE_CODES[dtype], True, 0, stream))
            else:
                call = (lambda mod=mod, out=out: mod.causal_conv1d_fwd_contiguous(
                    x.data_ptr(), w.data_ptr(), b.data_ptr(), out.data_ptr(), B, D, L, W, DTYPE_CODES[dtype],
                    DTYPE_CODES[dtype], True, 0, stream))
            call()
            torch.cuda.synchronize()
            if wrong_output(name, spec, out, ref):
                return 1
            impls[name] = call
        if dao is not None and W <= 4:
            if wrong_output("dao", spec, dao.causal_conv1d_fn(x, w, b, activation="silu"), ref):
                return 1
            impls["dao"] = lambda: dao.causal_conv1d_fn(x, w, b, activation="silu")
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
