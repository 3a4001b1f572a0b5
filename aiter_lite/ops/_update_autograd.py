"""Gradients of the decode step (causal_conv1d_update) for x, weight and bias.

The step is a serving call and normally runs under no_grad; this path exists so that a call whose inputs
require grad (causal-conv1d's own tests build weight with requires_grad=True) differentiates instead of
cutting the gradient. The forward is the kernel's, unchanged; before it runs, the width-1 state entries
each row's window reads are gathered (conv_state is updated in place, so they are gone afterwards), and
the backward recomputes the pre-activation from them and x in fp32 with torch ops (decode tensors are
small: batch x dim x (seqlen + width - 1)). conv_state itself gets no gradient: it is overwritten in
place, so a conv_state that requires grad raises.
"""
from __future__ import annotations

from typing import Callable, Optional

import torch


def state_windows(x3: torch.Tensor, conv_state: torch.Tensor, width: int, cache_seqlens: Optional[torch.Tensor],
                  conv_state_indices: Optional[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """(the width-1 state entries before the new tokens of each row, [B, D, W-1] in x's dtype; a bool
    [B] mask of the rows that read a state: padded slots (negative or past the pool) have zero output)."""
    batch, dim, _ = x3.shape
    pool, _, state_len = conv_state.shape
    halo = width - 1
    rows = (torch.arange(batch, device=x3.device) if conv_state_indices is None
            else conv_state_indices.to(device=x3.device, dtype=torch.int64))
    live = (rows >= 0) & (rows < pool)
    safe_rows = torch.where(live, rows, torch.zeros_like(rows))
    if cache_seqlens is None:  # the last width-1 entries
        cols = torch.arange(state_len - halo, state_len, device=x3.device).expand(batch, halo)
    else:  # a circular buffer: the width-1 entries before position cache_seqlens[b]
        pos = cache_seqlens.to(device=x3.device, dtype=torch.int64).unsqueeze(1)
        cols = torch.remainder(pos - halo + torch.arange(halo, device=x3.device), state_len)
    gathered = conv_state[safe_rows.unsqueeze(1).unsqueeze(2), torch.arange(dim, device=x3.device).view(1, dim, 1),
                          cols.unsqueeze(1)]
    return gathered.clone(), live


class _UpdateGrad(torch.autograd.Function):
    """forward: the kernel's output (run by `launch`); backward: dx, dweight, dbias in fp32 from the saved
    windows."""

    @staticmethod
    def forward(ctx, x3, weight, bias, windows, live, use_silu, launch: Callable[[], torch.Tensor]):
        ctx.save_for_backward(x3, weight, bias, windows, live)
        ctx.use_silu = use_silu
        return launch()

    @staticmethod
    def backward(ctx, dout):
        x3, weight, bias, windows, live = ctx.saved_tensors
        width, seqlen = weight.shape[1], x3.shape[2]
        xs = torch.cat([windows, x3], dim=2).float()  # [B, D, W-1+L]
        w = weight.float()
        pre = sum(xs[:, :, j:j + seqlen] * w[:, j:j + 1] for j in range(width))
        if bias is not None:
            pre = pre + bias.float().unsqueeze(1)
        dpre = dout.float() * live.view(-1, 1, 1)
        if ctx.use_silu:
            sig = torch.sigmoid(pre)
            dpre = dpre * sig * (1 + pre * (1 - sig))
        dxs = torch.zeros_like(xs)
        dweight = torch.empty_like(w)
        for j in range(width):
            dxs[:, :, j:j + seqlen] += dpre * w[:, j:j + 1]
            dweight[:, j] = (dpre * xs[:, :, j:j + seqlen]).sum(dim=(0, 2))
        dx = dxs[:, :, width - 1:].to(x3.dtype) if ctx.needs_input_grad[0] else None
        dw = dweight.to(weight.dtype) if ctx.needs_input_grad[1] else None
        db = dpre.sum(dim=(0, 2)).to(bias.dtype) if bias is not None and ctx.needs_input_grad[2] else None
        return dx, dw, db, None, None, None, None


def update_with_grad(x, conv_state, weight, bias, use_silu: bool, cache_seqlens, conv_state_indices,
                     run_update: Callable[[], torch.Tensor]) -> torch.Tensor:
    """causal_conv1d_update for inputs that require grad; run_update() is the plain step (it updates
    conv_state in place and returns out shaped like x)."""
    if conv_state.requires_grad:
        raise RuntimeError("causal_conv1d_update: conv_state requires grad, but it is updated in place and gets "
                           "no gradient; pass a conv_state that does not require grad (e.g. conv_state.detach())")
    squeeze = x.dim() == 2
    x3 = x.unsqueeze(-1) if squeeze else x
    windows, live = state_windows(x3, conv_state, weight.shape[1], cache_seqlens, conv_state_indices)

    def launch():
        out = run_update()
        return out.unsqueeze(-1) if squeeze else out

    out3 = _UpdateGrad.apply(x3, weight, bias, windows, live, use_silu, launch)
    return out3.squeeze(-1) if squeeze else out3
