"""Launchers of the causal conv1d forward with states / packed sequences / a state pool, of its backward
and of the varlen states: checked tensors in, the module's entry point called with pointers, sizes and
element strides (see csrc/include/causal_conv1d_params.h). Eager and real tensors only: the torch.library
ops call these."""
from __future__ import annotations

from typing import Optional

import torch

from ..jit import get_module
from ._common import DTYPE_CODES, backend_of, current_device_index, device_and_stream, on_device

MODULE = "module_causal_conv1d"


def _ptr(t: Optional[torch.Tensor]) -> int:
    return 0 if t is None else t.data_ptr()


def _strides3(t: Optional[torch.Tensor]) -> tuple:
    return (0, 0, 0) if t is None else tuple(t.stride())


def new_final_states(x: torch.Tensor, width: int) -> torch.Tensor:
    """[batch, dim, width-1] laid out like x: channel-last ([B, W-1, D] storage) when x is channel-last,
    as causal-conv1d returns them; contiguous otherwise."""
    batch, dim, _ = x.shape
    if x.stride(1) == 1 and x.stride(2) != 1 and dim > 1:
        return x.new_empty(batch, width - 1, dim).transpose(1, 2)
    return x.new_empty(batch, dim, width - 1)


def _module_and_stream(x: torch.Tensor):
    mod = get_module(MODULE, backend_of(x))
    dev, stream = device_and_stream(x)
    return mod, dev, stream


