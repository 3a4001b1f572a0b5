"""Target for ncu: the dense feature kernel (causal_conv1d_fwd_dense_features.cu) on contiguous bf16 8×5120×2048
W = 4 with seq_idx (4 runs per row), then vLLM-style prefill (bf16 D = 4096, 64 sequences, pool of 256 slots);
each called twice (profile with --launch-skip 1 per kernel or all four).

  ncu -k regex:dense_features --metrics ... python bench/lab/ncu_conv_dense.py
"""
import itertools
import random
import sys
from pathlib import Path

import torch

import aiter_lite

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conv_dense_features import seq_ids  # noqa: E402

rng = random.Random(5)
x = torch.randn(8, 5120, 2048, dtype=torch.bfloat16, device="cuda")
w = torch.randn(5120, 4, device="cuda")
bias = torch.randn(5120, device="cuda")
sid = seq_ids(8, 2048, 4, rng)
for _ in range(2):
    aiter_lite.causal_conv1d(x, w, bias, "silu", seq_idx=sid)
lengths = [rng.randint(1, 4096) for _ in range(64)]
total = sum(lengths)
qsl = torch.tensor([0, *itertools.accumulate(lengths)], dtype=torch.int32, device="cuda")
D = 4096
xp = torch.randn(D, total, dtype=torch.bfloat16, device="cuda")
wp = torch.randn(D, 4, dtype=torch.bfloat16, device="cuda")
bp = torch.randn(D, dtype=torch.bfloat16, device="cuda")
pool = torch.randn(256, D, 3, dtype=torch.bfloat16, device="cuda")
idx = torch.tensor(rng.sample(range(256), 64), dtype=torch.int32, device="cuda")
has = torch.tensor([rng.random() < 0.5 for _ in range(64)], device="cuda")
for _ in range(2):
    aiter_lite.causal_conv1d_varlen(xp, wp, bp, pool, qsl, idx, has)
torch.cuda.synchronize()
print("done")
