"""Context-parallel causal conv1d: the forward with its halo exchange, and its autograd backward.

Forward, on each rank:
  1. post the halo exchange (the tokens other ranks need go out, this rank's halos come in);
  2. convolve the whole local chunk with zero initial state, each part and each packed sequence on its
     own (seq_idx): exact everywhere except the first width-1 outputs (the head) of a part that
     continues a sequence from another rank; this is the bulk of the work and overlaps the exchange;
  3. wait for the halos (a stream dependency, no host sync) and recompute each such head with its halo
     as initial state, written straight over the chunk's output (one small launch per halo part).
Backward, on each rank:
  1. the gradient of each halo, from a small backward on its head alone;
  2. post the halo gradients to the ranks that own those tokens; receive those of this rank's tokens;
  3. meanwhile the local backward of the whole chunk, with the halo of a part that starts the chunk as
     its initial state (exact there); a halo part further in (zigzag's back part) gets its head's
     correction from "zero initial state" to "halo" added instead (_head_correction);
  4. add the received gradients into dx.
dweight and dbias are this rank's contributions: the CP group joins the gradient reduction.
"""
from __future__ import annotations

from typing import Optional

import torch

from . import local_op
from .context import CPContext
from .exchange import post_halo, post_halo_grad

_FP32 = torch.float32
_DHALO_ONLY = (False, False, False, True)


def _forward(x, weight, bias, activation, ctx: CPContext):
    """Steps 1-3 of the forward. Returns (out, halos): one [B, D, width-1] halo per halo part."""
    batch = x.shape[0]
    pending = post_halo(x, ctx.routes, ctx.group) if ctx.routes.active else None
    out = local_op.forward(x, weight, bias, activation, seq_idx=ctx.seq_idx(x.device, batch))
    if pending is None:
        return out, []
    halos = pending.wait()
    for (s, n), halo, ids in zip(ctx.heads, halos, ctx.head_seq_idx(x.device, batch)):
        local_op.forward_into(out[..., s:s + n], x[..., s:s + n], weight, bias, activation, initial_states=halo,
                              seq_idx=ids)
    return out, halos


class _CPCausalConv1d(torch.autograd.Function):
    @staticmethod
    def forward(autograd_ctx, x, weight, bias, activation, ctx):
        out, halos = _forward(x, weight, bias, activation, ctx)
        autograd_ctx.cp, autograd_ctx.activation = ctx, activation
        autograd_ctx.save_for_backward(x, weight, bias, *halos)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(autograd_ctx, dout):
        x, weight, bias, *halos = autograd_ctx.saved_tensors
        ctx: CPContext = autograd_ctx.cp
        activation = autograd_ctx.activation
        need = tuple(autograd_ctx.needs_input_grad[:3])
        head_ids = ctx.head_seq_idx(x.device, x.shape[0])
        dhalos, fixes = [], []
        for k, ((s, n), halo, ids) in enumerate(zip(ctx.heads, halos, head_ids)):
            if k == 0 and ctx.lead:  # the local backward below takes this halo as its initial state
                dhalos.append(local_op.backward(x[..., :n], weight, bias, activation, dout[..., :n],
                                                initial_states=halo, seq_idx=ids, need=_DHALO_ONLY)[3])
            else:  # a part further in: what the local backward did with the history it read, undone
                history = None if ctx.packed else _history(x, s, halos[0] if ctx.lead else None, halo.shape[-1])
                dhalo, *fix = _head_correction(x[..., s:s + n], dout[..., s:s + n], weight, bias, halo, history,
                                               ids, activation, need)
                dhalos.append(dhalo.to(x.dtype))
                fixes.append((s, n, fix))
        pending = post_halo_grad(dhalos, ctx.routes, ctx.group, x) if ctx.routes.active else None
        dx, dweight, dbias, _ = local_op.backward(x, weight, bias, activation, dout,
                                                  initial_states=halos[0] if ctx.lead else None,
                                                  seq_idx=ctx.seq_idx(x.device, x.shape[0]), need=need + (False,))
        for s, n, (dx_head, dweight_fix, dbias_fix, dhistory) in fixes:
            if dx is not None:
                dx[..., s:s + n] += dx_head
                if dhistory is not None:  # the history's tokens of this rank (those of halos[0]: not sent)
                    m = min(s, dhistory.shape[-1])
                    dx[..., s - m:s] += dhistory[..., dhistory.shape[-1] - m:]
            if dweight is not None:
                dweight += dweight_fix
            if dbias is not None:
                dbias += dbias_fix
        if pending is not None:
            for start, grad in pending.wait():
                if dx is not None:
                    dx[..., start:start + grad.shape[-1]] += grad
        return dx, dweight, dbias, None, None


