"""Profile target: one call of cuBLAS (torch.matmul) and of each named module_matmul build on one shape,
for Nsight Compute.

  ncu --profile-from-start off -k regex:"nvjet|sm90|matmul_wgmma" --metrics gpu__time_duration.sum,... \\
      python bench/lab/profile_matmul.py --shape 4096x4096x4096 --dtype fp16 --modules module_matmul_base,module_matmul

Warms up (JIT builds, cuBLAS heuristics) outside the profiled range, then runs each implementation
--repeat times between cudaProfilerStart/Stop, in the order cuBLAS, then the modules as listed
(ncu's kernel list follows that order). Modules other than module_matmul come from registries in
AITER_LITE_JIT_CONFIG (bench/lab/make_base_module.py, bench/lab/jit_experiments.json).
"""
import argparse
import importlib

import torch

import aiter_lite
from aiter_lite.testing import dtype_name

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shape", default="4096x4096x4096", help="MxNxK")
    p.add_argument("--dtype", default="fp16", type=lambda s: dtype_name(s, allowed=DTYPES), help="fp16 or bf16")
    p.add_argument("--modules", default="module_matmul", help="comma-separated module_matmul builds")
    p.add_argument("--config", type=int, default=-1, help="matmul config (-1: the planner's)")
    p.add_argument("--repeat", type=int, default=1, help="profiled calls per implementation")
    p.add_argument("--b-layout", choices=("n", "t"), default="n",
                   help="n: b a row-major [K, N] tensor; t: b = w.t() for a row-major [N, K] w")
    args = p.parse_args()
    m, n, k = (int(v) for v in args.shape.split("x"))
    dtype = DTYPES[args.dtype]
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(k, n, device="cuda", dtype=dtype) if args.b_layout == "n" else \
        torch.randn(n, k, device="cuda", dtype=dtype).t()
    out = torch.empty(m, n, device="cuda", dtype=dtype)
    ops_matmul = importlib.import_module("aiter_lite.ops.matmul")

    def ours(module):
        def call():
            ops_matmul.MODULE = module
            aiter_lite.matmul(a, b, out, config=args.config)
        return call

    impls = [("cublas", lambda: torch.matmul(a, b, out=out))]
    impls += [(mod, ours(mod)) for mod in args.modules.split(",") if mod]
    for _, fn in impls:
        fn()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for _, fn in impls:
        for _ in range(args.repeat):
            fn()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
    print("profiled, in order:", ", ".join(name for name, _ in impls), f"({args.repeat} call(s) each)")


if __name__ == "__main__":
    main()
