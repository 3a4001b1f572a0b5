"""seq_idx and states on x [B, D, L] contiguous against the plain forward of the same shape, through the real API:
GPU time of one call replayed from a CUDA graph (L2 flushed before each replay, median of --reps), fresh random
data, weights and bias fp32, SiLU; 4 seq_idx runs per row unless the row says (+pad: a leading run of padding tokens, a fifth of the
row); copy = a device copy of x's bytes read and out's written. Columns: µs, and in brackets the ratio to our
plain forward. Run once per tree to A/B (session 18: the dense kernel against the plain kernels plus the
seq_idx fix-up).

  python bench/lab/conv_seq_idx_split.py LABEL [--reps N]
"""
from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import torch

import aiter_lite  # before bench/common.py, which puts this script's checkout first on sys.path: an A/B run
                   # from another tree (PYTHONPATH) must keep that tree's package

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/
from common import DTYPES, graph_time_us  # noqa: E402
from conv_cl_features import seq_ids  # noqa: E402  (runs per row at random cuts, as the channel-last A/B draws them)

# (dtype, B, D, L, W): the ANCHORS.md shapes plus odd L and widths 2-4.
SHAPES = [
    ("bf16", 8, 5120, 2048, 4), ("bf16", 4, 4096, 4096, 4), ("fp16", 8, 5120, 2048, 4), ("fp32", 8, 5120, 2048, 4),
    ("bf16", 8, 4096, 4096, 2), ("bf16", 8, 4096, 4096, 3), ("bf16", 8, 5120, 2047, 4), ("bf16", 4, 512, 2048, 4),
    ("bf16", 3, 1536, 777, 3), ("bf16", 16, 2048, 129, 4), ("bf16", 2, 256, 1024, 4),
    ("bf16", 1, 4096, 32768, 4, 64), ("bf16", 1, 4096, 32768, 4, 1024),
]  # a sixth entry: runs per row (default 4)


def padded(ids: torch.Tensor) -> torch.Tensor:
    """ids with a leading run of padding tokens (-1), a fifth of each row."""
    ids = ids.clone()
    ids[:, :ids.shape[1] // 5 + 1] = -1
    return ids


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("label")
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()
    rng = random.Random(7)
    print(f"{args.label} | {torch.cuda.get_device_name()} | aiter_lite from {Path(aiter_lite.__file__).parent}")
    print("| label | x | B×D×L, W | plain µs | +seq_idx | +seq_idx pad | +init | +init+final | +seq_idx+init+final "
          "| copy µs |")
    for dt, B, D, L, W, *more in SHAPES:
        runs = more[0] if more else 4
        dtype = DTYPES[dt]
        x = torch.randn(B, D, L, device="cuda").to(dtype)
        init = torch.randn(B, D, W - 1, device="cuda").to(dtype)
        w = torch.randn(D, W, device="cuda")
        bias = torch.randn(D, device="cuda")
        sid, sid_pad = seq_ids(B, L, runs, rng), padded(seq_ids(B, L, runs, rng))
        conv = aiter_lite.causal_conv1d_fn
        cases = [lambda: conv(x, w, bias, activation="silu"),
                 lambda: conv(x, w, bias, seq_idx=sid, activation="silu"),
                 lambda: conv(x, w, bias, seq_idx=sid_pad, activation="silu"),
                 lambda: conv(x, w, bias, initial_states=init, activation="silu"),
                 lambda: conv(x, w, bias, initial_states=init, return_final_states=True, activation="silu"),
                 lambda: conv(x, w, bias, seq_idx=sid, initial_states=init, return_final_states=True,
                              activation="silu")]
        times = [graph_time_us(fn, args.reps) for fn in cases]
        src = torch.empty(x.numel() * x.element_size() // 4, device="cuda").normal_()
        dst = torch.empty_like(src)
        t_copy = graph_time_us(lambda: dst.copy_(src), args.reps)
        cells = [f"{times[0]:.1f}"] + [f"{t:.1f} ({t / times[0]:.2f}×)" for t in times[1:]]
        print(f"| {args.label} | {dt} | {B}×{D}×{L}, {W}{'' if runs == 4 else f', {runs} runs'} | " + " | ".join(cells) + f" | {t_copy:.1f} |", flush=True)
        del x, init, src, dst


if __name__ == "__main__":
    main()
