"""float64 references for the causal conv1d ops, built from plain torch ops (concatenation, F.conv1d,
a loop over packed sequences). Tests and op_tests compare against them; they are differentiable, so
their autograd is the reference for the backward."""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F

_ACTIVATIONS = (None, "silu", "swish")


def _act(out: torch.Tensor, activation) -> torch.Tensor:
    if activation not in _ACTIVATIONS:
        raise ValueError(f"activation must be None, 'silu' or 'swish', got {activation!r}")
    return out if activation is None else F.silu(out)


def _conv_window(ext: torch.Tensor, weight: torch.Tensor, bias) -> torch.Tensor:
    """ext: [..., dim, n + width - 1] float64 -> [..., dim, n]: every output reads its whole window."""
    squeeze = ext.dim() == 2
    ext3 = ext.unsqueeze(0) if squeeze else ext
    out = F.conv1d(ext3, weight.unsqueeze(1), bias, groups=ext3.shape[1])
    return out[0] if squeeze else out


def causal_conv1d_ref(x, weight, bias=None, activation=None, *, initial_states=None, return_final_states=False,
                      seq_idx=None):
    """Reference forward in float64; returns float64 out, or (out, final_states) [batch, dim, width-1].

    With seq_idx, a tap reads only positions of its output's sequence (the same index; causal-conv1d's
    rule), so each packed sequence starts from zeros, except that the row's first one continues
    initial_states; tokens with seq_idx < 0 are padding and output 0; final_states are the row's last
    width-1 inputs that belong to its last sequence (its initial window included), zeros elsewhere."""
    width = weight.shape[1]
    halo = width - 1
    x64, w64 = x.double(), weight.double()
    b64 = None if bias is None or bias.numel() == 0 else bias.double()
    batch, dim, seqlen = x.shape
    init = None if initial_states is None else initial_states.double()
    if seq_idx is None:  # one convolution over the whole batch
        prefix = init if init is not None else x64.new_zeros(batch, dim, halo)
        ext = torch.cat([prefix, x64], dim=-1)
        out = _act(_conv_window(ext, w64, b64) if seqlen else x64.new_zeros(batch, dim, 0), activation)
        return (out, ext[..., ext.shape[-1] - halo:]) if return_final_states else out
    zeros = x64.new_zeros(dim, halo)
    outs, finals = [], []
    for b in range(batch):
        # Tap j of output t reads ext position t + j when it carries t's seq_idx (causal-conv1d's rule: the
        # same index, so a window may reach over padding back into its own sequence); the window before t = 0
        # is the initial state (or zeros) and carries the row's first index.
        ids = seq_idx[b].to(device=x64.device, dtype=torch.int64)
        ext = torch.cat([init[b] if init is not None else zeros, x64[b]], dim=-1)
        ext_ids = torch.cat([ids[:1].expand(halo) if seqlen else ids.new_zeros(halo), ids])
        acc = x64.new_zeros(dim, seqlen) if b64 is None else b64.unsqueeze(1).expand(dim, seqlen).clone()
        for j in range(width):
            same = (ext_ids[j:j + seqlen] == ids).to(x64.dtype)
            acc = acc + w64[:, j:j + 1] * ext[:, j:j + seqlen] * same
        outs.append(acc)
        tail_same = (ext_ids[seqlen:] == ids[-1]).to(x64.dtype) if seqlen else x64.new_ones(halo)
        finals.append(ext[:, seqlen:] * tail_same)  # the last sequence's last width-1 inputs
    out = _act(torch.stack(outs) if outs else x64.new_zeros(0, dim, seqlen), activation)
    out = out.masked_fill((seq_idx < 0).unsqueeze(1).to(out.device), 0.0)  # padding tokens output 0
    if not return_final_states:
        return out
    return out, (torch.stack(finals) if finals else x64.new_zeros(0, dim, halo))


