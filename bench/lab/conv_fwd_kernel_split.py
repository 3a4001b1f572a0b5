"""Where the causal conv1d forward's time goes with seq_idx, kernel by kernel (torch.profiler, CUDA activity, mean of
--calls calls after a warm-up), through the launcher (no host check of seq_idx): plain rows against seq_idx on the
rows kernel (the marks kernel, then the rows kernel with its features). `--one NAME` runs one call (for ncu).

  python bench/lab/conv_fwd_kernel_split.py [--calls N] [--one NAME]
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

from aiter_lite.ops._conv_launch import launch_fwd_states

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernel_split  # noqa: E402

# name: (dtype, B, D, L, W, sequences per row or 0), then "init" and/or "final" for initial / final states
CASES = {
    "plain_8x5120x2048": (torch.bfloat16, 8, 5120, 2048, 4, 0),
    "seq4_8x5120x2048": (torch.bfloat16, 8, 5120, 2048, 4, 4),
    "seq4_init_8x5120x2048": (torch.bfloat16, 8, 5120, 2048, 4, 4, "init"),
    "seq4_final_8x5120x2048": (torch.bfloat16, 8, 5120, 2048, 4, 4, "final"),
    "seq4_init_final_8x5120x2048": (torch.bfloat16, 8, 5120, 2048, 4, 4, "init", "final"),
    "init_final_8x5120x2048": (torch.bfloat16, 8, 5120, 2048, 4, 0, "init", "final"),
    "seq4_8x5120x2048_w2": (torch.bfloat16, 8, 5120, 2048, 2, 4),
    "plain_1x4096x32768": (torch.bfloat16, 1, 4096, 32768, 4, 0),
    "seq64_1x4096x32768": (torch.bfloat16, 1, 4096, 32768, 4, 64),
}


def make(case):
    shape, states = CASES[case][:6], CASES[case][6:]
    x, w, b, sid = kernel_split.case_inputs(*shape)
    out = torch.empty_like(x)
    B, D, _ = x.shape
    init = torch.randn(B, D, w.shape[1] - 1, device="cuda").to(x.dtype) if "init" in states else None
    final = torch.empty(B, D, w.shape[1] - 1, device="cuda", dtype=x.dtype) if "final" in states else None
    return lambda: launch_fwd_states(out, x, w, b, True, 0, seq_idx=sid, initial_states=init, final_states=final)


if __name__ == "__main__":
    kernel_split.main(CASES, make, __doc__)
