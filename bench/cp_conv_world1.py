"""Cost of the context-parallel entry at world size 1 (NCCL, one GPU) against the plain op.

    python3 bench/cp_conv_world1.py [--shapes 8x4096x4096,1x64x64] [--dtype bfloat16] [--width 4]

For each shape: forward, and forward+backward when the op is differentiable, as (a) the plain
aiter_lite.causal_conv1d, (b) the same call with cp_context= of a one-rank group (short cut to the
plain op), (c) for reference, the general CP path on one rank (ctx.passthrough = False with the zigzag
layout: the halo of the back part is the rank's own front part, so every step but the P2P runs).
Times: median wall time per call of back-to-back eager calls, the device synchronised before and
after each batch of calls (so host and GPU time both count), rotating over 3 input sets.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
import torch.distributed as dist

import aiter_lite
from aiter_lite.distributed import build_cp_context


def per_call_us(fn, inputs, calls: int, rounds: int) -> float:
    for i in range(3):
        fn(*inputs[i % len(inputs)])
    torch.cuda.synchronize()
    samples = []
    for _ in range(rounds):
        t = time.perf_counter()
        for i in range(calls):
            fn(*inputs[i % len(inputs)])
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - t) / calls * 1e6)
    return statistics.median(samples)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="8x4096x4096,1x64x64")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--width", type=int, default=4)
    args = p.parse_args()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=0, world_size=1)
    dtype, width = getattr(torch, args.dtype), args.width
    rows, checks = [], []
    for shape in args.shapes.split(","):
        b, d, length = (int(v) for v in shape.split("x"))
        length -= length % 2
        big = b * d * length > 1 << 22
        calls, rounds = (20, 15) if big else (200, 15)
        gen = torch.Generator(device="cuda").manual_seed(0)
        inputs = [(torch.randn(b, d, length, device="cuda", generator=gen).to(dtype).requires_grad_(),
                   torch.randn(d, width, device="cuda", generator=gen).requires_grad_(),
                   torch.randn(d, device="cuda", generator=gen).requires_grad_(),
                   torch.randn(b, d, length, device="cuda", generator=gen).to(dtype)) for _ in range(3)]
        ctx = build_cp_context(width, local_len=length)
        general = build_cp_context(width, local_len=length, layout="zigzag")
        general.passthrough = False
        variants = {"plain": {}, "cp world 1": {"cp_context": ctx}, "plain (again: the spread)": {},
                    "cp world 1 (again)": {"cp_context": ctx}, "cp general path": {"cp_context": general}}

        def fwd(kw):
            def run(x, w, bias, dout):
                with torch.no_grad():
                    return aiter_lite.causal_conv1d(x, w, bias, "silu", **kw)
            return run

        def fwd_bwd(kw):
            def run(x, w, bias, dout):
                out = aiter_lite.causal_conv1d(x, w, bias, "silu", **kw)
                torch.autograd.grad(out, (x, w, bias), dout)
            return run

        reference = fwd({})(*inputs[0])
        for name, kw in variants.items():  # correctness first: world size 1 must be the plain op, bit for bit
            try:
                got = fwd(kw)(*inputs[0])
                checks.append((shape, name, "equal" if torch.equal(got, reference) else
                               f"max |diff| {(got.float() - reference.float()).abs().max().item():.3g}"))
            except Exception as e:  # noqa: BLE001
                checks.append((shape, name, f"n/a ({type(e).__name__})"))
        for mode, make in (("fwd", fwd), ("fwd+bwd", fwd_bwd)):
            base = None
            for name, kw in variants.items():
                try:
                    t = per_call_us(make(kw), inputs, calls, rounds)
                except Exception as e:  # noqa: BLE001 - a feature the op does not have yet: say so, go on
                    rows.append((shape, mode, name, f"n/a ({type(e).__name__}: {str(e)[:60]})", ""))
                    continue
                base = t if name == "plain" else base
                ratio = f"{t / base:.3f}" if base else ""
                rows.append((shape, mode, name, f"{t:.1f}", ratio))
    print("\nforward output against the plain op's:")
    for c in checks:
        print("  ", *c)
    print(f"\n{torch.cuda.get_device_name()} torch {torch.__version__} {args.dtype} width {width} SiLU+bias; "
          "median us per eager call (host+GPU), ratio to plain")
    print("| shape | pass | variant | us/call | vs plain |\n| --- | --- | --- | --- | --- |")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
