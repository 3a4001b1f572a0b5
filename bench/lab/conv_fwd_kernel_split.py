"""Where the causal conv1d forward's time goes with seq_idx, kernel by kernel (torch.profiler, CUDA activity, mean of
--calls calls after a warm-up), through the launcher (no host check of seq_idx): plain rows against seq_idx on the
rows kernel (the marks kernel, then the rows kernel with its features). `--one NAME` runs one call (for ncu).

  python bench/lab/conv_fwd_kernel_split.py [--calls N] [--one NAME]
"""
from __future__ import annotations

import argparse
import collections

import torch
from torch.profiler import ProfilerActivity, profile

from aiter_lite.ops._conv_launch import launch_fwd_states

# name: (dtype, B, D, L, W, sequences per row or 0)
CASES = {
    "plain_8x5120x2048": (torch.bfloat16, 8, 5120, 2048, 4, 0),
    "seq4_8x5120x2048": (torch.bfloat16, 8, 5120, 2048, 4, 4),
    "seq4_8x5120x2048_w2": (torch.bfloat16, 8, 5120, 2048, 2, 4),
    "plain_1x4096x32768": (torch.bfloat16, 1, 4096, 32768, 4, 0),
    "seq64_1x4096x32768": (torch.bfloat16, 1, 4096, 32768, 4, 64),
}


def make(case):
    dt, B, D, L, W, n_seq = CASES[case]
    x = torch.randn(B, D, L, device="cuda").to(dt)
    out = torch.empty_like(x)
    w, b = torch.randn(D, W, device="cuda") * 0.5, torch.randn(D, device="cuda")
    sid = None
    if n_seq:
        ids = torch.zeros(L, dtype=torch.int32)
        ids[torch.randperm(L - 1)[: n_seq - 1] + 1] = 1
        sid = ids.cumsum(0).to(torch.int32).expand(B, L).contiguous().cuda()
    return lambda: launch_fwd_states(out, x, w, b, True, 0, seq_idx=sid)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20)
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
                us[ev.name[:110]] += ev.device_time / args.calls
        print(f"\n{case} {CASES[case][1:]}: {sum(us.values()):.1f} us of kernels a call")
        for name, t in us.most_common(4):
            print(f"  {t:8.1f} us  {name}")


if __name__ == "__main__":
    main()
