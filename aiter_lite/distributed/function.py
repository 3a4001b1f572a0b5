"""Context-parallel causal conv1d: the forward with its halo exchange, and its autograd backward.

Forward, on each rank:
  1. post the halo exchange (the tokens other ranks need go out, this rank's halos come in);
  2. convolve the whole local chunk with zero initial state, each part and each packed sequence on its
     own (seq_idx): exact everywhere except the first width-1 outputs of a part that continues a
     sequence from another rank; this is the bulk of the work and overlaps the exchange;
  3. wait for the halos, recompute those head outputs with the halo as initial state, and write
     them over the chunk's.
Backward, on each rank:
  1. on the tiny heads (fp32): the gradient of the halo, and the correction from "zero initial state"
     to "halo" for dx, dweight and dbias (one call on [heads with halo; heads with zeros] and
     [dout; -dout]);
  2. post the halo gradients to the ranks that own those tokens; receive those of this rank's tokens;
  3. the local backward of step 2 of the forward overlaps;
  4. add the corrections and the received gradients into dx, dweight, dbias.
dweight and dbias are this rank's contributions: the CP group joins the gradient reduction.
"""
from __future__ import annotations

from typing import Optional

import torch

from . import local_op
from .context import CPContext
from .exchange import GRAD_DTYPE, post_halo, post_halo_grad


def _heads(t: torch.Tensor, ctx: CPContext) -> torch.Tensor:
    """The first head_len tokens of each halo part of t [B, D, L], stacked as [parts * B, D, head_len]."""
    plan = ctx.plan
    pieces = [t[..., plan.parts[i].local_start:plan.parts[i].local_start + plan.head_len] for i in plan.halo_parts]
    return pieces[0] if len(pieces) == 1 else torch.cat(pieces, 0)


def _head_slices(ctx: CPContext, batch: int):
    """(rows of the stacked heads, local positions) of each halo part."""
    n = ctx.plan.head_len
    return [(slice(k * batch, (k + 1) * batch), slice(ctx.plan.parts[i].local_start, ctx.plan.parts[i].local_start + n))
            for k, i in enumerate(ctx.plan.halo_parts)]


def _forward(x, weight, bias, activation, ctx: CPContext):
    """Steps 1-3 of the forward. Returns (out, halo)."""
    plan, batch = ctx.plan, x.shape[0]
    pending = post_halo(x, plan, ctx.group) if (plan.sends or plan.recvs or plan.halo_parts) else None
    out = local_op.forward(x, weight, bias, activation, seq_idx=ctx.seq_idx(x.device, batch))
    halo = None
    if pending is not None:
        halo = pending.wait()
        if plan.halo_parts:
            head_out = local_op.forward(_heads(x, ctx), weight, bias, activation, initial_states=halo,
                                        seq_idx=ctx.head_seq_idx(x.device, batch))
            for rows, cols in _head_slices(ctx, batch):
                out[..., cols].copy_(head_out[rows])
    return out, halo


class _CPCausalConv1d(torch.autograd.Function):
    @staticmethod
    def forward(autograd_ctx, x, weight, bias, activation, ctx):
        out, halo = _forward(x, weight, bias, activation, ctx)
        autograd_ctx.cp, autograd_ctx.activation = ctx, activation
        autograd_ctx.save_for_backward(x, weight, bias, halo)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(autograd_ctx, dout):
        x, weight, bias, halo = autograd_ctx.saved_tensors
        ctx: CPContext = autograd_ctx.cp
        activation = autograd_ctx.activation
        plan, batch, dim = ctx.plan, x.shape[0], x.shape[1]
        need = tuple(autograd_ctx.needs_input_grad[:3])
        fix = _head_corrections(x, weight, bias, halo, dout, activation, ctx, need) if plan.halo_parts else None
        pending = None
        if plan.sends or plan.recvs or plan.local_runs:  # every rank posts: its peers wait for it
            pending = post_halo_grad(None if fix is None else fix[0], plan, ctx.group, batch, dim, x.device)
        dx, dweight, dbias, _ = local_op.backward(x, weight, bias, activation, dout, initial_states=None,
                                                  seq_idx=ctx.seq_idx(x.device, batch), need=need + (False,))
        if fix is not None:
            _, dx_heads, dweight_fix, dbias_fix = fix
            if dx is not None:
                for rows, cols in _head_slices(ctx, batch):
                    dx[..., cols] += dx_heads[rows]
            if dweight is not None:
                dweight += dweight_fix
            if dbias is not None:
                dbias += dbias_fix
        if pending is not None:
            for start, grad in pending.wait():
                if dx is not None:
                    dx[..., start:start + grad.shape[-1]] += grad
        return (dx, None if dweight is None else dweight.to(weight.dtype),
                None if dbias is None else dbias.to(bias.dtype), None, None)


def _head_corrections(x, weight, bias, halo, dout, activation, ctx: CPContext, need):
    """(dhalo, dx_heads, dweight_fix, dbias_fix), fp32: the halo's gradient, and what the heads' outputs add
    to dx/dweight/dbias when computed with the halo instead of the local conv's zeros. One backward call on
    [heads; heads] with initial states [halo; 0] and gradient [dout; -dout]."""
    heads = _heads(x, ctx).to(GRAD_DTYPE)
    dheads = _heads(dout, ctx).to(GRAD_DTYPE)
    seq_idx = ctx.head_seq_idx(x.device, x.shape[0])
    halo32 = halo.to(GRAD_DTYPE)
    dx2, dweight_fix, dbias_fix, dinit = local_op.backward(
        torch.cat([heads, heads], 0), weight.to(GRAD_DTYPE), None if bias is None else bias.to(GRAD_DTYPE),
        activation, torch.cat([dheads, -dheads], 0), initial_states=torch.cat([halo32, torch.zeros_like(halo32)], 0),
        seq_idx=None if seq_idx is None else torch.cat([seq_idx, seq_idx], 0), need=need + (True,))
    n = heads.shape[0]
    return dinit[:n], None if dx2 is None else dx2[:n] + dx2[n:], dweight_fix, dbias_fix


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
    if ctx.passthrough:  # fixed-length rows need no seq_idx: skip its lookup (host time is what this path costs)
        return local_op.forward(x, weight, bias, activation,
                                seq_idx=ctx.seq_idx(x.device, 1, plain=True) if ctx.packed else None)
    if torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad
                                    or (bias is not None and bias.requires_grad)):
        return _CPCausalConv1d.apply(x, weight, bias, activation, ctx)
    return _forward(x, weight, bias, activation, ctx)[0]
