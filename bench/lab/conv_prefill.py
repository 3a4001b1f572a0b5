"""Serving prefill (`causal_conv1d_varlen`, issue 19's target: 0.9 of a same-size copy) in both layouts vLLM
passes: x `[D, tokens]` contiguous (the dense feature kernel) and x a `[D, tokens]` view of `[tokens, D]`
storage (channel-last). 64 sequences of random length 1-4096 (the issue's case), W = 4, a pool of 1024 slots,
has_initial_state random; also 8 long sequences and 512 short ones (1-256 tokens) over similar token counts.
Bytes = x read + out written + the sequences' states read and written; copy = a device copy of as many bytes
(half read, half written) in the same process. GPU µs of one call replayed from a CUDA graph, L2 flushed,
median of --reps.

  python bench/lab/conv_prefill.py LABEL [--reps 30]
"""
from __future__ import annotations

import argparse
import itertools
import random
import sys
from pathlib import Path

import torch

import aiter_lite

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/
from common import graph_time_us  # noqa: E402

DEV = torch.device("cuda")
NAMES = {torch.bfloat16: "bf16", torch.float16: "fp16"}


def copy_us(nbytes: int, reps: int) -> float:
    src = torch.empty(nbytes // 8, dtype=torch.float32, device=DEV).normal_()
    dst = torch.empty_like(src)
    return graph_time_us(lambda: dst.copy_(src), reps)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("label")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--profile", action="store_true",
                    help="two eager calls of the [D, tokens] cases with 64 and 8 sequences (bf16, D = 4096), for ncu; no timing")
    args = ap.parse_args()
    rng = random.Random(11)
    cases = {"64 seqs 1-4096": [rng.randint(1, 4096) for _ in range(64)],
             "8 seqs": [rng.randint(8192, 24576) for _ in range(8)],
             "512 seqs 1-256": [rng.randint(1, 256) for _ in range(512)]}
    W, slots = 4, 1024
    print(f"| label | case | layout | x | D | tokens | µs | copy µs | vs copy |", flush=True)
    for (case, lengths), dtype, D, layout in itertools.product(cases.items(), [torch.bfloat16, torch.float16],
                                                                [4096, 8192], ["[D, tokens]", "channel-last"]):
        if case != "64 seqs 1-4096" and D != 4096:
            continue
        total, n = sum(lengths), len(lengths)
        qsl = torch.tensor([0, *itertools.accumulate(lengths)], dtype=torch.int32, device=DEV)
        x = (torch.randn(D, total, dtype=dtype, device=DEV) if layout == "[D, tokens]"
             else torch.randn(total, D, dtype=dtype, device=DEV).t())
        w = torch.randn(D, W, dtype=dtype, device=DEV)
        bias = torch.randn(D, dtype=dtype, device=DEV)
        pool = torch.randn(slots, D, W - 1, dtype=dtype, device=DEV)
        idx = torch.tensor(rng.sample(range(slots), n), dtype=torch.int32, device=DEV)
        has = torch.tensor([rng.random() < 0.5 for _ in range(n)], device=DEV)
        if args.profile:
            if case != "512 seqs 1-256" and dtype == torch.bfloat16 and D == 4096 and layout == "[D, tokens]":
                for _ in range(2):
                    aiter_lite.causal_conv1d_varlen(x, w, bias, pool, qsl, idx, has)
                torch.cuda.synchronize()
            continue
        t = graph_time_us(lambda: aiter_lite.causal_conv1d_varlen(x, w, bias, pool, qsl, idx, has), args.reps)
        nb = 2 * x.numel() * x.element_size() + 2 * n * D * (W - 1) * x.element_size()
        t_copy = copy_us(nb, args.reps)
        print(f"| {args.label} | {case} | {layout} | {NAMES[dtype]} | {D} | {total} | {t:.1f} | {t_copy:.1f} | "
              f"{t_copy / t:.3f} |", flush=True)
        del x, pool


if __name__ == "__main__":
    main()
