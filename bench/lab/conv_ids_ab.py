"""A/B of the chunks kernel's seq_idx check (channel-last, causal_conv1d_fwd_features.cu): the warp-wide check
(one id per lane and a vote) against the one-by-one check (AITER_LITE_LAB_IDS=scalar, read at each launch, so
each captured graph keeps its choice). Rounds alternate the two graphs; GPU µs of one call replayed from a CUDA
graph, L2 flushed, median of --reps per round; x in the given dtype, fp32 weights, SiLU, 4 seq_idx runs per row.

  python bench/lab/conv_ids_ab.py [--reps N] [--rounds N]
"""
from __future__ import annotations

import argparse
import os
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/lab/
from common import DTYPES, graph_time_us  # noqa: E402
from conv_cl_features import seq_ids  # noqa: E402

import torch  # noqa: E402

SHAPES = [("bf16", 8, 5120, 2048, 4), ("bf16", 4, 4096, 4096, 4), ("fp16", 8, 5120, 2048, 4), ("bf16", 8, 5120, 2047, 3),
          ("fp32", 8, 5120, 2048, 4), ("bf16", 4, 512, 2048, 4), ("bf16", 3, 1536, 777, 3), ("bf16", 16, 2048, 129, 4),
          ("bf16", 2, 256, 1024, 4)]


def main():
    import aiter_lite
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    rng = random.Random(5)
    print("| x | B×D×L, W | plain µs | +seq_idx warp vote (per round) | +seq_idx one by one (per round) | vote / plain | "
          "one by one / plain |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for dt, B, D, L, W in SHAPES:
        x = torch.randn(B, L, D, device="cuda").to(DTYPES[dt]).transpose(1, 2)
        w = torch.randn(D, W, device="cuda")
        bias = torch.randn(D, device="cuda")
        sid = seq_ids(B, L, 4, rng)
        plain, vote, scalar = [], [], []
        for _ in range(args.rounds):
            os.environ.pop("AITER_LITE_LAB_IDS", None)
            plain.append(graph_time_us(lambda: aiter_lite.causal_conv1d(x, w, bias, "silu"), args.reps))
            vote.append(graph_time_us(lambda: aiter_lite.causal_conv1d(x, w, bias, "silu", seq_idx=sid), args.reps))
            os.environ["AITER_LITE_LAB_IDS"] = "scalar"
            scalar.append(graph_time_us(lambda: aiter_lite.causal_conv1d(x, w, bias, "silu", seq_idx=sid), args.reps))
        os.environ.pop("AITER_LITE_LAB_IDS", None)
        p = min(plain)
        f = lambda v: "/".join(f"{t:.1f}" for t in v)  # noqa: E731
        print(f"| {dt} | {B}×{D}×{L}, {W} | {f(plain)} | {f(vote)} | {f(scalar)} | {min(vote) / p:.3f}× | "
              f"{min(scalar) / p:.3f}× |", flush=True)
        del x


if __name__ == "__main__":
    main()
