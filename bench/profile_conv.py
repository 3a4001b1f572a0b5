"""Profile target: one launch of each conv forward kernel on one shape, for Nsight Compute.

  ncu --profile-from-start off -k regex:causal_conv1d --section SpeedOfLight ... \
      python bench/profile_conv.py --shape 8x5120x2048 --width 4 --dtype fp16

Warms up (JIT build, peer build) outside the profiled range, then runs each implementation once
between cudaProfilerStart/Stop: aiter_lite dense, aiter_lite channel-last, and dao if .peers loads.
"""
import argparse
import sys

import torch

import aiter_lite

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shape", default="8x5120x2048")
    p.add_argument("--width", type=int, default=4)
    p.add_argument("--dtype", default="fp16", choices=sorted(DTYPES))
    p.add_argument("--peers", default=".peers")
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
    try:
        sys.path.insert(0, args.peers)
        import peers  # noqa: PLC0415
        dao, _ = peers.dao_causal_conv1d(root=args.peers)
        if args.width <= 4:
            impls.append(("dao", lambda: dao.causal_conv1d_fn(x, w, b, activation="silu")))
    except Exception as e:  # noqa: BLE001
        print(f"dao unavailable: {e}")
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
