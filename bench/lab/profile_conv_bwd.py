"""Profile target: one backward (torch.autograd.grad after the forward) of aiter_lite and of causal-conv1d on one
contiguous shape, for Nsight Compute; warm-up (JIT build, peer load, first calls) outside the profiled range.

  ncu --profile-from-start off -k regex:bwd --section SpeedOfLight --section Occupancy --section WarpStateStats \
      python bench/lab/profile_conv_bwd.py --shape 4x4096x4096 --width 4 --dtype bf16
"""
import argparse
import sys
from pathlib import Path

import torch

import aiter_lite
from aiter_lite.testing import dtype_name

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import DTYPES, load_peers  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shape", default="4x4096x4096")
    p.add_argument("--width", type=int, default=4)
    p.add_argument("--dtype", default="bf16", type=dtype_name, help="fp16, bf16 or fp32")
    args = p.parse_args()
    B, D, L = (int(v) for v in args.shape.split("x"))
    x = torch.randn(B, D, L, device="cuda").to(DTYPES[args.dtype]).requires_grad_()
    w = (0.5 * torch.randn(D, args.width, device="cuda")).requires_grad_()
    b = torch.randn(D, device="cuda").requires_grad_()
    dout = torch.randn_like(x)
    dao, _, notes = load_peers()
    print("; ".join(notes))
    impls = {"aiter_lite": lambda: aiter_lite.causal_conv1d(x, w, b, activation="silu")}
    if dao is not None:
        impls["dao"] = lambda: dao.causal_conv1d_fn(x, w, b, activation="silu")
    for fn in impls.values():  # warm-up
        for _ in range(2):
            torch.autograd.grad(fn(), (x, w, b), dout)
    torch.cuda.synchronize()
    for name, fn in impls.items():
        y = fn()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()
        torch.autograd.grad(y, (x, w, b), dout)
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()
        print(f"profiled {name}")


if __name__ == "__main__":
    main()
