"""Widths 5..8 on every conv path, with width 4 as the control: run once per tree to A/B the runtime-width kernels
(session 23: widths 5..8 served by one 8-tap kernel per family instead of four specialised ones, to cut the build).

Each case goes through the real API; GPU time of one call replayed from a CUDA graph (L2 flushed before each replay,
median of --reps); fresh random data, fp32 weights and bias, SiLU. Backward cases time forward + torch.autograd.grad
of x, weight and bias (and the initial states where given). Columns: µs per width.

  python bench/lab/conv_wide_ab.py LABEL [--reps N] [--widths 4,5,6,7,8]
"""
from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import torch

import aiter_lite  # before bench/common.py, which puts this script's checkout first on sys.path: an A/B run
                   # from another tree (PYTHONPATH) must keep that tree's package

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/
from common import DTYPES, graph_time_us  # noqa: E402
from conv_cl_features import seq_ids  # noqa: E402

B, D, L = 4, 2048, 2048


def inputs(dtype, W, layout, length=L, grad=False):
    if layout == "channel_last":
        x = torch.randn(B, length, D, device="cuda").to(dtype).transpose(1, 2)
    elif layout == "cl_odd":  # steps of D + 1 channels, off the 16-byte grid: the direct channel-last kernel
        x = torch.randn(B, length, D + 1, device="cuda").to(dtype)[..., :D].transpose(1, 2)
    elif layout == "padded":  # neither dense nor channel-last: the backward's tile kernel
        x = torch.randn(B, D, length + 3, device="cuda").to(dtype)[..., :length]
    else:
        x = torch.randn(B, D, length, device="cuda").to(dtype)
    w = torch.randn(D, W, device="cuda")
    bias = torch.randn(D, device="cuda")
    init = torch.randn(B, D, W - 1, device="cuda").to(dtype)
    if grad:
        for t in (x, w, bias, init):
            t.requires_grad_(True)
    return x, w, bias, init


def forward_case(dtype, W, layout, features, length=L):
    x, w, bias, init = inputs(dtype, W, layout, length)
    sid = seq_ids(B, length, 4, random.Random(W))
    conv = aiter_lite.causal_conv1d_fn
    if features:
        return lambda: conv(x, w, bias, seq_idx=sid, initial_states=init, return_final_states=True,
                            activation="silu")
    return lambda: conv(x, w, bias, activation="silu")


def backward_case(dtype, W, layout, features, length=L, dout_other_layout=False):
    x, w, bias, init = inputs(dtype, W, layout, length, grad=True)
    sid = seq_ids(B, length, 4, random.Random(W))
    # dout as the output comes (channel-last for channel-last x), or in the other layout (a transposed gradient)
    dout_channel_last = (layout in ("channel_last", "cl_odd")) != dout_other_layout
    dout = torch.randn(B, D, length, device="cuda").to(dtype)
    if dout_channel_last:
        dout = torch.randn(B, length, D, device="cuda").to(dtype).transpose(1, 2)
    conv = aiter_lite.causal_conv1d_fn

    def step():
        if features:
            y = conv(x, w, bias, seq_idx=sid, activation="silu")
            torch.autograd.grad(y, (x, w, bias), dout)
        else:
            y = conv(x, w, bias, initial_states=init, activation="silu")
            torch.autograd.grad(y, (x, w, bias, init), dout)
    return step


def prefill_case(dtype, W):
    rng = random.Random(W)
    lens = [rng.randint(1, 1024) for _ in range(16)]
    loc = torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), dtype=torch.int32, device="cuda")
    x = torch.randn(D, int(loc[-1]), device="cuda").to(dtype)
    w, bias = torch.randn(D, W, device="cuda"), torch.randn(D, device="cuda")
    pool = torch.randn(32, D, W - 1, device="cuda").to(dtype)
    idx = torch.randperm(32, device="cuda")[:16].to(torch.int32)
    has = torch.rand(16, device="cuda") < 0.5
    return lambda: aiter_lite.causal_conv1d_varlen(x, w, bias, pool, loc, idx, has, "silu")


def update_case(dtype, W):
    x = torch.randn(64, D, 1, device="cuda").to(dtype)
    state = torch.randn(64, D, W - 1, device="cuda").to(dtype)
    w, bias = torch.randn(D, W, device="cuda"), torch.randn(D, device="cuda")
    return lambda: aiter_lite.causal_conv1d_update(x, state, w, bias, "silu")


CASES = [
    ("fwd rows", lambda dt, W: forward_case(dt, W, "contiguous", False)),
    ("fwd rows +seq+init+final", lambda dt, W: forward_case(dt, W, "contiguous", True)),
    ("fwd odd L +seq+init+final", lambda dt, W: forward_case(dt, W, "contiguous", True, L - 1)),
    ("fwd channel-last", lambda dt, W: forward_case(dt, W, "channel_last", False)),
    ("fwd channel-last +seq+init+final", lambda dt, W: forward_case(dt, W, "channel_last", True)),
    ("fwd padded +seq+init+final", lambda dt, W: forward_case(dt, W, "padded", True)),
    ("prefill 16 seqs", prefill_case),
    ("update 64 rows", update_case),
    ("bwd rows +init", lambda dt, W: backward_case(dt, W, "contiguous", False)),
    ("bwd rows +seq", lambda dt, W: backward_case(dt, W, "contiguous", True)),
    ("bwd odd L +init", lambda dt, W: backward_case(dt, W, "contiguous", False, L - 1)),
    ("bwd channel-last +init", lambda dt, W: backward_case(dt, W, "channel_last", False)),
    ("bwd channel-last +seq", lambda dt, W: backward_case(dt, W, "channel_last", True)),
    ("bwd channel-last direct +init", lambda dt, W: backward_case(dt, W, "cl_odd", False)),
    ("bwd channel-last, dout contiguous", lambda dt, W: backward_case(dt, W, "channel_last", False,
                                                                       dout_other_layout=True)),
    ("bwd rows, dout channel-last", lambda dt, W: backward_case(dt, W, "contiguous", False, dout_other_layout=True)),
    ("bwd padded +init", lambda dt, W: backward_case(dt, W, "padded", False)),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("label")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--widths", default="4,5,6,7,8")
    ap.add_argument("--dtypes", default="bf16,fp32")
    ap.add_argument("--cases", default="", help="substring: only the cases whose name has it")
    args = ap.parse_args()
    widths = [int(w) for w in args.widths.split(",")]
    print(f"{args.label} | {torch.cuda.get_device_name()} | aiter_lite from {Path(aiter_lite.__file__).parent}")
    print(f"| label | x | case, {B}×{D}×{L} | " + " | ".join(f"W={w} µs" for w in widths) + " |")
    for dt in args.dtypes.split(","):
        for name, make in [c for c in CASES if args.cases in c[0]]:
            cells = []
            for W in widths:
                try:
                    cells.append(f"{graph_time_us(make(DTYPES[dt], W), args.reps):.1f}")
                except Exception as e:  # noqa: BLE001 - a failing case is reported in its cell, the table goes on
                    torch.cuda.synchronize()
                    cells.append(f"{type(e).__name__}")
            print(f"| {args.label} | {dt} | {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
