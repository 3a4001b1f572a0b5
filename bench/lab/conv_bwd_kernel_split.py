"""Where the causal conv1d backward's time goes, kernel by kernel, through the registered op (torch.profiler,
CUDA activity, mean of --calls calls after a warm-up): plain and odd L rows, and seq_idx (packed sequences, with
the dout masking pass the launcher runs for padding tokens). `--one SHAPE` runs one call of one case (for ncu).

  python bench/lab/conv_bwd_kernel_split.py [--calls N] [--one NAME]
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

import aiter_lite.ops._conv_autograd  # noqa: F401  registers torch.ops.aiter_lite.causal_conv1d_bwd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernel_split  # noqa: E402

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
    x, w, b, sid = kernel_split.case_inputs(*CASES[case])
    dout = torch.randn_like(x)
    bwd = torch.ops.aiter_lite.causal_conv1d_bwd
    return lambda: bwd(x, w, b, dout, None, sid, None, True, True, True, True, False, False)


if __name__ == "__main__":
    kernel_split.main(CASES, make, __doc__)
