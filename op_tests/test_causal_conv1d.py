"""Causal depthwise conv1d: check every kernel variant against float64 and time it.

Examples:
  python op_tests/test_causal_conv1d.py                          # defaults, GPU if there is one
  python op_tests/test_causal_conv1d.py --batch 8 --dim 4096 --seqlen 129,4096 --width 2,4 --dtype bf16
  python op_tests/test_causal_conv1d.py --device cpu --layout channel_last --no_bias
  python op_tests/test_causal_conv1d.py --initial_states --seq_idx 4 --varlen --backward   # the new paths
Prints a markdown table (latency, GB/s, GFLOP/s, relative error, pass) with each variant's deltas
against the first; exits 1 on any mismatch.
"""
from __future__ import annotations

import argparse
import itertools
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import aiter_lite  # noqa: E402
from aiter_lite.ops import (causal_conv1d_ref, causal_conv1d_update_ref, causal_conv1d_varlen_ref,  # noqa: E402
                            causal_conv1d_varlen_states_ref)
from aiter_lite.testing import (DTYPE_NAMES, TOLERANCE, Row, bench, dtype_list, describe_device, int_list,  # noqa: E402
                                pick_device, poisoned_like, random_normal, rel_error, report)

GPU_VARIANTS = "naive,shared,vectorized"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", type=int_list, default=[4], help="comma-separated list (default 4)")
    p.add_argument("--dim", type=int_list, default=[512], help="comma-separated list (default 512)")
    p.add_argument("--seqlen", type=int_list, default=[2048], help="comma-separated list (default 2048)")
    p.add_argument("--width", type=int_list, default=[4], help="comma-separated list (default 4)")
    p.add_argument("--dtype", type=dtype_list, default=dtype_list("fp16,bf16,fp32"),
                   help="comma-separated: fp16,bf16,fp32 (or torch names: float16, bfloat16, float32, half, float)")
    p.add_argument("--use_silu", dest="use_silu", action="store_true", default=True, help="SiLU on (default)")
    p.add_argument("--no_silu", dest="use_silu", action="store_false", help="no activation")
    p.add_argument("--no_bias", action="store_true", help="no bias")
    p.add_argument("--layout", choices=("contiguous", "channel_last", "strided"), default="contiguous")
    p.add_argument("--variants", default=None,
                   help=f"comma-separated kernel variants (default: {GPU_VARIANTS} on GPU, auto on CPU)")
    p.add_argument("--no_torch", action="store_true", help="skip the torch F.conv1d baseline row")
    p.add_argument("--update", action="store_true", help="also check and time the decode-step update")
    p.add_argument("--initial_states", action="store_true",
                   help="also time the forward with initial states and returned final states beside the plain one")
    p.add_argument("--seq_idx", type=int, default=0, metavar="N",
                   help="also time the forward on N packed sequences per row (seq_idx) beside the plain one")
    p.add_argument("--varlen", action="store_true",
                   help="also time serving prefill (causal_conv1d_varlen: batch sequences of random lengths packed "
                        "into [dim, batch*seqlen], a state pool) and causal_conv1d_varlen_states")
    p.add_argument("--backward", action="store_true",
                   help="also time the backward (autograd.grad of a stored forward) and forward+backward")
    p.add_argument("--device", default="auto", help="auto (GPU if available), cpu, cuda, cuda:1 ...")
    p.add_argument("--check_only", action="store_true", help="check correctness, skip timing (sanitizer runs)")
    p.add_argument("--json", type=Path, help="write the rows as JSON here")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def make_x(batch, dim, seqlen, dtype, device, layout):
    if layout == "channel_last":  # stored [B, L, D], viewed as [B, D, L]
        return random_normal((batch, seqlen, dim), dtype, device).transpose(1, 2)
    if layout == "strided":  # a slice of a wider tensor: no unit strides to rely on
        return random_normal((batch, dim, 2 * seqlen + 1), dtype, device)[:, :, 1::2]
    return random_normal((batch, dim, seqlen), dtype, device)


