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
  3. the local backward of step 2 of the forward (its autograd graph, kept from the forward) overlaps;
  4. add the corrections and the received gradients into dx, dweight, dbias.
dweight and dbias are this rank's contributions: the CP group joins the gradient reduction.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch.autograd.graph import get_gradient_edge

from .context import CPContext
from .exchange import GRAD_DTYPE, post_halo, post_halo_grad


def _plain_conv(x, weight, bias, activation, *, initial_states=None, seq_idx=None):
    from ..ops.causal_conv1d import causal_conv1d

    extra = {}  # only what is used: a fixed-length chunk needs neither
    if initial_states is not None:
        extra["initial_states"] = initial_states
    if seq_idx is not None:
        extra["seq_idx"] = seq_idx
    return causal_conv1d(x, weight, bias, activation, **extra)


# The single-device op every rank runs on its chunk (differentiable in x, weight, bias, initial_states).
conv_op = _plain_conv


def _heads(t: torch.Tensor, ctx: CPContext) -> torch.Tensor:
    """The first head_len tokens of each halo part of t [B, D, L], stacked as [parts * B, D, head_len]."""
    plan = ctx.plan
    pieces = [t[..., plan.parts[i].local_start:plan.parts[i].local_start + plan.head_len] for i in plan.halo_parts]
    return pieces[0] if len(pieces) == 1 else torch.cat(pieces, 0)


def _exchanges(ctx: CPContext) -> bool:
    plan = ctx.plan
    return bool(plan.sends or plan.recvs or plan.halo_parts)


def _forward(x, weight, bias, activation, ctx: CPContext, leaves):
    """Steps 1-3 of the forward. leaves: None, or detached (x, weight, bias) some of which require grad:
    then the local conv is recorded on them for the backward. Returns (out, local_out, halo)."""
    batch = x.shape[0]
    pending = post_halo(x, ctx.plan, ctx.group) if _exchanges(ctx) else None
    seq_idx = ctx.seq_idx(x.device, batch)
    if leaves is None:
        local = out = conv_op(x, weight, bias, activation, seq_idx=seq_idx)
    else:
        with torch.enable_grad():
            local = conv_op(*leaves, activation, seq_idx=seq_idx)
        out = local.detach()  # the heads are written over below; the op's backward does not read its output
    halo = None
    if pending is not None:
        halo = pending.wait()
        if ctx.plan.halo_parts:
            head_out = conv_op(_heads(x, ctx), weight, bias, activation, initial_states=halo,
                               seq_idx=ctx.head_seq_idx(x.device, batch))
            n = ctx.plan.head_len
            for k, i in enumerate(ctx.plan.halo_parts):
                start = ctx.plan.parts[i].local_start
                out[..., start:start + n].copy_(head_out[k * batch:(k + 1) * batch])
    return out, local, halo


class _CPCausalConv1d(torch.autograd.Function):
    @staticmethod
    def forward(autograd_ctx, x, weight, bias, activation, ctx):
        needs = autograd_ctx.needs_input_grad[:3]
        leaves = (x.detach().requires_grad_(needs[0]), weight.detach().requires_grad_(needs[1]),
                  None if bias is None else bias.detach().requires_grad_(needs[2]))
        out, local, halo = _forward(x, weight, bias, activation, ctx, leaves)
        autograd_ctx.cp = ctx
        autograd_ctx.activation = activation
        # Keep the local conv's graph, not its output (the output's storage is `out`: holding it here would
        # keep every layer's output alive until the backward).
        autograd_ctx.local, autograd_ctx.leaves = get_gradient_edge(local), leaves
        autograd_ctx.save_for_backward(x, weight, bias, halo)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(autograd_ctx, dout):
        x, weight, bias, halo = autograd_ctx.saved_tensors
        ctx: CPContext = autograd_ctx.cp
        plan, batch, dim = ctx.plan, x.shape[0], x.shape[1]
        needs = autograd_ctx.needs_input_grad[:3]
        head_grads = _head_corrections(x, weight, bias, halo, dout, autograd_ctx.activation, ctx, needs) \
            if plan.halo_parts else None
        pending = None
        if plan.sends or plan.recvs or plan.local_runs:
            pending = post_halo_grad(None if head_grads is None else head_grads[0], plan, ctx.group, batch, dim,
                                     x.device)
        wanted = [leaf for leaf, need in zip(autograd_ctx.leaves, needs) if need]
        grads = iter(torch.autograd.grad(autograd_ctx.local, wanted, dout))
        dx, dweight, dbias = (next(grads) if need else None for need in needs)
        autograd_ctx.local = autograd_ctx.leaves = None
        if head_grads is not None:
            _, dx_heads, dweight_fix, dbias_fix = head_grads
            if dx is not None:
                n = plan.head_len
                for k, i in enumerate(plan.halo_parts):
                    start = plan.parts[i].local_start
                    dx[..., start:start + n] += dx_heads[k * batch:(k + 1) * batch]
            if dweight is not None:
                dweight += dweight_fix
            if dbias is not None:
                dbias += dbias_fix
        if pending is not None:
            for start, grad in pending.wait():
                if dx is not None:
                    dx[..., start:start + grad.shape[-1]] += grad
        return dx, dweight, dbias, None, None


def _head_corrections(x, weight, bias, halo, dout, activation, ctx: CPContext, needs):
    """(dhalo, dx_heads, dweight_fix, dbias_fix), all fp32: the halo's gradient, and what the heads'
    outputs add to dx/dweight/dbias when computed with the halo instead of the local conv's zeros."""
    heads = _heads(x, ctx).to(GRAD_DTYPE)
    dheads = _heads(dout, ctx).to(GRAD_DTYPE)
    seq_idx = ctx.head_seq_idx(x.device, x.shape[0])
    with torch.enable_grad():
        both = torch.cat([heads, heads], 0).requires_grad_(needs[0])
        states = torch.cat([halo.to(GRAD_DTYPE), torch.zeros_like(halo, dtype=GRAD_DTYPE)], 0).requires_grad_()
        w = weight.detach().to(GRAD_DTYPE).requires_grad_(needs[1])
        b = None if bias is None else bias.detach().to(GRAD_DTYPE).requires_grad_(needs[2])
        out = conv_op(both, w, b, activation, initial_states=states,
                      seq_idx=None if seq_idx is None else torch.cat([seq_idx, seq_idx], 0))
        inputs = [states] + [t for t, need in zip((both, w, b), needs) if need]
        grads = list(torch.autograd.grad(out, inputs, torch.cat([dheads, -dheads], 0)))
    n = heads.shape[0]
    dhalo = grads.pop(0)[:n]
    dx_heads = grads.pop(0) if needs[0] else None
    if dx_heads is not None:
        dx_heads = dx_heads[:n] + dx_heads[n:]
    dweight_fix = grads.pop(0) if needs[1] else None
    dbias_fix = grads.pop(0) if needs[2] else None
    return dhalo, dx_heads, dweight_fix, dbias_fix


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
    if ctx.passthrough:
        return conv_op(x, weight, bias, activation, seq_idx=ctx.seq_idx(x.device, x.shape[0], plain=True))
    if torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad
                                    or (bias is not None and bias.requires_grad)):
        return _CPCausalConv1d.apply(x, weight, bias, activation, ctx)
    return _forward(x, weight, bias, activation, ctx, None)[0]