def _history(x, s: int, before, size: int) -> torch.Tensor:
    """The `size` tokens the local conv (fixed-length rows: no seq_idx) read before local position s: x's
    tokens before s, after `before` (the local conv's initial state; None: zeros)."""
    if s >= size:
        return x[..., s - size:s]
    before = x.new_zeros((*x.shape[:2], size)) if before is None else before
    return torch.cat([before[..., s:], x[..., :s]], -1)


def _head_correction(head, dhead, weight, bias, halo, history, ids, activation, need):
    """(dhalo, dx_head, dweight_fix, dbias_fix, dhistory), fp32: the halo's gradient, and what to add to the
    local backward's dx (of the head, and of the history: None when it read zeros), dweight and dbias for
    the head's outputs computed with the halo instead of the history the local conv read. One backward call
    on [head; head] with initial states [halo; history] and gradient [dout; -dout]."""
    head, dhead, halo = head.to(_FP32), dhead.to(_FP32), halo.to(_FP32)
    wrong = torch.zeros_like(halo) if history is None else history.to(_FP32)
    dx2, dweight_fix, dbias_fix, dinit = local_op.backward(
        torch.cat([head, head], 0), weight.to(_FP32), None if bias is None else bias.to(_FP32), activation,
        torch.cat([dhead, -dhead], 0), initial_states=torch.cat([halo, wrong], 0),
        seq_idx=None if ids is None else torch.cat([ids, ids], 0), need=need + (True,))
    n = head.shape[0]
    return (dinit[:n], None if dx2 is None else dx2[:n] + dx2[n:], dweight_fix, dbias_fix,
            None if history is None else dinit[n:])


def _check(x, weight, ctx) -> None:
    if not isinstance(ctx, CPContext):
        raise TypeError(f"cp_context must be a CPContext from aiter_lite.distributed.build_cp_context, "
                        f"got {type(ctx).__name__}")
    if not isinstance(x, torch.Tensor) or x.dim() != 3:
        return  # the op names the problem
    if x.shape[-1] != ctx.local_len:
        raise ValueError(f"x has {x.shape[-1]} tokens on rank {ctx.rank} but cp_context was built for "
                         f"local_len={ctx.local_len}; build the context for this batch's split")
    if ctx.packed and x.shape[0] != 1:
        raise ValueError(f"x must be [1, dim, local_len] for packed sequences (cp_context has cu_seqlens), "
                         f"got {tuple(x.shape)}")
    if isinstance(weight, torch.Tensor) and weight.dim() == 2 and weight.shape[1] != ctx.width:
        raise ValueError(f"cp_context was built for width={ctx.width} but weight has width {weight.shape[1]}")
    if not ctx.passthrough:
        if x.is_cuda and not ctx.cuda_exchange:
            raise ValueError(f"x is on {x.device} but cp_context's group backend ({ctx.backend}) cannot exchange "
                             "CUDA tensors (use nccl)")
        if x.is_cpu and not ctx.cpu_exchange:
            raise ValueError(f"x is on the CPU but cp_context's group backend ({ctx.backend}) cannot exchange CPU "
                             "tensors (use gloo)")


def causal_conv1d_cp(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
                     activation: Optional[str] = None, *, cp_context: CPContext, seq_idx=None, initial_states=None,
                     return_final_states: bool = False, final_states_out=None) -> torch.Tensor:
    """This rank's slice of causal_conv1d over the whole, unsplit input (see build_cp_context).

    What aiter_lite.causal_conv1d / causal_conv1d_fn hand over when given cp_context. The packed
    sequences and the window before each chunk come from the context: seq_idx, initial_states and
    final states are not taken with it."""
    ctx = cp_context
    if seq_idx is not None or initial_states is not None or final_states_out is not None or return_final_states:
        name = ("seq_idx" if seq_idx is not None else "initial_states" if initial_states is not None
                else "final_states_out" if final_states_out is not None else "return_final_states")
        raise ValueError(f"{name} cannot be combined with cp_context: the context's cu_seqlens describe packed "
                         "sequences, and each chunk's initial window comes from the rank before it")
    _check(x, weight, ctx)
    if bias is not None and isinstance(bias, torch.Tensor) and bias.numel() == 0:
        bias = None
    if ctx.passthrough and not ctx.packed:  # the plain op itself (its own autograd): nothing else to do
        return local_op.forward(x, weight, bias, activation)
    if torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad
                                    or (bias is not None and bias.requires_grad)):
        return _CPCausalConv1d.apply(x, weight, bias, activation, ctx)
    return _forward(x, weight, bias, activation, ctx)[0]