def torch_conv(x, weight, bias, use_silu):
    out = F.conv1d(x, weight.unsqueeze(1), bias, padding=weight.shape[1] - 1, groups=x.shape[1])[..., : x.shape[-1]]
    return F.silu(out) if use_silu else out


def run_forward(args, device, variants) -> list[Row]:
    rows = []
    for batch, dim, seqlen, width, dtype in itertools.product(args.batch, args.dim, args.seqlen, args.width,
                                                              args.dtype):
        x = make_x(batch, dim, seqlen, dtype, device, args.layout)
        weight = random_normal((dim, width), dtype, device)
        bias = None if args.no_bias else random_normal((dim,), dtype, device)
        ref = causal_conv1d_ref(x, weight, bias, "silu" if args.use_silu else None)
        shape = f"{batch}x{dim}x{seqlen} w{width}" + ("" if args.layout == "contiguous" else f" {args.layout}")
        nbytes = 2 * x.numel() * x.element_size()
        flops = 2 * width * x.numel()
        impls = [(v, (lambda v=v: aiter_lite.causal_conv1d_fwd(out, x, weight, bias, args.use_silu, variant=v)))
                 for v in variants]
        impls += feature_impls(args, x, weight, bias, lambda: out)
        if not args.no_torch:
            impls.append(("torch F.conv1d", lambda: out.copy_(torch_conv(x, weight, bias, args.use_silu))))
        for name, fn, *own_ref in impls:
            out = poisoned_like(x)
            fn()
            err = rel_error(out, own_ref[0] if own_ref else ref)
            t = {"us": float("nan")} if args.check_only else bench(fn, device)
            rows.append(Row(shape, DTYPE_NAMES[dtype], name, t["us"], nbytes / t["us"] / 1e3, flops / t["us"] / 1e3,
                            err, err <= TOLERANCE[dtype]))
    return rows


