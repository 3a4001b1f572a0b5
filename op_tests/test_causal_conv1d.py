"""Causal depthwise conv1d: check every kernel variant against float64 and time it.

Examples:
  python op_tests/test_causal_conv1d.py                          # defaults, GPU if there is one
  python op_tests/test_causal_conv1d.py --batch 8 --dim 4096 --seqlen 129,4096 --width 2,4 --dtype bf16
  python op_tests/test_causal_conv1d.py --device cpu --layout channel_last --no_bias
Prints a markdown table (latency, GB/s, GFLOP/s, relative error, pass) with each variant's deltas
against the first; exits 1 on any mismatch.
"""
from __future__ import annotations

import argparse
import itertools
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import aiter_lite  # noqa: E402
from aiter_lite.ops import causal_conv1d_ref, causal_conv1d_update_ref  # noqa: E402
from aiter_lite.testing import (DTYPE_NAMES, TOLERANCE, Row, bench, dtype_list, describe_device, int_list,  # noqa: E402
                                pick_device, poisoned_like, random_normal, rel_error, report)

GPU_VARIANTS = "naive,shared,vectorized"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", type=int_list, default=[4], help="comma-separated list (default 4)")
    p.add_argument("--dim", type=int_list, default=[512], help="comma-separated list (default 512)")
    p.add_argument("--seqlen", type=int_list, default=[2048], help="comma-separated list (default 2048)")
    p.add_argument("--width", type=int_list, default=[4], help="comma-separated list (default 4)")
    p.add_argument("--dtype", type=dtype_list, default=dtype_list("fp16,bf16,fp32"),
                   help="comma-separated: fp16,bf16,fp32 (or torch names: float16, bfloat16, float32, half, float)")
    p.add_argument("--use_silu", dest="use_silu", action="store_true", default=True, help="SiLU on (default)")
    p.add_argument("--no_silu", dest="use_silu", action="store_false", help="no activation")
    p.add_argument("--no_bias", action="store_true", help="no bias")
    p.add_argument("--layout", choices=("contiguous", "channel_last", "strided"), default="contiguous")
    p.add_argument("--variants", default=None,
                   help=f"comma-separated kernel variants (default: {GPU_VARIANTS} on GPU, auto on CPU)")
    p.add_argument("--no_torch", action="store_true", help="skip the torch F.conv1d baseline row")
    p.add_argument("--update", action="store_true", help="also check and time the decode-step update")
    p.add_argument("--device", default="auto", help="auto (GPU if available), cpu, cuda, cuda:1 ...")
    p.add_argument("--check_only", action="store_true", help="check correctness, skip timing (sanitizer runs)")
    p.add_argument("--json", type=Path, help="write the rows as JSON here")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def make_x(batch, dim, seqlen, dtype, device, layout):
    if layout == "channel_last":  # stored [B, L, D], viewed as [B, D, L]
        return random_normal((batch, seqlen, dim), dtype, device).transpose(1, 2)
    if layout == "strided":  # a slice of a wider tensor: no unit strides to rely on
        return random_normal((batch, dim, 2 * seqlen + 1), dtype, device)[:, :, 1::2]
    return random_normal((batch, dim, seqlen), dtype, device)


def torch_conv(x, weight, bias, use_silu):
    out = F.conv1d(x, weight.unsqueeze(1), bias, padding=weight.shape[1] - 1, groups=x.shape[1])[..., : x.shape[-1]]
    return F.silu(out) if use_silu else out


def run_forward(args, device, variants) -> list[Row]:
    rows = []
    for batch, dim, seqlen, width, dtype in itertools.product(args.batch, args.dim, args.seqlen, args.width,
                                                              args.dtype):
        x = make_x(batch, dim, seqlen, dtype, device, args.layout)
        weight = random_normal((dim, width), dtype, device)
        bias = None if args.no_bias else random_normal((dim,), dtype, device)
        ref = causal_conv1d_ref(x, weight, bias, "silu" if args.use_silu else None)
        shape = f"{batch}x{dim}x{seqlen} w{width}" + ("" if args.layout == "contiguous" else f" {args.layout}")
        nbytes = 2 * x.numel() * x.element_size()
        flops = 2 * width * x.numel()
        impls = [(v, (lambda v=v: aiter_lite.causal_conv1d_fwd(out, x, weight, bias, args.use_silu, variant=v)))
                 for v in variants]
        if not args.no_torch:
            impls.append(("torch F.conv1d", lambda: out.copy_(torch_conv(x, weight, bias, args.use_silu))))
        for name, fn in impls:
            out = poisoned_like(x)
            fn()
            err = rel_error(out, ref)
            t = {"us": float("nan")} if args.check_only else bench(fn, device)
            rows.append(Row(shape, DTYPE_NAMES[dtype], name, t["us"], nbytes / t["us"] / 1e3, flops / t["us"] / 1e3,
                            err, err <= TOLERANCE[dtype]))
    return rows


def run_update(args, device) -> list[Row]:
    rows = []
    for batch, dim, width, dtype in itertools.product(args.batch, args.dim, args.width, args.dtype):
        x = random_normal((batch, dim), dtype, device)
        state = random_normal((batch, dim, width - 1), dtype, device)
        weight = random_normal((dim, width), dtype, device)
        bias = None if args.no_bias else random_normal((dim,), dtype, device)
        act = "silu" if args.use_silu else None
        ref_state = state.double().clone()
        ref = causal_conv1d_update_ref(x, ref_state, weight, bias, act)
        check_state = state.clone()
        out = aiter_lite.causal_conv1d_update(x, check_state, weight, bias, act)
        err = max(rel_error(out, ref), rel_error(check_state, ref_state))
        t = ({"us": float("nan")} if args.check_only else
             bench(lambda: aiter_lite.causal_conv1d_update(x, state, weight, bias, act), device))
        nbytes = (2 * x.numel() + 2 * state.numel()) * x.element_size()
        rows.append(Row(f"update {batch}x{dim} w{width}", DTYPE_NAMES[dtype], "auto", t["us"],
                        nbytes / t["us"] / 1e3, 2 * width * x.numel() / t["us"] / 1e3, err, err <= TOLERANCE[dtype]))
    return rows


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")  # shows JIT build progress
    torch.manual_seed(args.seed)
    device = pick_device(args.device)
    variants = (args.variants or (GPU_VARIANTS if device.type == "cuda" else "auto")).split(",")
    print(describe_device(device))
    rows = run_forward(args, device, variants)
    if args.update:
        rows += run_update(args, device)
    return report(rows, args.json)


if __name__ == "__main__":
    sys.exit(main())
