"""Where the dense feature kernel's time goes (causal_conv1d_fwd_dense_features.cu), by varying one thing at a time:
seq_idx on contiguous bf16 8×5120×2048 W = 4 with 1, 4 and 16 runs per row (1 run: only each row's first vector is
masked); vLLM prefill (bf16 D = 4096) with 64 or 8 sequences over the same tokens and has_initial_state all False,
random or all True (a masked vector at a sequence start reads the pool only when True). GPU µs of one call replayed
from a CUDA graph, L2 flushed, median of 30; plain forward and a copy of x for scale.

  python bench/lab/conv_dense_diag.py
"""
import itertools
import random
import sys
from pathlib import Path

import torch

import aiter_lite

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import graph_time_us  # noqa: E402
from conv_dense_features import seq_ids  # noqa: E402

rng = random.Random(5)
x = torch.randn(8, 5120, 2048, dtype=torch.bfloat16, device="cuda")
w = torch.randn(5120, 4, device="cuda")
bias = torch.randn(5120, device="cuda")
src = torch.empty_like(x)
row = [f"plain {graph_time_us(lambda: aiter_lite.causal_conv1d(x, w, bias, 'silu')):.1f}",
       f"copy {graph_time_us(lambda: src.copy_(x)):.1f}"]
for runs in (1, 4, 16):
    sid = seq_ids(8, 2048, runs, rng)
    row.append(f"seq_idx {runs} runs {graph_time_us(lambda: aiter_lite.causal_conv1d(x, w, bias, 'silu', seq_idx=sid)):.1f}")
print("bf16 8x5120x2048 W=4 contiguous (us): " + "; ".join(row), flush=True)
del x, src
D, total = 4096, 131072
xp = torch.randn(D, total, dtype=torch.bfloat16, device="cuda")
wp = torch.randn(D, 4, dtype=torch.bfloat16, device="cuda")
bp = torch.randn(D, dtype=torch.bfloat16, device="cuda")
pool = torch.randn(256, D, 3, dtype=torch.bfloat16, device="cuda")
dst = torch.empty_like(xp)
row = [f"copy {graph_time_us(lambda: dst.copy_(xp)):.1f}"]
for nseq in (64, 8):
    cuts = sorted(rng.sample(range(1, total), nseq - 1))
    qsl = torch.tensor([0, *cuts, total], dtype=torch.int32, device="cuda")
    idx = torch.tensor(rng.sample(range(256), nseq), dtype=torch.int32, device="cuda")
    for name, has in (("none", [False] * nseq), ("random", [rng.random() < 0.5 for _ in range(nseq)]), ("all", [True] * nseq)):
        h = torch.tensor(has, device="cuda")
        row.append(f"{nseq} seqs init {name} "
                   f"{graph_time_us(lambda: aiter_lite.causal_conv1d_varlen(xp, wp, bp, pool, qsl, idx, h)):.1f}")
print(f"prefill bf16 D={D} tokens={total} W=4 (us): " + "; ".join(row), flush=True)