def packed_seq_idx(batch, seqlen, n, device):
    """n packed sequences per row, of nearly equal lengths."""
    return (torch.arange(seqlen, device=device) * n // max(seqlen, 1)).to(torch.int32).expand(batch, seqlen).contiguous()


def feature_impls(args, x, weight, bias, current_out):
    """(name, fn) rows timed beside the plain forward: with initial+final states, with seq_idx. Each writes
    its output into current_out() (a poisoned tensor the caller then checks against the float64 reference)."""
    act = "silu" if args.use_silu else None
    batch, dim, seqlen = x.shape
    impls = []
    if args.initial_states:
        init = random_normal((batch, dim, weight.shape[1] - 1), x.dtype, x.device)
        ref = causal_conv1d_ref(x, weight, bias, act, initial_states=init)
        fin = torch.empty_like(init)

        def with_states():
            res, _ = aiter_lite.causal_conv1d(x, weight, bias, act, initial_states=init, return_final_states=True,
                                              final_states_out=fin)
            current_out().copy_(res)
        impls.append(("+initial/final states", with_states, ref))
    if args.seq_idx:
        seq_idx = packed_seq_idx(batch, seqlen, args.seq_idx, x.device)
        ref = causal_conv1d_ref(x, weight, bias, act, seq_idx=seq_idx)
        impls.append((f"+seq_idx ({args.seq_idx}/row)",
                      lambda: current_out().copy_(aiter_lite.causal_conv1d(x, weight, bias, act, seq_idx=seq_idx)),
                      ref))
    return impls


def run_varlen(args, device) -> list[Row]:
    """Serving prefill: `batch` sequences of random lengths (mean seqlen) packed as [dim, total] (in --layout:
    channel_last is the [dim, total] view of [total, dim] storage that vLLM's Mamba2 mixer passes), a pool of
    2*batch slots (every other one named), half of them starting from their slot; beside it the plain
    forward of the same [1, dim, total] tokens, and the states of the packed sequences."""
    rows = []
    gen = torch.Generator().manual_seed(args.seed)
    for batch, dim, seqlen, width, dtype in itertools.product(args.batch, args.dim, args.seqlen, args.width,
                                                              args.dtype):
        lengths = torch.randint(1, 2 * seqlen, (batch,), generator=gen)
        total = int(lengths.sum())
        qsl = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)]).to(torch.int32).to(device)
        x = make_x(1, dim, total, dtype, device, args.layout)[0]
        weight = random_normal((dim, width), dtype, device)
        bias = None if args.no_bias else random_normal((dim,), dtype, device)
        pool = random_normal((2 * batch, dim, width - 1), dtype, device)
        idx = (torch.arange(batch, dtype=torch.int32) * 2).to(device)
        has = (torch.arange(batch) % 2 == 0).to(device)
        act = "silu" if args.use_silu else None
        ref_pool = pool.cpu().clone()
        ref = causal_conv1d_varlen_ref(x.cpu(), weight.cpu(), None if bias is None else bias.cpu(), ref_pool,
                                       qsl.cpu(), idx.cpu(), has.cpu(), act)
        shape = f"varlen {batch} seqs x{dim} ({total} tokens) w{width}" + (
            "" if args.layout == "contiguous" else f" {args.layout}")
        state_bytes = 2 * batch * dim * (width - 1) * x.element_size()
        nbytes = 2 * x.numel() * x.element_size() + state_bytes
        flops = 2 * width * x.numel()
        work_pool = pool.clone()
        out = aiter_lite.causal_conv1d_varlen(x, weight, bias, work_pool, qsl, idx, has, act)
        err = max(rel_error(out.cpu(), ref), rel_error(work_pool.cpu(), ref_pool))
        x3 = x.unsqueeze(0)
        plain_ref = causal_conv1d_ref(x3, weight, bias, act)
        plain_out = poisoned_like(x3)
        cases = [("plain forward (same tokens)", lambda: aiter_lite.causal_conv1d_fwd(plain_out, x3, weight, bias,
                                                                                       args.use_silu), None),
                 ("causal_conv1d_varlen", lambda: aiter_lite.causal_conv1d_varlen(x, weight, bias, work_pool, qsl, idx,
                                                                                  has, act), err)]
        for name, fn, e in cases:
            fn()
            if e is None:
                e = rel_error(plain_out, plain_ref)
            t = {"us": float("nan")} if args.check_only else bench(fn, device)
            rows.append(Row(shape, DTYPE_NAMES[dtype], name, t["us"], nbytes / t["us"] / 1e3, flops / t["us"] / 1e3,
                            e, e <= TOLERANCE[dtype]))
        xt = x.T  # [total, dim] view, as causal-conv1d's varlen states takes it
        states = aiter_lite.causal_conv1d_varlen_states(xt, qsl, width - 1)
        e = rel_error(states.cpu(), causal_conv1d_varlen_states_ref(xt.cpu(), qsl.cpu(), width - 1))
        t = ({"us": float("nan")} if args.check_only else
             bench(lambda: aiter_lite.causal_conv1d_varlen_states(xt, qsl, width - 1), device))
        sbytes = 2 * states.numel() * states.element_size()
        rows.append(Row(f"varlen_states {batch} seqs x{dim} len{width - 1}", DTYPE_NAMES[dtype], "varlen_states",
                        t["us"], sbytes / t["us"] / 1e3, 0.0, e, e <= TOLERANCE[dtype]))
    return rows


