"""Where the causal conv1d backward's time goes, kernel by kernel, through the registered op (torch.profiler,
CUDA activity, mean of --calls calls after a warm-up): plain and odd L rows, and seq_idx (packed sequences, with
the dout masking pass the launcher runs for padding tokens). `--one SHAPE` runs one call of one case (for ncu).

  python bench/lab/conv_bwd_kernel_split.py [--calls N] [--one NAME]
"""
from __future__ import annotations

import argparse
import collections

import torch
from torch.profiler import ProfilerActivity, profile

import aiter_lite.ops._conv_autograd  # noqa: F401  registers torch.ops.aiter_lite.causal_conv1d_bwd

# name: (dtype, B, D, L, W, sequences per row or 0)
CASES = {
    "aligned": (torch.bfloat16, 8, 5120, 2048, 4, 0),
    "odd": (torch.bfloat16, 8, 5120, 2047, 4, 0),
    "odd_fp32": (torch.float32, 8, 5120, 2047, 4, 0),
    "odd_777": (torch.bfloat16, 3, 1536, 777, 3, 0),
    "packed64": (torch.bfloat16, 1, 4096, 32768, 4, 64),
    "packed1024": (torch.bfloat16, 1, 4096, 32768, 4, 1024),
}


def make(case):
    dt, B, D, L, W, n_seq = CASES[case]
    x, dout = torch.randn(B, D, L, device="cuda").to(dt), torch.randn(B, D, L, device="cuda").to(dt)
    w, b = torch.randn(D, W, device="cuda") * 0.5, torch.randn(D, device="cuda")
    sid = None
    if n_seq:
        ids = torch.zeros(L, dtype=torch.int32)
        ids[torch.randperm(L - 1)[: n_seq - 1] + 1] = 1
        sid = ids.cumsum(0).to(torch.int32).expand(B, L).contiguous().cuda()
    bwd = torch.ops.aiter_lite.causal_conv1d_bwd
    return lambda: bwd(x, w, b, dout, None, sid, None, True, True, True, True, False, False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--one", default="")
    args = ap.parse_args()
    if args.one:
        make(args.one)()
        torch.cuda.synchronize()
        return
    print(f"{torch.cuda.get_device_name()}")
    for case in CASES:
        fn = make(case)
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(args.calls):
                fn()
            torch.cuda.synchronize()
        us = collections.Counter()
        for ev in prof.events():
            if ev.device_type == torch.autograd.DeviceType.CUDA:
                us[ev.name[:90]] += ev.device_time / args.calls
        total = sum(us.values())
        print(f"\n{case} {CASES[case]}: {total:.1f} us of kernels a call")
        for name, t in us.most_common(6):
            print(f"  {t:8.1f} us  {name}")


if __name__ == "__main__":
    main()
