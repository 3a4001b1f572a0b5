"""The dense forward with states / seq_idx / varlen prefill (causal_conv1d_fwd_dense_features.cu) through the
real API: a correctness sweep against the float64 references (NaN-poisoned outputs, fresh random data), then
GPU times replayed from CUDA graphs (L2 flushed before each replay, medians) against the plain forward of the
same shape and a same-size device copy.

  python bench/lab/conv_dense_features.py [--quick] [--no-time] [--no-check] [--cl-only]
"""
from __future__ import annotations

import argparse
import itertools
import random
import sys
from pathlib import Path

import torch

import aiter_lite
from aiter_lite.ops import causal_conv1d_ref, causal_conv1d_varlen_ref
from aiter_lite.testing import TOLERANCE, rel_error

DEV = torch.device("cuda")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/
from common import graph_time_us as _graph_time_us  # noqa: E402


def graph_time_us(fn, reps=40) -> float:
    return _graph_time_us(fn, reps)


def copy_us(nbytes: int) -> float:
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=DEV).normal_()
    dst = torch.empty_like(src)
    return graph_time_us(lambda: dst.copy_(src))


def seq_ids(batch, length, runs, rng, padding=False):
    """int32 [batch, length]: `runs` runs per row at random cuts (single-token runs likely when short); with
    padding, a leading run of -1 (padding tokens)."""
    rows = []
    for b in range(batch):
        cuts = sorted(rng.sample(range(1, length), min(runs - 1, length - 1))) if length > 1 else []
        row = torch.zeros(length, dtype=torch.int32)
        for c in cuts:
            row[c:] += 1
        row += 3 * b
        if padding and length > 4:
            row[:rng.randint(1, length // 3)] = -1
        rows.append(row)
    return torch.stack(rows).to(DEV)


def poison_allocator(x):
    """Frees NaN-filled blocks of x's size (and a small one), so the outputs the op allocates next start as NaN:
    an element the kernel does not write fails the comparison."""
    a = torch.full_like(x, float("nan"))
    b = torch.full((4096,), float("nan"), dtype=x.dtype, device=x.device)
    del a, b


def check_case(dtype, wdtype, B, D, L, W, feature, rng):
    cl = feature.startswith("cl")  # channel-last x and states (the channel-last kernels; cl16: D = 40, whose
    # rows of channels sit on 16-byte boundaries: the staged kernel)
    x = torch.randn(B, L, D, dtype=dtype, device=DEV).transpose(1, 2) if cl else \
        torch.randn(B, D, L, dtype=dtype, device=DEV)
    w = torch.randn(D, W, dtype=wdtype, device=DEV)
    bias = torch.randn(D, dtype=wdtype, device=DEV)
    init = None
    if "init" in feature:
        init = torch.randn(B, W - 1, D, dtype=dtype, device=DEV).transpose(1, 2) if cl else \
            torch.randn(B, D, W - 1, dtype=dtype, device=DEV)
    sid = seq_ids(B, L, rng.choice([2, 3, 7]), rng, padding="pad" in feature) if "seq" in feature else None
    want_final = "final" in feature
    init_arg, final_out = init, None
    if "inplace" in feature:  # the final states written over the initial ones
        init_arg = final_out = init.clone()
    ref = causal_conv1d_ref(x, w, bias, "silu", initial_states=init, return_final_states=want_final, seq_idx=sid)
    poison_allocator(x)
    res = aiter_lite.causal_conv1d(x, w, bias, "silu", initial_states=init_arg, return_final_states=want_final,
                                   final_states_out=final_out, seq_idx=sid)
    out, fin = (res if want_final else (res, None))
    ok = rel_error(out, ref[0] if want_final else ref) <= TOLERANCE[dtype]
    if want_final:
        ok = ok and fin.shape == ref[1].shape and torch.equal(fin.double(), ref[1])
    return ok


def check_prefill(dtype, D, lengths, W, slots, rng, state_len=None):
    state_len = state_len or W - 1
    total = sum(lengths)
    # dense [D, tokens] (the dense kernel), sometimes a padded-row view (the per-output kernel)
    x = torch.randn(D, total + 5, dtype=dtype, device=DEV)[:, :total] if rng.random() < 0.25 else \
        torch.randn(D, total, dtype=dtype, device=DEV)
    w = torch.randn(D, W, dtype=dtype, device=DEV)
    bias = torch.randn(D, dtype=dtype, device=DEV)
    pool = torch.randn(slots, D, state_len, dtype=dtype, device=DEV)
    qsl = torch.tensor([0, *itertools.accumulate(lengths)], dtype=torch.int32, device=DEV)
    idx = torch.tensor(rng.sample(range(slots), len(lengths)), dtype=torch.int32, device=DEV)
    idx[rng.randrange(len(lengths))] = -1  # one padded sequence
    has = torch.tensor([rng.random() < 0.5 for _ in lengths], device=DEV)
    ref_pool = pool.cpu().clone()
    ref = causal_conv1d_varlen_ref(x.cpu(), w.cpu(), bias.cpu(), ref_pool, qsl.cpu(), idx.cpu(), has.cpu())
    poison_allocator(x)
    out = aiter_lite.causal_conv1d_varlen(x, w, bias, pool, qsl, idx, has)
    ok = torch.equal(pool.cpu(), ref_pool)
    for b, (s, e) in enumerate(zip(qsl.tolist()[:-1], qsl.tolist()[1:])):
        if int(idx[b]) >= 0 and e > s:
            ok = ok and rel_error(out[:, s:e].cpu(), ref[:, s:e]) <= TOLERANCE[dtype]
    return ok


def run_checks(quick: bool) -> int:
    rng = random.Random(3)
    torch.manual_seed(3)
    fails = n = 0
    features = ["init", "init_final", "final", "seq", "seq_pad", "seq_init_final", "init_final_inplace",
                "cl_init_final", "cl_seq_init_final", "cl_final", "cl_seq_pad", "cl16_init_final", "cl16_seq_init_final",
                "cl16_seq_pad"]
    lens = [1, 2, 3, 8, 9, 129, 1000] if quick else [1, 2, 3, 7, 8, 9, 64, 129, 777, 1000, 2048, 3001]
    widths = [2, 4] if quick else [1, 2, 3, 4, 5, 7, 8]
    dtypes = [(torch.bfloat16, torch.float32)] if quick else \
        [(torch.float32, torch.float32), (torch.float16, torch.float16), (torch.bfloat16, torch.float32)]
    for (dtype, wdtype), L, W, feat in itertools.product(dtypes, lens, widths, features):
        B, D = (2, 5) if L > 500 else (3, 7)
        if feat.startswith("cl16"):
            D = 40
        n += 1
        if not check_case(dtype, wdtype, B, D, L, W, feat, rng):
            fails += 1
            print(f"FAIL {dtype} {wdtype} B={B} D={D} L={L} W={W} {feat}", flush=True)
    for dtype, W in itertools.product([torch.bfloat16, torch.float32] if not quick else [torch.float16], [2, 4, 5]):
        for lengths in ([0, 1, 2, 5, 1, 0, 300, 7], [rng.randint(1, 1500) for _ in range(9)] + [0, 1]):
            for state_len in (None, W + 2):
                n += 1
                if not check_prefill(dtype, 24, lengths, W, 16, rng, state_len):
                    fails += 1
                    print(f"FAIL prefill {dtype} W={W} lengths={lengths} state_len={state_len}", flush=True)
    print(f"dense features checks: {n} cases, {fails} failed", flush=True)
    return fails


def time_features(cl_only=False):
    rng = random.Random(5)
    shapes = [(torch.bfloat16, 8, 5120, 2048, 4), (torch.bfloat16, 4, 4096, 4096, 4), (torch.bfloat16, 8, 4096, 4096, 2),
              (torch.float16, 8, 5120, 2048, 4), (torch.float32, 8, 5120, 2048, 4), (torch.float32, 4, 4096, 4096, 4),
              (torch.float16, 8, 4096, 4096, 2), (torch.float32, 8, 4096, 4096, 2), (torch.bfloat16, 8, 5120, 2047, 4),
              (torch.bfloat16, 3, 1536, 777, 3), (torch.bfloat16, 8, 4096, 4096, 3), (torch.bfloat16, 4, 512, 2048, 4),
              (torch.bfloat16, 16, 2048, 129, 4)]
    cl_shapes = [(torch.bfloat16, 8, 5120, 2048, 4), (torch.bfloat16, 4, 4096, 4096, 4), (torch.float32, 8, 5120, 2048, 4),
                 (torch.bfloat16, 4, 512, 2048, 4), (torch.bfloat16, 3, 1536, 777, 3)]
    print("| x / w | B×D×L, W | layout | plain µs | +seq_idx (4/row) | +init | +init+final | copy µs |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    cases = [] if cl_only else [(s, "contiguous") for s in shapes]
    for (dtype, B, D, L, W), layout in cases + [(s, "channel-last") for s in cl_shapes]:
        if layout == "contiguous":
            x = torch.randn(B, D, L, dtype=dtype, device=DEV)
            init = torch.randn(B, D, W - 1, dtype=dtype, device=DEV)
        else:
            x = torch.randn(B, L, D, dtype=dtype, device=DEV).transpose(1, 2)
            init = torch.randn(B, W - 1, D, dtype=dtype, device=DEV).transpose(1, 2)
        w = torch.randn(D, W, dtype=torch.float32, device=DEV)
        bias = torch.randn(D, dtype=torch.float32, device=DEV)
        sid = seq_ids(B, L, 4, rng)
        fin = torch.empty_like(init)
        t_plain = graph_time_us(lambda: aiter_lite.causal_conv1d(x, w, bias, "silu"))
        t_sid = graph_time_us(lambda: aiter_lite.causal_conv1d(x, w, bias, "silu", seq_idx=sid))
        t_init = graph_time_us(lambda: aiter_lite.causal_conv1d(x, w, bias, "silu", initial_states=init))
        t_fin = graph_time_us(lambda: aiter_lite.causal_conv1d(x, w, bias, "silu", initial_states=init,
                                                               return_final_states=True, final_states_out=fin))
        t_copy = copy_us(x.numel() * x.element_size())
        name = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}[dtype]
        print(f"| {name} / fp32 | {B}×{D}×{L}, {W} | {layout} | {t_plain:.1f} | {t_sid:.1f} ({t_sid / t_plain:.3f}×) | "
              f"{t_init:.1f} ({t_init / t_plain:.3f}×) | {t_fin:.1f} ({t_fin / t_plain:.3f}×) | {t_copy:.1f} |",
              flush=True)
        del x


def time_prefill():
    rng = random.Random(11)
    lengths = [rng.randint(1, 4096) for _ in range(64)]
    total = sum(lengths)
    qsl = torch.tensor([0, *itertools.accumulate(lengths)], dtype=torch.int32, device=DEV)
    print(f"\nprefill: 64 sequences, {total} tokens, W = 4, pool of 256 slots, x [D, tokens] contiguous")
    print("| x | D | µs | copy µs (x bytes) | TB/s | vs copy |")
    print("| --- | --- | --- | --- | --- | --- |")
    for dtype, D in itertools.product([torch.bfloat16, torch.float16], [4096, 8192]):
        W = 4
        x = torch.randn(D, total, dtype=dtype, device=DEV)
        w = torch.randn(D, W, dtype=dtype, device=DEV)
        bias = torch.randn(D, dtype=dtype, device=DEV)
        pool = torch.randn(256, D, W - 1, dtype=dtype, device=DEV)
        idx = torch.tensor(rng.sample(range(256), 64), dtype=torch.int32, device=DEV)
        has = torch.tensor([rng.random() < 0.5 for _ in range(64)], device=DEV)
        t = graph_time_us(lambda: aiter_lite.causal_conv1d_varlen(x, w, bias, pool, qsl, idx, has))
        nb = 2 * x.numel() * x.element_size() + 2 * 64 * D * (W - 1) * x.element_size()
        t_copy = copy_us(x.numel() * x.element_size())
        copy_bw = 2 * x.numel() * x.element_size() / t_copy
        name = {torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype]
        print(f"| {name} | {D} | {t:.1f} | {t_copy:.1f} | {nb / t / 1e6:.2f} | {nb / t / copy_bw:.3f} |", flush=True)
        del x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-time", action="store_true")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--cl-only", action="store_true", help="time only the channel-last rows (no prefill)")
    args = ap.parse_args()
    fails = 0 if args.no_check else run_checks(args.quick)
    if not args.no_time:
        time_features(args.cl_only)
        if not args.cl_only:
            time_prefill()
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