def run_backward(args, device) -> list[Row]:
    """Forward, backward alone (autograd.grad of a stored graph) and forward+backward, same columns: bytes =
    x read + out written (forward), x + dout read + dx written (backward), their sum (fwd+bwd)."""
    rows = []
    for batch, dim, seqlen, width, dtype in itertools.product(args.batch, args.dim, args.seqlen, args.width,
                                                              args.dtype):
        x = make_x(batch, dim, seqlen, dtype, device, args.layout).requires_grad_()
        weight = random_normal((dim, width), dtype, device).requires_grad_()
        bias = None if args.no_bias else random_normal((dim,), dtype, device).requires_grad_()
        act = "silu" if args.use_silu else None
        params = [t for t in (x, weight, bias) if t is not None]
        dout = random_normal(tuple(x.shape), dtype, device)
        ref_params = [t.detach().double().requires_grad_() for t in params]
        ref_out = causal_conv1d_ref(ref_params[0], ref_params[1], ref_params[2] if bias is not None else None, act)
        ref_grads = torch.autograd.grad(ref_out, ref_params, dout.double())
        out = aiter_lite.causal_conv1d(x, weight, bias, act)
        grads = torch.autograd.grad(out, params, dout, retain_graph=True)
        err = max(rel_error(g, r) for g, r in zip(grads, ref_grads))
        ok = err <= 2 * TOLERANCE[dtype]
        shape = f"{batch}x{dim}x{seqlen} w{width}" + ("" if args.layout == "contiguous" else f" {args.layout}")
        elem = x.element_size()
        fwd_bytes, bwd_bytes = 2 * x.numel() * elem, 3 * x.numel() * elem
        flops = 2 * width * x.numel()
        cases = [("forward", lambda: aiter_lite.causal_conv1d(x, weight, bias, act), fwd_bytes, flops),
                 ("backward", lambda: torch.autograd.grad(out, params, dout, retain_graph=True), bwd_bytes, 2 * flops),
                 ("fwd+bwd", lambda: torch.autograd.grad(aiter_lite.causal_conv1d(x, weight, bias, act), params, dout),
                  fwd_bytes + bwd_bytes, 3 * flops)]
        for name, fn, nbytes, fl in cases:
            t = {"us": float("nan")} if args.check_only else bench(fn, device)
            rows.append(Row(shape + " train", DTYPE_NAMES[dtype], name, t["us"], nbytes / t["us"] / 1e3,
                            fl / t["us"] / 1e3, err, ok))
    return rows


def run_update(args, device) -> list[Row]:
    rows = []
    for batch, dim, width, dtype in itertools.product(args.batch, args.dim, args.width, args.dtype):
        x = random_normal((batch, dim), dtype, device)
        state = random_normal((batch, dim, width - 1), dtype, device)
        weight = random_normal((dim, width), dtype, device)
        bias = None if args.no_bias else random_normal((dim,), dtype, device)
        act = "silu" if args.use_silu else None
        ref_state = state.double().clone()
        ref = causal_conv1d_update_ref(x, ref_state, weight, bias, act)
        check_state = state.clone()
        out = aiter_lite.causal_conv1d_update(x, check_state, weight, bias, act)
        err = max(rel_error(out, ref), rel_error(check_state, ref_state))
        t = ({"us": float("nan")} if args.check_only else
             bench(lambda: aiter_lite.causal_conv1d_update(x, state, weight, bias, act), device))
        nbytes = (2 * x.numel() + 2 * state.numel()) * x.element_size()
        rows.append(Row(f"update {batch}x{dim} w{width}", DTYPE_NAMES[dtype], "auto", t["us"],
                        nbytes / t["us"] / 1e3, 2 * width * x.numel() / t["us"] / 1e3, err, err <= TOLERANCE[dtype]))
    return rows


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")  # shows JIT build progress
    torch.manual_seed(args.seed)
    device = pick_device(args.device)
    variants = (args.variants or (GPU_VARIANTS if device.type == "cuda" else "auto")).split(",")
    print(describe_device(device))
    rows = run_forward(args, device, variants)
    if args.update:
        rows += run_update(args, device)
    if args.varlen:
        rows += run_varlen(args, device)
    if args.backward:
        rows += run_backward(args, device)
    return report(rows, args.json)


if __name__ == "__main__":
    sys.exit(main())
