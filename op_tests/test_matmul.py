"""Matmul: check each kernel variant against float64 and time it (with torch.matmul as a baseline).

Examples:
  python op_tests/test_matmul.py                                  # defaults, GPU if there is one
  python op_tests/test_matmul.py -m 4096 -n 4096 -k 4096 --dtype bf16,fp16
  python op_tests/test_matmul.py -m 127,1000 -n 129 -k 7 --transpose_a --device cpu
Prints a markdown table (latency, GB/s, GFLOP/s, relative error, pass) with each variant's deltas
against the first; exits 1 on any mismatch.
"""
from __future__ import annotations

import argparse
import itertools
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import aiter_lite  # noqa: E402
from aiter_lite.ops import matmul_ref  # noqa: E402
from aiter_lite.testing import (DTYPE_NAMES, TOLERANCE, Row, bench, dtype_list, describe_device, int_list,  # noqa: E402
                                pick_device, poisoned_like, random_normal, rel_error, report)

GPU_VARIANTS = "naive,tiled,tensor_core"
TF32_TOLERANCE = 1e-3


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-m", type=int_list, default=[512], help="comma-separated list (default 512)")
    p.add_argument("-n", type=int_list, default=[512], help="comma-separated list (default 512)")
    p.add_argument("-k", type=int_list, default=[512], help="comma-separated list (default 512)")
    p.add_argument("--batch", type=int, default=0, help="batch size (0: plain 2-D matmul)")
    p.add_argument("--dtype", type=dtype_list, default=dtype_list("fp16,bf16,fp32"),
                   help="comma-separated: fp16,bf16,fp32 (or torch names: float16, bfloat16, float32, half, float)")
    p.add_argument("--tf32", action="store_true", help="allow TF32 for fp32 inputs")
    p.add_argument("--transpose_a", action="store_true", help="pass a as a transposed (column-major) view")
    p.add_argument("--transpose_b", action="store_true", help="pass b as a transposed view")
    p.add_argument("--variants", default=None,
                   help=f"comma-separated kernel variants (default: {GPU_VARIANTS} on GPU, auto on CPU)")
    p.add_argument("--no_torch", action="store_true", help="skip the torch.matmul baseline row")
    p.add_argument("--device", default="auto", help="auto (GPU if available), cpu, cuda, cuda:1 ...")
    p.add_argument("--check_only", action="store_true", help="check correctness, skip timing (sanitizer runs)")
    p.add_argument("--json", type=Path, help="write the rows as JSON here")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def operand(rows, cols, batch, dtype, device, transpose):
    lead = (batch,) if batch else ()
    if transpose:
        return random_normal((*lead, cols, rows), dtype, device).transpose(-1, -2)
    return random_normal((*lead, rows, cols), dtype, device)


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    torch.manual_seed(args.seed)
    device = pick_device(args.device)
    variants = (args.variants or (GPU_VARIANTS if device.type == "cuda" else "auto")).split(",")
    print(describe_device(device))
    rows = []
    for m, n, k, dtype in itertools.product(args.m, args.n, args.k, args.dtype):
        a = operand(m, k, args.batch, dtype, device, args.transpose_a)
        b = operand(k, n, args.batch, dtype, device, args.transpose_b)
        ref = matmul_ref(a, b)
        tf32 = args.tf32 and dtype == torch.float32
        tol = TF32_TOLERANCE if tf32 else TOLERANCE[dtype]
        shape = f"{args.batch}x" * bool(args.batch) + f"{m}x{n}x{k}" + " tf32" * tf32
        nbytes = (a.numel() + b.numel() + m * n * max(args.batch, 1)) * a.element_size()
        flops = 2 * m * n * k * max(args.batch, 1)
        impls = [(v, lambda v=v: aiter_lite.matmul(a, b, out, allow_tf32=tf32, variant=v)) for v in variants]
        if not args.no_torch:
            impls.append(("torch.matmul", lambda: torch.matmul(a, b, out=out)))
        for name, fn in impls:
            out = poisoned_like(ref.to(dtype))
            prev = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = tf32
            try:
                fn()
                err = rel_error(out, ref)
                t = {"us": float("nan")} if args.check_only else bench(fn, device)
            finally:
                torch.backends.cuda.matmul.allow_tf32 = prev
            rows.append(Row(shape, DTYPE_NAMES[dtype], name, t["us"], nbytes / t["us"] / 1e3, flops / t["us"] / 1e3,
                            err, err <= tol))
    return report(rows, args.json)


if __name__ == "__main__":
    sys.exit(main())
