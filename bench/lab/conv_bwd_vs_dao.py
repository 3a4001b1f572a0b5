"""The backward on large contiguous rows against causal-conv1d's, per tree: fwd and fwd + autograd.grad of x,
weight and bias, each replayed from a CUDA graph with L2 flushed (bench_conv_bwd.step_times), SiLU, fp32 weight
and bias. Run once per tree (the tree's package first on PYTHONPATH) to A/B a rows-kernel variant; dao is the
same in both runs, so its column shows the drift between them.

    python bench/lab/conv_bwd_vs_dao.py LABEL
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

import aiter_lite  # before bench/, which puts this script's checkout first on sys.path: the A/B keeps its tree

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/
from bench_conv_bwd import step_times  # noqa: E402
from common import DTYPES, load_peers  # noqa: E402

SHAPES = [("bf16", 8, 5120, 2048, 4), ("bf16", 4, 4096, 4096, 4), ("bf16", 8, 4096, 4096, 2),
          ("fp16", 4, 4096, 4096, 4), ("fp32", 8, 5120, 2048, 4), ("bf16", 1, 4096, 32768, 4)]


def main() -> int:
    label = sys.argv[1] if len(sys.argv) > 1 else "run"
    dao, _, notes = load_peers(skip=False)
    print(f"# {label}: {torch.cuda.get_device_name()}, aiter_lite from {Path(aiter_lite.__file__).parent}; "
          + "; ".join(notes))
    for dt, B, D, L, W in SHAPES:
        torch.manual_seed(B * D + L + W)
        x = torch.randn(B, D, L, device="cuda", dtype=DTYPES[dt]).requires_grad_()
        w = (0.5 * torch.randn(D, W, device="cuda")).requires_grad_()
        b = torch.randn(D, device="cuda").requires_grad_()
        dout = torch.randn_like(x)
        cells = []
        for name, fn in (("aiter_lite", lambda x, w, b: aiter_lite.causal_conv1d(x, w, b, activation="silu")),
                         ("dao", None if dao is None else lambda x, w, b: dao.causal_conv1d_fn(x, w, b,
                                                                                                activation="silu"))):
            t = "-" if fn is None else step_times(fn, x, w, b, dout)
            cells.append(t if isinstance(t, str) else f"{t[1] - t[0]:.1f} / {t[1]:.1f}")
        print(f"| {label} | {dt} {B}x{D}x{L} W={W} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
