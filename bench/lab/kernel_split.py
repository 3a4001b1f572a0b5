"""Shared by the conv kernel-split scripts: each case's kernels, timed by torch.profiler (CUDA activity, mean of
`calls` calls after a warm-up), or one call of one case (for ncu)."""
from __future__ import annotations

import argparse
import collections

import torch
from torch.profiler import ProfilerActivity, profile


def case_inputs(dt, B, D, L, W, n_seq):
    """x [B, D, L] in dt, fp32 weight and bias, and seq_idx of n_seq runs a row cut at random positions (the same in
    every row; None when n_seq is 0)."""
    x = torch.randn(B, D, L, device="cuda").to(dt)
    w, b = torch.randn(D, W, device="cuda") * 0.5, torch.randn(D, device="cuda")
    sid = None
    if n_seq:
        ids = torch.zeros(L, dtype=torch.int32)
        ids[torch.randperm(L - 1)[: n_seq - 1] + 1] = 1
        sid = ids.cumsum(0).to(torch.int32).expand(B, L).contiguous().cuda()
    return x, w, b, sid


def main(cases: dict, make, doc: str) -> None:
    """cases: name -> description printed beside it; make(name) -> a callable running one call of that case."""
    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--one", default="", help="run one call of this case and stop")
    args = ap.parse_args()
    if args.one:
        make(args.one)()
        torch.cuda.synchronize()
        return
    print(f"{torch.cuda.get_device_name()}")
    for case in cases:
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
        print(f"\n{case} {cases[case]}: {sum(us.values()):.1f} us of kernels a call")
        for name, t in us.most_common(6):
            print(f"  {t:8.1f} us  {name}")
