#!/usr/bin/env python3
"""Where the host time of a tiny causal_conv1d call goes (issue 4's host-overhead target).

For each call form, on a tiny fp16 tensor (1x64x16, W=4, bias, SiLU), the fastest of 7 rounds of
back-to-back calls: enqueue = CPU time per call of 400 calls from an idle GPU, timed before the final
synchronize (the host overhead proper); wall = with the synchronize of 2000 calls (as
bench_causal_conv1d.py --host-only): max(host overhead, GPU time per kernel). Then the GPU time per
kernel (CUDA events around 800 calls queued behind a sleep kernel), and the Python path's pieces alone.

  python bench/host_overhead_conv.py [--out PATH]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import host_us, need_cuda  # noqa: E402
from records import md_table, write_run  # noqa: E402

import torch  # noqa: E402

import aiter_lite  # noqa: E402
from aiter_lite.ops import _common  # noqa: E402


def gpu_per_kernel(fn, n: int = 800) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    # keep the queue ahead of the GPU: a sleep kernel first, so the events measure the kernels only
    torch.cuda._sleep(50_000_000)
    start.record()
    for _ in range(n):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / n


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, help="the run's JSON")
    args = p.parse_args(argv)
    need_cuda("host_overhead_conv")
    x = torch.randn(1, 64, 16, device="cuda", dtype=torch.float16)
    w = torch.randn(64, 4, device="cuda", dtype=torch.float16)
    b = torch.randn(64, device="cuda", dtype=torch.float16)
    out = torch.empty_like(x)
    state = torch.randn(1, 64, 3, device="cuda", dtype=torch.float16)
    x_step = torch.randn(1, 64, device="cuda", dtype=torch.float16)  # a decode step's x: contiguous [B, D]
    aiter_lite.causal_conv1d(x, w, b, "silu")  # build / load
    conv = sys.modules["aiter_lite.ops.causal_conv1d"]
    mod = conv.get_module(conv.MODULE, "cuda")
    launch = mod.causal_conv1d_fwd_contiguous
    stream = torch.cuda.current_stream().cuda_stream
    largs = (x.data_ptr(), w.data_ptr(), b.data_ptr(), out.data_ptr(), 1, 64, 16, 4, 1, 1, True, 0, stream)

    calls = {
        "causal_conv1d (functional)": lambda: aiter_lite.causal_conv1d(x, w, b, "silu"),
        "causal_conv1d_fwd(out=)": lambda: aiter_lite.causal_conv1d_fwd(out, x, w, b, True),
        "causal_conv1d_fwd(out=) variant=naive": lambda: aiter_lite.causal_conv1d_fwd(out, x, w, b, True,
                                                                                     variant="naive"),
        "causal_conv1d_update (1x64, state 3)": lambda: aiter_lite.causal_conv1d_update(x_step, state, w, b,
                                                                                       "silu"),
        "_launch_fwd_fast (one-pass checks + launch)": lambda: conv._launch_fwd_fast(out, x, w, b, True, "auto"),
        "binding call, arguments precomputed": lambda: launch(*largs),
        "torch.add": lambda: torch.add(x, x),
        "torch.empty_like": lambda: torch.empty_like(x),
    }
    x3 = x_step.unsqueeze(-1)
    uout = torch.empty_like(x3)
    uargs = (x3.data_ptr(), state.data_ptr(), w.data_ptr(), b.data_ptr(), 0, 0, uout.data_ptr(), 1, 64, 1, 4, 3, 1,
             *x3.stride(), *state.stride(), *w.stride(), 1, *uout.stride(), 1, 1, True, stream)
    calls["(update) binding call, arguments precomputed"] = lambda: mod.causal_conv1d_update(*uargs)
    calls["(update) _launch_update"] = lambda: conv._launch_update(uout, x3, state, w, b, True, None, None)
    pieces = {  # the Python path's parts, no launch
        "(update) _well_formed_update": lambda: conv._well_formed_update(x_step, state, w, b, None, None),
        "(update) check_no_alias of conv_state": lambda: _common.check_no_alias(
            "conv_state", state, (("x", x3), ("weight", w), ("bias", b))),
        "(update) unsqueeze + empty_like + squeeze": lambda: torch.empty_like(x_step.unsqueeze(-1)).squeeze(-1),
        "_well_formed_fwd": lambda: conv._well_formed_fwd(out, x, w, b, True, "auto"),
        "check_no_alias": lambda: _common.check_no_alias("out", out, (("x", x), ("weight", w), ("bias", b))),
        "get_module": lambda: conv.get_module(conv.MODULE, "cuda"),
        "device_and_stream": lambda: _common.device_and_stream(x),
        "use_direct_call": _common.use_direct_call,
        "13 argument reads (data_ptr, shape, contiguity)": lambda: (
            x.data_ptr(), w.data_ptr(), b.data_ptr(), out.data_ptr(), *x.shape, w.shape[1], x.is_contiguous(),
            out.is_contiguous(), w.is_contiguous(), b.is_contiguous()),
    }
    rows = [dict(call=name, enqueue_us=host_us(fn, 400, 7, sync=False), wall_us=host_us(fn, 2000, 7),
                 gpu_us_per_kernel=gpu_per_kernel(fn) if name != "torch.empty_like" else None)
            for name, fn in calls.items()]
    rows += [dict(call="(piece) " + name, enqueue_us=host_us(fn, 2000, 7, sync=False)) for name, fn in pieces.items()]
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, python {sys.version.split()[0]}")
    keys = ("enqueue_us", "wall_us", "gpu_us_per_kernel")
    print(md_table(["call", "enqueue us/call", "wall us/call (2000, synced)", "GPU us per kernel"],
                   [[r["call"], *("-" if r.get(k) is None else f"{r[k]:.2f}" for k in keys)] for r in rows]))
    write_run(args.out, torch.cuda.get_device_name(), torch.__version__, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