def launch_fwd_states(out: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                      use_silu: bool, variant: int, *, initial_states=None, final_states=None, seq_idx=None,
                      cu_seqlens=None, state_indices=None, has_initial_state=None, pad_slot_id: int = -1) -> None:
    """x/out: [batch, dim, seqlen], or [dim, total_tokens] with cu_seqlens (varlen rows). States: [rows, dim,
    state_len] (initial_states and final_states may be the same pool)."""
    mod, dev, stream = _module_and_stream(x)
    if dev >= 0 and dev != current_device_index():
        with on_device(x):
            return launch_fwd_states(out, x, weight, bias, use_silu, variant, initial_states=initial_states,
                                     final_states=final_states, seq_idx=seq_idx, cu_seqlens=cu_seqlens,
                                     state_indices=state_indices, has_initial_state=has_initial_state,
                                     pad_slot_id=pad_slot_id)
    if cu_seqlens is not None:  # one packed row [dim, total]
        batch = cu_seqlens.shape[0] - 1
        dim, seqlen = x.shape
        x_strides, out_strides = (0, *x.stride()), (0, *out.stride())
    else:
        batch, dim, seqlen = x.shape
        x_strides, out_strides = x.stride(), out.stride()
    states = initial_states if initial_states is not None else final_states
    state_rows, _, state_len = (0, 0, weight.shape[1] - 1) if states is None else states.shape
    seq_strides = (0, 0) if seq_idx is None else seq_idx.stride()
    workspace = None
    if seq_idx is not None and x.device.type != "cpu":  # the seq_idx marks of the GPU's rows kernel (and 2 guards a row)
        workspace = torch.empty(batch * ((seqlen + 31) // 32 + 2) * 8, dtype=torch.uint8, device=x.device)
    mod.causal_conv1d_fwd_states(
        x.data_ptr(), weight.data_ptr(), _ptr(bias), out.data_ptr(), batch, dim, seqlen, weight.shape[1],
        *x_strides, *weight.stride(), 0 if bias is None else bias.stride(0), *out_strides,
        DTYPE_CODES[x.dtype], DTYPE_CODES[weight.dtype], use_silu, variant,
        _ptr(initial_states), _ptr(final_states), _ptr(seq_idx), _ptr(cu_seqlens), _ptr(state_indices),
        _ptr(has_initial_state), pad_slot_id, state_len, state_rows,
        *_strides3(initial_states), *_strides3(final_states), *seq_strides, _ptr(workspace), stream)


def launch_bwd(x, weight, bias, dout, initial_states, seq_idx, dfinal_states, use_silu: bool, need_dx: bool,
               need_dweight: bool, need_dbias: bool, need_dinitial_states: bool, deterministic: bool):
    """Returns (dx, dweight, dbias, dinitial_states); a gradient not asked for is an empty tensor (not
    computed). dweight/dbias are reduced in fp32 and returned in weight's/bias's dtype. Padding tokens
    (seq_idx < 0) output a constant 0, so every kernel reads their dout as 0 itself (no pass over dout here)."""
    batch, dim, seqlen = x.shape
    width = weight.shape[1]
    empty = x.new_empty(0)
    dx = torch.empty_like(x) if need_dx else None
    dweight = torch.empty(dim, width, dtype=torch.float32, device=x.device) if need_dweight else None
    dbias = torch.empty(dim, dtype=torch.float32, device=x.device) if need_dbias and bias is not None else None
    dinit = None
    if need_dinitial_states and initial_states is not None:
        dinit = torch.empty_like(initial_states)
    if x.numel() == 0 and dinit is None and dfinal_states is None:  # nothing to compute but zeros
        if dweight is not None:
            dweight.zero_()
        if dbias is not None:
            dbias.zero_()
    else:
        mod, _, stream = _module_and_stream(x)
        sizes = [batch, dim, seqlen, width, *x.stride(), *weight.stride(), 0 if bias is None else bias.stride(0),
                 *dout.stride(), *_strides3(dx), *_strides3(initial_states), *_strides3(dfinal_states),
                 *_strides3(dinit), *((0, 0) if seq_idx is None else seq_idx.stride())]
        codes = (DTYPE_CODES[x.dtype], DTYPE_CODES[weight.dtype])
        ptrs = (x.data_ptr(), weight.data_ptr(), _ptr(bias), dout.data_ptr(), _ptr(initial_states), _ptr(seq_idx),
                _ptr(dfinal_states), _ptr(dx), _ptr(dweight), _ptr(dbias), _ptr(dinit))
        with on_device(x):  # the plan (and so the workspace) reads x's GPU's occupancy and the pointers' alignment
            nbytes = mod.causal_conv1d_bwd_workspace_bytes(*ptrs, sizes, *codes, use_silu, deterministic)
            workspace = torch.empty(nbytes, dtype=torch.uint8, device=x.device) if nbytes > 0 else None
            mod.causal_conv1d_bwd(*ptrs, _ptr(workspace), sizes, *codes, use_silu, deterministic, stream)
    return (empty if dx is None else dx,
            empty if dweight is None else dweight.to(weight.dtype),
            empty if dbias is None else dbias.to(bias.dtype),
            empty if dinit is None else dinit)


def launch_varlen_states(states: torch.Tensor, x: torch.Tensor, cu_seqlens: torch.Tensor) -> None:
    """states: [batch, dim, state_len] (any strides) <- the last state_len tokens of each sequence of x
    [total, dim]."""
    if states.numel() == 0:
        return
    mod, _, stream = _module_and_stream(x)
    with on_device(x):
        batch, dim, state_len = states.shape
        mod.causal_conv1d_varlen_states(x.data_ptr(), cu_seqlens.data_ptr(), states.data_ptr(), batch, dim,
                                        x.shape[0], state_len, *x.stride(), *states.stride(), DTYPE_CODES[x.dtype],
                                        stream)


def launch_varlen(out, x, weight, bias, conv_states, query_start_loc, cache_indices, has_initial_state,
                  use_silu: bool, pad_slot_id: int) -> None:
    """Serving prefill (vLLM conventions): x/out [dim, total_tokens] with query_start_loc, or [batch, dim,
    seqlen] without; conv_states is the pool, read where has_initial_state says and written in place."""
    initial = conv_states if has_initial_state is not None else None
    if x.dim() == 3:
        launch_fwd_states(out, x, weight, bias, use_silu, 0, initial_states=initial, final_states=conv_states,
                          state_indices=cache_indices, has_initial_state=has_initial_state, pad_slot_id=pad_slot_id)
        return
    if query_start_loc is None:  # one sequence of every token
        query_start_loc = torch.tensor([0, x.shape[1]], dtype=torch.int32, device=x.device)
    launch_fwd_states(out, x, weight, bias, use_silu, 0, initial_states=initial, final_states=conv_states,
                      cu_seqlens=query_start_loc, state_indices=cache_indices, has_initial_state=has_initial_state,
                      pad_slot_id=pad_slot_id)
