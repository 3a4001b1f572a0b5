"""Channel-last forward with seq_idx / initial states / final states against the plain forward of the same shape
and against causal-conv1d's channel-last forward with the same arguments, through the real API: GPU time of one
call replayed from a CUDA graph (L2 flushed before each replay, median of --reps), fresh random data, x in the
given dtype, weights and bias fp32 (as Mamba runs causal-conv1d), SiLU, 4 seq_idx runs per row; copy = a device
copy of x's bytes. Columns: µs (ratio to our plain forward), and dao's time / ours for the same arguments.

  python bench/lab/conv_cl_features.py [--no-dao] [--label NAME] [--reps N]
"""
from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/
from common import DTYPES, graph_time_us, load_peers  # noqa: E402

import torch  # noqa: E402

# (dtype, B, D, L, W): the channel-last rows of ANCHORS.md plus odd L and widths 2-4.
SHAPES = [
    ("bf16", 8, 5120, 2048, 4), ("bf16", 4, 4096, 4096, 4), ("fp16", 8, 5120, 2048, 4), ("fp32", 8, 5120, 2048, 4),
    ("bf16", 8, 4096, 4096, 2), ("bf16", 8, 5120, 2047, 3), ("bf16", 4, 512, 2048, 4), ("bf16", 3, 1536, 777, 3),
    ("bf16", 16, 2048, 129, 4), ("bf16", 2, 256, 1024, 4), ("fp32", 4, 512, 2048, 2),
]


def seq_ids(batch, length, runs, rng):
    rows = []
    for b in range(batch):
        cuts = sorted(rng.sample(range(1, length), min(runs - 1, length - 1)))
        row = torch.zeros(length, dtype=torch.int32)
        for c in cuts:
            row[c:] += 1
        rows.append(row + 3 * b)
    return torch.stack(rows).cuda()


def main():
    import aiter_lite
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-dao", action="store_true")
    ap.add_argument("--label", default="")
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()
    dao, _, notes = load_peers(skip=args.no_dao)
    print(args.label, "|", "; ".join(notes))
    rng = random.Random(5)
    print("| x / w | B×D×L, W | plain µs | +seq_idx | +init | +init+final | dao plain | dao +seq | dao +init | "
          "dao +init+final | copy µs |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for dt, B, D, L, W in SHAPES:
        dtype = DTYPES[dt]
        x = torch.randn(B, L, D, device="cuda").to(dtype).transpose(1, 2)
        init = torch.randn(B, W - 1, D, device="cuda").to(dtype).transpose(1, 2)
        fin = torch.empty(B, W - 1, D, device="cuda", dtype=dtype).transpose(1, 2)
        w = torch.randn(D, W, device="cuda")
        bias = torch.randn(D, device="cuda")
        sid = seq_ids(B, L, 4, rng)
        calls = {
            "plain": dict(),
            "seq": dict(seq_idx=sid),
            "init": dict(initial_states=init),
            "final": dict(initial_states=init, return_final_states=True, final_states_out=fin),
        }
        t = {k: graph_time_us(lambda kw=kw: aiter_lite.causal_conv1d(x, w, bias, "silu", **kw), args.reps)
             for k, kw in calls.items()}
        d = {}
        if dao is not None and 2 <= W <= 4:
            d = {k: graph_time_us(lambda kw=kw: dao.causal_conv1d_fn(x, w, bias, activation="silu", **kw), args.reps)
                 for k, kw in calls.items()}
        src = torch.empty(x.numel() * x.element_size() // 4, device="cuda")
        dst = torch.empty_like(src)
        t_copy = graph_time_us(lambda: dst.copy_(src), args.reps)
        cells = [f"{t['plain']:.1f}"] + [f"{t[k]:.1f} ({t[k] / t['plain']:.3f}×)" for k in ("seq", "init", "final")]
        cells += [f"{d[k]:.1f} ({d[k] / t[k]:.2f}×)" if d else "–" for k in ("plain", "seq", "init", "final")]
        print(f"| {dt} / fp32 | {B}×{D}×{L}, {W} | " + " | ".join(cells) + f" | {t_copy:.1f} |", flush=True)
        del x, src, dst


if __name__ == "__main__":
    main()
