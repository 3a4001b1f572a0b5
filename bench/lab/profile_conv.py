"""Profile target: one launch of each conv forward kernel on one shape, for Nsight Compute.

  ncu --profile-from-start off -k regex:causal_conv1d --section SpeedOfLight ... \
      python bench/lab/profile_conv.py --shape 8x5120x2048 --width 4 --dtype fp16

Warms up (JIT build, peer build) outside the profiled range, then runs each implementation once
between cudaProfilerStart/Stop: aiter_lite dense, aiter_lite channel-last, and dao if .peers loads.
--modules A,B adds each registered module's dense forward (its binding called directly: experiment
builds from AITER_LITE_JIT_CONFIG side by side), --copy a torch copy of the same bytes (the kernel
to compare with: -k regex:"causal_conv1d|copy").
"""
import argparse
import sys
from pathlib import Path

import torch

import aiter_lite
from aiter_lite.jit import get_module
from aiter_lite.testing import dtype_name
from aiter_lite.ops._common import DTYPE_CODES

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import load_peers  # noqa: E402 - bench/common.py: the peers bench/gpu.sh installs

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shape", default="8x5120x2048")
    p.add_argument("--width", type=int, default=4)
    p.add_argument("--dtype", default="fp16", type=dtype_name, help="fp16, bf16 or fp32")
    p.add_argument("--peers", default=".peers")
    p.add_argument("--modules", default="", help="comma-separated registered modules to profile as well")
    p.add_argument("--copy", action="store_true", help="also profile a copy of x's bytes")
    args = p.parse_args()
    B, D, L = (int(v) for v in args.shape.split("x"))
    dtype = DTYPES[args.dtype]
    x = torch.randn(B, D, L, device="cuda").to(dtype)
    w = torch.randn(D, args.width, device="cuda").to(dtype)
    b = torch.randn(D, device="cuda").to(dtype)
    x_cl = x.transpose(1, 2).contiguous().transpose(1, 2)
    out, out_cl = torch.empty_like(x), torch.empty_like(x_cl)
    impls = [("dense", lambda: aiter_lite.causal_conv1d_fwd(out, x, w, b, True)),
             ("channel_last", lambda: aiter_lite.causal_conv1d_fwd(out_cl, x_cl, w, b, True))]
    stream = torch.cuda.current_stream().cuda_stream
    for name in filter(None, args.modules.split(",")):
        mod, mod_out = get_module(name, "cuda"), torch.empty_like(x)
        impls.append((name, lambda mod=mod, o=mod_out: mod.causal_conv1d_fwd_contiguous(
            x.data_ptr(), w.data_ptr(), b.data_ptr(), o.data_ptr(), B, D, L, args.width, DTYPE_CODES[dtype],
            DTYPE_CODES[dtype], True, 0, stream)))
    if args.copy:
        copy_out = torch.empty_like(x)
        impls.append(("copy", lambda: copy_out.copy_(x)))
    dao, _, notes = load_peers(args.peers)
    print("; ".join(notes))
    if dao is not None and args.width <= 4:
        impls.append(("dao", lambda: dao.causal_conv1d_fn(x, w, b, activation="silu")))
    for _, fn in impls:
        fn()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for _, fn in impls:
        fn()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
    print("profiled:", ", ".join(name for name, _ in impls))


if __name__ == "__main__":
    main()
