"""The causal conv1d backward with seq_idx against the plain backward of the same shape, through the registered
op torch.ops.aiter_lite.causal_conv1d_bwd (dx, dweight, dbias; SiLU; weights and bias fp32): GPU time of one call
replayed from a CUDA graph (L2 flushed before each replay, median of --reps), fresh random data. copy = a device
copy of the bytes the backward must move (x and dout read, dx written). Columns: µs, then in brackets the
fraction of copy speed (copy µs / ours). Run once per tree to A/B (session 19: the rows kernel's seq_idx mode
against the plain rows kernel plus the seq_idx fix-up).

  python bench/lab/conv_bwd_seq_idx_ab.py LABEL [--reps N] [--layout channel_last] [--dao]
  (--dao: causal-conv1d 1.7's backward beside ours, plain and with seq_idx; its seq_idx takes channel-last only)
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

import aiter_lite  # noqa: F401  before bench/common.py, which puts this script's checkout first on sys.path: an A/B run
                   # from another tree (PYTHONPATH) must keep that tree's package
import aiter_lite.ops._conv_autograd  # noqa: E402,F401  registers torch.ops.aiter_lite.causal_conv1d_bwd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/
from common import DTYPES, graph_time_us, same_bytes_copy_us  # noqa: E402

# (dtype, B, D, L, W, sequences per row, leading padding): issue 20's packed rows, the ANCHORS.md shapes with 4
# runs per row, odd L and widths 2-3.
SHAPES = [
    ("bf16", 1, 4096, 32768, 4, 64, False), ("bf16", 1, 4096, 32768, 4, 1024, False),
    ("fp32", 1, 4096, 32768, 4, 64, False), ("bf16", 8, 5120, 2048, 4, 4, False),
    ("bf16", 8, 5120, 2048, 4, 4, True), ("bf16", 8, 5120, 2047, 4, 4, False),
    ("bf16", 8, 4096, 4096, 2, 4, False), ("bf16", 8, 4096, 4096, 3, 4, False), ("fp16", 4, 512, 2048, 4, 4, False),
]


def packed_ids(B: int, L: int, n_seq: int, pad: bool, gen: torch.Generator) -> torch.Tensor:
    """int32 [B, L]: n_seq runs per row cut at random positions; with pad, the first fifth of each row is -1."""
    rows = []
    for _ in range(B):
        ids = torch.zeros(L, dtype=torch.int32)
        cuts = torch.randperm(L - 1, generator=gen)[: n_seq - 1] + 1
        ids[cuts] = 1
        ids = ids.cumsum(0).to(torch.int32)
        if pad:
            ids[: L // 5 + 1] = -1
        rows.append(ids)
    return torch.stack(rows).cuda()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("label")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--layout", choices=["contiguous", "channel_last"], default="contiguous")
    ap.add_argument("--dao", action="store_true", help="time causal-conv1d's backward (importable) beside ours")
    args = ap.parse_args()
    dao = None
    if args.dao:
        from causal_conv1d.cpp_functions import causal_conv1d_bwd_function as dao
    gen = torch.Generator().manual_seed(11)
    bwd = torch.ops.aiter_lite.causal_conv1d_bwd
    print(f"{args.label} | {torch.cuda.get_device_name()} | aiter_lite from {Path(aiter_lite.__file__).parent}")
    print(f"layout {args.layout}")
    print("| label | x | B×D×L, W, seqs | copy µs | plain µs | +seq_idx µs | +seq_idx det µs | seq/plain | dao plain µs "
          "| dao +seq_idx µs | ours vs dao (seq_idx) |")
    for dt, B, D, L, W, n_seq, pad in SHAPES:
        dtype = DTYPES[dt]
        if args.layout == "channel_last":
            x = torch.randn(B, L, D, device="cuda").to(dtype).transpose(1, 2)
            dout = torch.randn(B, L, D, device="cuda").to(dtype).transpose(1, 2)
        else:
            x = torch.randn(B, D, L, device="cuda").to(dtype)
            dout = torch.randn(B, D, L, device="cuda").to(dtype)
        w, b = torch.randn(D, W, device="cuda") * 0.5, torch.randn(D, device="cuda")
        sid = packed_ids(B, L, n_seq, pad, gen)

        def call(seq, det):
            return lambda: bwd(x, w, b, dout, None, seq, None, True, True, True, True, False, det)

        times = [graph_time_us(call(None, False), args.reps), graph_time_us(call(sid, False), args.reps),
                 graph_time_us(call(sid, True), args.reps)]
        t_copy = same_bytes_copy_us(3 * x.numel() * x.element_size(), args.reps)  # x, dout read; dx written
        cells = [f"{t:.1f} ({t_copy / t:.2f})" for t in times] + [f"{times[1] / times[0]:.2f}×", "–", "–", "–"]
        if dao is not None:
            td = [graph_time_us(lambda s=s: dao(x, w, b, dout, s, None, None, None, False, True), args.reps)
                  for s in (None, sid if args.layout == "channel_last" else None)]
            cells[4:] = [f"{td[0]:.1f} ({t_copy / td[0]:.2f})",
                         f"{td[1]:.1f} ({t_copy / td[1]:.2f})" if args.layout == "channel_last" else "–",
                         f"{td[1] / times[1]:.2f}×" if args.layout == "channel_last" else "–"]
        print(f"| {args.label} | {dt} | {B}×{D}×{L}, {W}, {n_seq}{' +pad' if pad else ''} | {t_copy:.1f} | "
              + " | ".join(cells) + " |", flush=True)
        del x, dout


if __name__ == "__main__":
    main()
