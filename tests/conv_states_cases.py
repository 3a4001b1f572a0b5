"""Shared by the CPU and GPU tests of the causal conv1d states, packed sequences, serving prefill and
backward: input makers and the comparisons against the float64 references (aiter_lite.ops.*_ref)."""
from __future__ import annotations

import torch

import aiter_lite
from aiter_lite.ops import causal_conv1d_ref, causal_conv1d_varlen_ref
from aiter_lite.testing import TOLERANCE, poisoned_like, random_normal, rel_error

LAYOUTS = ["contiguous", "channel_last", "strided"]


def tap_by_tap_reference(x, w, bias, init=None, silu=False):
    """out[t] = bias + sum_j w[j] * cat(init, x)[t + j] in float64, tap by tap: no tap multiplies a value its window
    does not reach, so an inf in x (or in init) shows only where the filter reaches it (a zero-padded conv would
    turn it into NaN by 0 * inf). init: [B, D, W - 1] states, None for zeros; silu: apply SiLU."""
    x, w, bias = x.double(), w.double(), bias.double()
    width, length = w.shape[1], x.shape[-1]
    if init is None:
        init = x.new_zeros(x.shape[0], x.shape[1], width - 1)
    xx = torch.cat([init.double(), x], dim=-1)
    pre = bias[None, :, None].expand(x.shape[0], -1, length)
    for j in range(width):
        pre = pre + w[None, :, j, None] * xx[..., j:j + length]
    return torch.nn.functional.silu(pre) if silu else pre


def make_x(b, d, length, dtype, device, layout):
    """x as [b, d, length] stored contiguous, channel-last ([b, length, d] transposed) or strided (a slice)."""
    if layout == "channel_last":
        return random_normal((b, length, d), dtype, device).transpose(1, 2)
    if layout == "strided":
        return random_normal((b, d + 3, 2 * length), dtype, device)[:, 1:d + 1, ::2]
    return random_normal((b, d, length), dtype, device)


def make_states(b, d, width, dtype, device, layout):
    """[b, d, width-1] states, channel-last storage when the layout is."""
    if layout == "channel_last":
        return random_normal((b, width - 1, d), dtype, device).transpose(1, 2)
    return random_normal((b, d, width - 1), dtype, device)


def packed_seq_idx(batch, length, device, segments=3, generator=None):
    """int32 [batch, length], non-decreasing, random boundaries, a different first index per row (and a
    single-token segment somewhere when length allows)."""
    rows = []
    for b in range(batch):
        cuts = sorted(torch.randint(1, max(length, 2), (segments - 1,), generator=generator).tolist())
        row = torch.zeros(length, dtype=torch.int32)
        for c in cuts:
            row[c:] += 1
        rows.append(row + 5 * b)
    return torch.stack(rows).to(device)


def check_forward(x, weight, bias, activation, *, initial_states=None, seq_idx=None, final_states=True,
                  final_states_out=None):
    """aiter_lite.causal_conv1d with these arguments against the reference (poisoned outputs)."""
    tol = TOLERANCE[x.dtype]
    if final_states_out is not None:
        final_states_out.fill_(float("nan"))
    res = aiter_lite.causal_conv1d(x, weight, bias, activation, initial_states=initial_states,
                                   return_final_states=final_states, final_states_out=final_states_out,
                                   seq_idx=seq_idx)
    ref = causal_conv1d_ref(x, weight, bias, activation, initial_states=initial_states,
                            return_final_states=final_states, seq_idx=seq_idx)
    if not final_states:
        assert rel_error(res, ref) <= tol
        return res
    out, fin = res
    assert rel_error(out, ref[0]) <= tol
    assert fin.shape == ref[1].shape and fin.dtype == x.dtype
    torch.testing.assert_close(fin.double(), ref[1], rtol=0, atol=0)  # a copy of inputs: exact
    if final_states_out is not None:
        assert fin is final_states_out
    return res


def check_varlen(x, weight, bias, pool, query_start_loc, cache_indices, has_initial_state, pad_slot_id=-1,
                 activation="silu"):
    """causal_conv1d_varlen against its reference: outputs of non-padded sequences, every slot of the pool
    (named slots updated, the rest bit-for-bit unchanged)."""
    ref_pool = pool.clone()
    ref = causal_conv1d_varlen_ref(x, weight, bias, ref_pool, query_start_loc, cache_indices, has_initial_state,
                                   activation, pad_slot_id)
    out = aiter_lite.causal_conv1d_varlen(x, weight, bias, pool, query_start_loc, cache_indices, has_initial_state,
                                          activation, pad_slot_id)
    assert out.shape == x.shape and out.stride() == torch.empty_like(x).stride()
    bounds = query_start_loc.tolist()
    for b, (s, e) in enumerate(zip(bounds[:-1], bounds[1:])):
        slot = int(cache_indices[b]) if cache_indices is not None else b
        if slot == pad_slot_id or e == s:
            continue
        assert rel_error(out[:, s:e], ref[:, s:e]) <= TOLERANCE[x.dtype], b
    torch.testing.assert_close(pool, ref_pool, rtol=0, atol=0)
    return out


def check_deterministic_backward(x, w, b, dout, runs, tol, seq_idx=None):
    """runs backwards under torch.use_deterministic_algorithms(True) are bitwise equal, and within tol of the
    default mode's gradients."""
    def backward():
        return torch.autograd.grad(aiter_lite.causal_conv1d(x, w, b, "silu", seq_idx=seq_idx), [x, w, b], dout)
    prev = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        grads = [backward() for _ in range(runs)]
    finally:
        torch.use_deterministic_algorithms(prev)
    default = backward()
    for run in grads[1:]:
        for a, c in zip(run, grads[0]):
            assert torch.equal(a, c)
    for a, c in zip(default, grads[0]):
        assert rel_error(a, c.double()) <= tol


__all__ = ["check_deterministic_backward", "LAYOUTS", "make_x", "make_states", "packed_seq_idx", "check_forward", "check_varlen", "poisoned_like",
           "random_normal", "rel_error", "TOLERANCE"]
