"""torch.library ops of the causal conv1d features and their autograd.

- aiter_lite::causal_conv1d (defined in _library.py) and ::causal_conv1d_states (initial states, final
  states, seq_idx) are differentiable: register_autograd saves only the inputs, and the backward calls the
  registered ::causal_conv1d_bwd, asking only for the gradients autograd needs (ctx.needs_input_grad).
  Under torch.use_deterministic_algorithms(True) the backward reduces dweight/dbias in a fixed order.
- ::causal_conv1d_varlen_states and ::causal_conv1d_varlen (serving prefill) are forward only.

Defined with Library.define/impl + register_fake + register_autograd (not the custom_op decorator,
which imports torch._dynamo on the first call)."""
from __future__ import annotations

import torch

from . import _conv_launch as launch

_lib = torch.library.Library("aiter_lite", "FRAGMENT")
_lib.define("causal_conv1d_states(Tensor x, Tensor weight, Tensor? bias, Tensor? initial_states, Tensor? seq_idx, "
            "bool return_final_states, bool use_silu, int variant) -> (Tensor, Tensor)")
_lib.define("causal_conv1d_bwd(Tensor x, Tensor weight, Tensor? bias, Tensor dout, Tensor? initial_states, "
            "Tensor? seq_idx, Tensor? dfinal_states, bool use_silu, bool need_dx, bool need_dweight, "
            "bool need_dbias, bool need_dinitial_states, bool deterministic) -> (Tensor, Tensor, Tensor, Tensor)")
_lib.define("causal_conv1d_varlen_states(Tensor x, Tensor cu_seqlens, int state_len) -> Tensor")
_lib.define("causal_conv1d_varlen(Tensor x, Tensor weight, Tensor? bias, Tensor(a!)? conv_states, "
            "Tensor? query_start_loc, Tensor? cache_indices, Tensor? has_initial_state, bool use_silu, "
            "int pad_slot_id) -> Tensor")


def _states(x, weight, bias, initial_states, seq_idx, return_final_states, use_silu, variant):
    out = torch.empty_like(x)
    final = launch.new_final_states(x, weight.shape[1]) if return_final_states else x.new_empty(0)
    launch.launch_fwd_states(out, x, weight, bias, use_silu, variant, initial_states=initial_states,
                             final_states=final if return_final_states else None, seq_idx=seq_idx)
    return out, final


def _varlen(x, weight, bias, conv_states, query_start_loc, cache_indices, has_initial_state, use_silu, pad_slot_id):
    out = torch.empty_like(x)
    launch.launch_varlen(out, x, weight, bias, conv_states, query_start_loc, cache_indices, has_initial_state,
                       use_silu, pad_slot_id)
    return out


def _varlen_states(x, cu_seqlens, state_len):
    states = x.new_empty(cu_seqlens.shape[0] - 1, state_len, x.shape[1]).transpose(1, 2)
    launch.launch_varlen_states(states, x, cu_seqlens)
    return states


def _bwd(*args):
    return launch.launch_bwd(*args)  # looked up per call, so a test can wrap it


for _name, _fn in {"causal_conv1d_states": _states, "causal_conv1d_bwd": _bwd,
                   "causal_conv1d_varlen_states": _varlen_states, "causal_conv1d_varlen": _varlen}.items():
    for _key in ("CPU", "CUDA"):
        _lib.impl(_name, _fn, _key)


@torch.library.register_fake("aiter_lite::causal_conv1d_states", lib=_lib)
def _(x, weight, bias, initial_states, seq_idx, return_final_states, use_silu, variant):
    final = launch.new_final_states(x, weight.shape[1]) if return_final_states else x.new_empty(0)
    return torch.empty_like(x), final


@torch.library.register_fake("aiter_lite::causal_conv1d_bwd", lib=_lib)
def _(x, weight, bias, dout, initial_states, seq_idx, dfinal_states, use_silu, need_dx, need_dweight, need_dbias,
      need_dinitial_states, deterministic):
    empty = x.new_empty(0)
    return (torch.empty_like(x) if need_dx else empty,
            torch.empty_like(weight, memory_format=torch.contiguous_format) if need_dweight else empty,
            bias.new_empty(bias.shape) if need_dbias and bias is not None else empty,
            torch.empty_like(initial_states) if need_dinitial_states and initial_states is not None else empty)


@torch.library.register_fake("aiter_lite::causal_conv1d_varlen_states", lib=_lib)
def _(x, cu_seqlens, state_len):
    return x.new_empty(cu_seqlens.shape[0] - 1, state_len, x.shape[1]).transpose(1, 2)


@torch.library.register_fake("aiter_lite::causal_conv1d_varlen", lib=_lib)
def _(x, weight, bias, conv_states, query_start_loc, cache_indices, has_initial_state, use_silu, pad_slot_id):
    return torch.empty_like(x)


# ---------------------------------------------------------------------------------------------
# Autograd


def _backward(ctx, dout, dfinal):
    x, weight, bias, initial_states, seq_idx = ctx.saved_tensors
    need = ctx.needs_input_grad
    need_dx, need_dw, need_db = need[0], need[1], bias is not None and need[2]
    need_dinit = initial_states is not None and ctx.has_initial_states_grad
    if dout is None:
        dout = torch.zeros_like(x)
    dx, dw, db, dinit = torch.ops.aiter_lite.causal_conv1d_bwd(
        x, weight, bias, dout, initial_states, seq_idx, dfinal, ctx.use_silu, need_dx, need_dw, need_db, need_dinit,
        torch.are_deterministic_algorithms_enabled())
    return (dx if need_dx else None, dw if need_dw else None, db if need_db else None,
            dinit if need_dinit else None)


def _setup_plain(ctx, inputs, output):
    x, weight, bias, use_silu, _ = inputs
    ctx.save_for_backward(x, weight, bias, None, None)
    ctx.use_silu = use_silu
    ctx.has_initial_states_grad = False


def _backward_plain(ctx, dout):
    dx, dw, db, _ = _backward(ctx, dout, None)
    return dx, dw, db, None, None


def _setup_states(ctx, inputs, output):
    x, weight, bias, initial_states, seq_idx, return_final_states, use_silu, _ = inputs
    ctx.save_for_backward(x, weight, bias, initial_states, seq_idx)
    ctx.use_silu = use_silu
    ctx.return_final_states = return_final_states
    ctx.has_initial_states_grad = ctx.needs_input_grad[3]


def _backward_states(ctx, dout, dfinal):
    dx, dw, db, dinit = _backward(ctx, dout, dfinal if ctx.return_final_states else None)
    return dx, dw, db, dinit, None, None, None, None


torch.library.register_autograd("aiter_lite::causal_conv1d", _backward_plain, setup_context=_setup_plain, lib=_lib)
torch.library.register_autograd("aiter_lite::causal_conv1d_states", _backward_states, setup_context=_setup_states,
                                lib=_lib)