def causal_conv1d_update_ref(x, conv_state, weight, bias=None, activation=None, cache_seqlens=None,
                             conv_state_indices=None) -> torch.Tensor:
    """Reference decode step in float64; updates conv_state in place (in its own dtype)."""
    squeeze = x.dim() == 2
    x3 = (x.unsqueeze(-1) if squeeze else x).double()
    batch, dim, seqlen = x3.shape
    width, state_len = weight.shape[1], conv_state.shape[-1]
    out = torch.zeros_like(x3)
    for b in range(batch):
        row = b if conv_state_indices is None else int(conv_state_indices[b])
        if row < 0 or row >= conv_state.shape[0]:
            continue  # padded slot: zero output, state untouched
        state = conv_state[row].double()
        if cache_seqlens is None:
            x_new = torch.cat([state, x3[b]], dim=-1)
            conv_state[row].copy_(x_new[:, -state_len:])
        else:
            pos = int(cache_seqlens[b])
            window = torch.remainder(torch.arange(pos - (width - 1), pos), state_len)
            x_new = torch.cat([state[:, window], x3[b]], dim=-1)
            for t in range(seqlen):
                conv_state[row][:, (pos + t) % state_len] = x3[b, :, t].to(conv_state.dtype)
        out[b] = causal_conv1d_ref(x_new.unsqueeze(0), weight, bias, activation)[0, :, -seqlen:]
    return out.squeeze(-1) if squeeze else out


def causal_conv1d_varlen_states_ref(x, cu_seqlens, state_len: int) -> torch.Tensor:
    """x: [total, dim]; returns float64 [batch, dim, state_len]: the last state_len tokens of each sequence,
    zeros on the left where it is shorter."""
    bounds = [int(v) for v in cu_seqlens]
    states = x.new_zeros(len(bounds) - 1, x.shape[1], state_len, dtype=torch.float64)
    for b, (start, end) in enumerate(zip(bounds[:-1], bounds[1:])):
        n = min(state_len, end - start)
        if n > 0:
            states[b, :, state_len - n:] = x[end - n:end].double().T
    return states


def causal_conv1d_varlen_ref(x, weight, bias=None, conv_states=None, query_start_loc=None, cache_indices=None,
                             has_initial_state=None, activation="silu", pad_slot_id=-1):
    """Serving prefill in float64 (vLLM conventions). x: [dim, total] (or [batch, dim, seqlen] without
    query_start_loc). Returns float64 out with x's shape (rows of padded sequences left as zeros) and updates
    conv_states (in its own dtype) in place: the slot of each sequence ends as the last state_len entries of
    cat(its initial window or zeros, its tokens), zeros where neither reaches."""
    width = weight.shape[1]
    halo = width - 1
    out = torch.zeros(x.shape, dtype=torch.float64)
    if x.dim() == 3:
        views = [(x[b], out[b]) for b in range(x.shape[0])]
    else:
        bounds = [0, x.shape[1]] if query_start_loc is None else [int(v) for v in query_start_loc]
        views = [(x[:, s:e], out[:, s:e]) for s, e in zip(bounds[:-1], bounds[1:])]
    for b, (xr, out_row) in enumerate(views):
        slot = b if cache_indices is None else int(cache_indices[b])
        if cache_indices is not None and (slot == pad_slot_id or slot < 0):
            continue
        reads = conv_states is not None and has_initial_state is not None and bool(has_initial_state[b])
        dim = xr.shape[0]
        init = (conv_states[slot, :, conv_states.shape[2] - halo:].double() if reads
                else torch.zeros(dim, halo, dtype=torch.float64))
        out_row.copy_(causal_conv1d_ref(xr.unsqueeze(0), weight, bias, activation,
                                        initial_states=init.unsqueeze(0))[0])
        if conv_states is not None:
            state_len = conv_states.shape[2]
            ext = torch.cat([torch.zeros(dim, state_len, dtype=torch.float64), init, xr.double()], dim=-1)
            conv_states[slot].copy_(ext[:, ext.shape[1] - state_len:])
    return out
