"""The causal conv1d backward on odd L (the rows kernel's shifted mode) against the aligned L next to it, through
the registered op torch.ops.aiter_lite.causal_conv1d_bwd (dx, dweight, dbias; SiLU; fp32 weights and bias): GPU
time of one call replayed from a CUDA graph (L2 flushed, median of --reps), fresh random data; copy = a device
copy of the bytes the backward moves (x and dout read, dx written); in brackets the fraction of copy speed. Run
once per build (session 19: the shifted rows' occupancy and vectors per lane, built with NVCC_APPEND_FLAGS).

  python bench/lab/conv_bwd_odd_ab.py LABEL [--reps N] [--dao] [--set odd|aligned]
      # --dao: causal-conv1d 1.7's backward beside it; --set aligned: aligned rows, large and small, some with
      # seq_idx (session 25: warps that walk several tiles of a row)
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

import aiter_lite  # noqa: F401  before bench/common.py (see conv_bwd_seq_idx_ab.py)
import aiter_lite.ops._conv_autograd  # noqa: E402,F401  registers torch.ops.aiter_lite.causal_conv1d_bwd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/
from common import DTYPES, graph_time_us, same_bytes_copy_us  # noqa: E402
from conv_bwd_seq_idx_ab import packed_ids  # noqa: E402  (this script's folder, bench/lab, is on sys.path)

# (dtype, B, D, L, W)
SHAPES = [("bf16", 8, 5120, 2047, 4), ("bf16", 8, 5120, 2048, 4), ("fp16", 4, 4096, 4095, 4),
          ("fp32", 8, 5120, 2047, 4), ("bf16", 8, 4096, 4093, 2), ("bf16", 8, 4096, 4093, 3),
          ("bf16", 3, 1536, 777, 3), ("bf16", 4, 512, 2047, 4), ("bf16", 16, 2048, 129, 4),
          ("fp16", 8, 4096, 4093, 2), ("bf16", 8, 4096, 4093, 1), ("bf16", 4, 1024, 777, 2)]

# (dtype, B, D, L, W, packed sequences per row: 0 = no seq_idx)
ALIGNED = [("bf16", 8, 5120, 2048, 4, 0), ("bf16", 4, 4096, 4096, 4, 0), ("fp16", 4, 4096, 4096, 4, 0),
           ("bf16", 8, 4096, 4096, 2, 0), ("bf16", 8, 4096, 4096, 3, 0), ("fp32", 8, 5120, 2048, 4, 0),
           ("fp32", 8, 4096, 4096, 2, 0), ("bf16", 1, 4096, 32768, 4, 0), ("bf16", 1, 256, 65536, 4, 0),
           ("bf16", 64, 64, 4096, 4, 0), ("bf16", 4, 4096, 4096, 8, 0), ("bf16", 4, 512, 2048, 4, 0),
           ("bf16", 2, 1024, 1024, 4, 0), ("bf16", 4, 4096, 4096, 4, 8), ("bf16", 1, 4096, 32768, 4, 64),
           ("fp32", 4, 4096, 4096, 4, 8)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("label")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--dao", action="store_true", help="time causal-conv1d's backward (importable) beside ours")
    ap.add_argument("--set", choices=("odd", "aligned"), default="odd")
    args = ap.parse_args()
    dao = None
    if args.dao:
        from causal_conv1d.cpp_functions import causal_conv1d_bwd_function as dao
    bwd = torch.ops.aiter_lite.causal_conv1d_bwd
    print(f"{args.label} | {torch.cuda.get_device_name()}")
    print("| label | x | B×D×L, W | copy µs | bwd µs (of copy) | dao µs (of copy) | ours vs dao |")
    shapes = ALIGNED if args.set == "aligned" else [s + (0,) for s in SHAPES]
    for dt, B, D, L, W, n_seq in shapes:
        dtype = DTYPES[dt]
        seq_idx = packed_ids(B, L, n_seq, False, torch.Generator().manual_seed(L + n_seq)) if n_seq else None
        x = torch.randn(B, D, L, device="cuda").to(dtype)
        dout = torch.randn(B, D, L, device="cuda").to(dtype)
        w, b = torch.randn(D, W, device="cuda") * 0.5, torch.randn(D, device="cuda")
        t = graph_time_us(lambda: bwd(x, w, b, dout, None, seq_idx, None, True, True, True, True, False, False),
                          args.reps)
        t_copy = same_bytes_copy_us(3 * x.numel() * x.element_size(), args.reps)  # x, dout read; dx written
        cells = [f"{t:.1f} ({t_copy / t:.2f})", "–", "–"]
        if dao is not None and 2 <= W <= 4 and n_seq == 0:  # causal-conv1d: widths 2-4, seq_idx channel-last only
            td = graph_time_us(lambda: dao(x, w, b, dout, None, None, None, None, False, True), args.reps)
            cells[1:] = [f"{td:.1f} ({t_copy / td:.2f})", f"{td / t:.2f}×"]
        seq = f", {n_seq} seqs" if n_seq else ""
        print(f"| {args.label} | {dt} | {B}×{D}×{L}, {W}{seq} | {t_copy:.1f} | " + " | ".join(cells) + " |",
              flush=True)
        del x, dout


if __name__ == "__main__":
    main()
