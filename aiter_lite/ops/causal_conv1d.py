"""Causal depthwise conv1d (Mamba style): the public API.

- causal_conv1d: forward with bias, SiLU, initial/final states and packed sequences (seq_idx);
  differentiable. causal_conv1d_fn / causal_conv1d_update / causal_conv1d_varlen_states: drop-ins for
  causal-conv1d 1.7. causal_conv1d_varlen: serving prefill with a state pool, in vLLM's conventions.
  causal_conv1d_fwd: AIter-style out= forward (not differentiable).

Public functions check every argument, then launch the module for the tensors' device. Eager calls
whose inputs need no gradient go straight to the launcher; under torch.compile, the profiler or autograd
they go through the registered torch.library ops (_library.py, _conv_autograd.py), which call the same
launchers. Checks of the new arguments: _conv_checks.py; launchers: _conv_launch.py; float64
references: causal_conv1d_ref.py.
"""
from __future__ import annotations

from typing import Optional

import torch

from ..jit import get_module
from . import _conv_checks as checks
from ._update_autograd import update_with_grad
from ._conv_launch import launch_fwd_states, launch_varlen, launch_varlen_states, new_final_states
from .causal_conv1d_ref import (causal_conv1d_ref, causal_conv1d_update_ref, causal_conv1d_varlen_ref,
                                causal_conv1d_varlen_states_ref)
from ._common import (_GPU_BACKEND, DTYPE_CODES, _current_device, _is_compiling, _profiler_enabled, _raw_stream,
                      backend_of, check_index_tensor, check_no_alias, check_same_device, check_tensor,
                      current_device_index, device_and_stream, on_device, use_direct_call)

MODULE = "module_causal_conv1d"
VARIANTS = {"auto": 0, "naive": 1, "shared": 2, "vectorized": 3}
_ACTIVATIONS = (None, "silu", "swish")

__all__ = ["causal_conv1d", "causal_conv1d_fn", "causal_conv1d_fwd", "causal_conv1d_update",
           "causal_conv1d_varlen", "causal_conv1d_varlen_states", "causal_conv1d_ref", "causal_conv1d_update_ref",
           "causal_conv1d_varlen_ref", "causal_conv1d_varlen_states_ref", "ActivationError", "VARIANTS"]


class ActivationError(ValueError, NotImplementedError):
    """An unsupported activation. A ValueError like every bad argument here, and a NotImplementedError
    like causal-conv1d's, so code written against either catches it."""


# ---------------------------------------------------------------------------------------------
# Argument checks


def _silu_flag(activation) -> bool:
    if activation not in _ACTIVATIONS:
        raise ActivationError(f"activation must be None, 'silu' or 'swish', got {activation!r}")
    return activation is not None


def _variant_code(variant) -> int:
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}, got {variant!r}")
    return VARIANTS[variant]


def _check_weight_bias(x: torch.Tensor, weight, bias) -> Optional[torch.Tensor]:
    check_tensor("weight", weight, ndim=(2,))
    dim = x.shape[1]
    if weight.shape[0] != dim or weight.shape[1] < 1:
        raise ValueError(f"weight must have shape (dim={dim}, width>=1), got {tuple(weight.shape)}")
    if bias is not None:
        check_tensor("bias", bias)
        if bias.numel() == 0:  # AIter passes an empty tensor for "no bias"
            bias = None
        elif bias.dim() != 1 or bias.shape[0] != dim:
            raise ValueError(f"bias must have shape ({dim},), got {tuple(bias.shape)}")
        elif bias.dtype != weight.dtype:
            raise TypeError(f"bias has dtype {bias.dtype} but weight has {weight.dtype}; they must match")
    check_same_device("x", x, weight=weight, bias=bias)
    return bias


def _well_formed_fwd(out, x, weight, bias, use_silu, variant) -> bool:
    """One cheap test that every forward argument is as the full checks want (the common case).

    When it is False the full checks (_check_fwd) run and raise with the argument's name. Devices are
    compared with is_cuda/is_cpu and get_device() (an int) instead of torch.device objects, which
    cost about 10x more per comparison; host time per call is what small shapes are made of."""
    try:
        shape = x.shape
        wshape = weight.shape
        dtype = x.dtype
        if (len(shape) != 3 or out.shape != shape or len(wshape) != 2 or wshape[0] != shape[1] or wshape[1] < 1
                or dtype not in DTYPE_CODES or out.dtype != dtype or weight.dtype not in DTYPE_CODES
                or use_silu.__class__ is not bool or variant not in VARIANTS):
            return False
        if bias is not None and (bias.dim() != 1 or bias.shape[0] != shape[1] or bias.shape[0] == 0
                                 or bias.dtype != weight.dtype):
            return False
        if x.is_cuda:  # then an equal get_device() (>= 0) means the same GPU; -1 would be a CPU/meta tensor
            dev = x.get_device()
            return (weight.get_device() == dev and out.get_device() == dev
                    and (bias is None or bias.get_device() == dev))
        return x.is_cpu and weight.is_cpu and out.is_cpu and (bias is None or bias.is_cpu)
    except (AttributeError, TypeError):  # not tensors: the full checks say which argument
        return False


def _check_fwd(out, x, weight, bias, use_silu, variant) -> Optional[torch.Tensor]:
    check_tensor("x", x, ndim=(3,))
    bias = _check_weight_bias(x, weight, bias)
    check_tensor("out", out)
    if out.shape != x.shape:
        raise ValueError(f"out must have x's shape {tuple(x.shape)}, got {tuple(out.shape)}")
    if out.dtype != x.dtype:
        raise TypeError(f"out has dtype {out.dtype} but x has {x.dtype}; they must match")
    check_same_device("x", x, out=out)
    if not isinstance(use_silu, bool):
        raise TypeError(f"use_silu must be a bool, got {type(use_silu).__name__}")
    _variant_code(variant)
    backend_of(x)
    return bias


_grad_enabled = torch.is_grad_enabled


def _needs_grad(*tensors) -> bool:
    return _grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def _check_no_grad(op: str, why: str, **tensors) -> None:
    """A call of a forward-only op whose inputs require grad raises rather than cutting the gradient
    silently (the output would have requires_grad=False)."""
    if not _grad_enabled():
        return
    for name, t in tensors.items():
        if t is not None and t.requires_grad:
            raise RuntimeError(f"{op}: {name} requires grad, but {op} is not differentiable ({why}); "
                               "call it under torch.no_grad() or detach the inputs")


# ---------------------------------------------------------------------------------------------
# Launchers (eager, real tensors)


def _launch_fwd(out, x, weight, bias, use_silu: bool, variant: int, fresh_out: bool = False) -> None:
    """The general launcher (any strides, x on any GPU): what the torch.ops path runs, and the eager
    calls _launch_fwd_fast leaves. fresh_out: out was just allocated here, so it cannot alias an input
    (skips that check)."""
    if out.numel() == 0:
        return
    if not fresh_out and not torch.compiler.is_compiling():
        check_no_alias("out", out, (("x", x), ("weight", weight), ("bias", bias)))
    mod = get_module(MODULE, backend_of(x))
    dev, stream = device_and_stream(x)
    if dev >= 0 and dev != current_device_index():  # launch on x's GPU
        with on_device(x):
            return _launch_fwd(out, x, weight, bias, use_silu, variant, fresh_out=True)
    bias_ptr = 0 if bias is None else bias.data_ptr()
    if (x.is_contiguous() and out.is_contiguous() and weight.is_contiguous()
            and (bias is None or bias.is_contiguous())):  # 13 arguments instead of 22
        mod.causal_conv1d_fwd_contiguous(
            x.data_ptr(), weight.data_ptr(), bias_ptr, out.data_ptr(), *x.shape, weight.shape[1],
            DTYPE_CODES[x.dtype], DTYPE_CODES[weight.dtype], use_silu, variant, stream)
        return
    mod.causal_conv1d_fwd(
        x.data_ptr(), weight.data_ptr(), bias_ptr, out.data_ptr(),
        *x.shape, weight.shape[1], *x.stride(), *weight.stride(), 0 if bias is None else bias.stride(0),
        *out.stride(), DTYPE_CODES[x.dtype], DTYPE_CODES[weight.dtype], use_silu, variant, stream)


def _launch_update(out, x, conv_state, weight, bias, use_silu, cache_seqlens, conv_state_indices) -> None:
    """x and out: [B, D, L], or [B, D] for one step. out: allocated by the caller for this call (both
    callers use empty_like), so it aliases nothing; conv_state, written in place, must not overlap the
    inputs."""
    if out.numel() == 0:
        return
    check_no_alias("conv_state", conv_state, (("x", x), ("weight", weight), ("bias", bias)))
    if conv_state_indices is not None and x.is_cpu:
        bad = (conv_state_indices >= conv_state.shape[0]).nonzero()
        if bad.numel():
            i = int(bad[0, 0])
            raise ValueError(f"conv_state_indices[{i}] = {int(conv_state_indices[i])} is out of range for a "
                             f"conv_state pool of {conv_state.shape[0]} rows")
    mod = get_module(MODULE, backend_of(x))
    dev, stream = device_and_stream(x)
    if len(x.shape) == 2:  # [B, D]: seqlen 1 (its stride is never used)
        sizes, x_strides, out_strides = (*x.shape, 1), (*x.stride(), 1), (*out.stride(), 1)
    else:
        sizes, x_strides, out_strides = x.shape, x.stride(), out.stride()
    args = (x.data_ptr(), conv_state.data_ptr(), weight.data_ptr(), 0 if bias is None else bias.data_ptr(),
            0 if cache_seqlens is None else cache_seqlens.data_ptr(),
            0 if conv_state_indices is None else conv_state_indices.data_ptr(), out.data_ptr(),
            *sizes, weight.shape[1], conv_state.shape[2], conv_state.shape[0],
            *x_strides, *conv_state.stride(), *weight.stride(), 0 if bias is None else bias.stride(0),
            *out_strides, DTYPE_CODES[x.dtype], DTYPE_CODES[weight.dtype], use_silu, stream)
    if dev >= 0 and dev != current_device_index():  # launch on x's GPU (rare: the hot path skips this)
        with on_device(x):
            mod.causal_conv1d_update(*args)
    else:
        mod.causal_conv1d_update(*args)


def _launch_fwd_fast(out, x, weight, bias, use_silu, variant):
    """The common forward call, checked and launched in one pass: eager, dense contiguous tensors
    on the current device (or the CPU), shapes and dtypes as the full checks want, out apart from
    the inputs. Each attribute is read once; this path is most of a small call's host time.
    out=None (the functional call): x must be a plain torch.Tensor, and the output is allocated
    here once the inputs passed, so none of out's checks run.

    Returns out (launched, or nothing to do), or None: nothing done; the caller runs the full checks
    (which name a bad argument) and the general launcher, which also takes strided and other-device
    tensors."""
    fresh_out = out is None
    try:
        # Contiguity first: channel-last views (a common layout) leave after one test.
        if fresh_out:
            if x.__class__ is not torch.Tensor or not (x.is_contiguous() and weight.is_contiguous()):
                return None
        elif not (x.is_contiguous() and out.is_contiguous() and weight.is_contiguous()):
            return None
        shape, wshape = x.shape, weight.shape
        code, wcode = DTYPE_CODES.get(x.dtype), DTYPE_CODES.get(weight.dtype)
        if (code is None or wcode is None or len(shape) != 3 or len(wshape) != 2 or wshape[0] != shape[1]
                or wshape[1] < 1 or use_silu.__class__ is not bool):
            return None
        if not fresh_out and (out.shape != shape or out.dtype is not x.dtype):
            return None
        if bias is not None and (bias.dim() != 1 or bias.shape[0] != shape[1] or bias.shape[0] == 0
                                 or bias.dtype is not weight.dtype or not bias.is_contiguous()):
            return None
        v = VARIANTS.get(variant)
        if v is None or _is_compiling() or _profiler_enabled():
            return None
        if _grad_enabled() and (x.requires_grad or weight.requires_grad
                                or (bias is not None and bias.requires_grad)):
            return None
        if x.is_cuda:
            dev = x.get_device()
            if (weight.get_device() != dev or (not fresh_out and out.get_device() != dev)
                    or (bias is not None and bias.get_device() != dev) or dev != _current_device()):
                return None
            mod, stream = get_module(MODULE, _GPU_BACKEND), _raw_stream(dev)
        elif x.is_cpu and weight.is_cpu and (fresh_out or out.is_cpu) and (bias is None or bias.is_cpu):
            mod, stream = get_module(MODULE, "cpu"), 0
        else:
            return None
    except (AttributeError, TypeError):  # not tensors, or an unhashable variant: the full checks say which
        return None
    if fresh_out:
        out = torch.empty_like(x)
    n = out.numel()
    if n == 0:
        return out
    xp, wp, op = x.data_ptr(), weight.data_ptr(), out.data_ptr()
    bp = 0 if bias is None else bias.data_ptr()
    if not fresh_out:
        # Dense tensors overlap exactly when their byte ranges do (bias, D elements, is never longer
        # than weight). An overlap goes to the full path, whose alias check names the argument.
        nb = n * out.element_size()
        wb = wshape[0] * wshape[1] * weight.element_size()
        if (op < xp + nb and xp < op + nb) or (op < wp + wb and wp < op + nb) or (bp and op < bp + wb and bp < op + nb):
            return None
    mod.causal_conv1d_fwd_contiguous(xp, wp, bp, op, shape[0], shape[1], shape[2], wshape[1], code, wcode, use_silu,
                                     v, stream)
    return out


# ---------------------------------------------------------------------------------------------
# Public API


def causal_conv1d_fwd(out: torch.Tensor, x: torch.Tensor, weight: torch.Tensor,
                      bias: Optional[torch.Tensor] = None, use_silu: bool = False, *,
                      variant: str = "auto") -> torch.Tensor:
    """AIter-style forward: writes act(conv(x) + bias) into `out` and returns it.

    x: [batch, dim, seqlen] (any strides; channel-last views run at full speed), weight: [dim, width]
    (any width >= 1, dtype may differ from x), bias: [dim] with weight's dtype, None, or an empty tensor.
    out: x's shape and dtype, not overlapping any input. Accumulates in fp32.
    """
    if _launch_fwd_fast(out, x, weight, bias, use_silu, variant) is not None:
        return out
    if not _well_formed_fwd(out, x, weight, bias, use_silu, variant):
        bias = _check_fwd(out, x, weight, bias, use_silu, variant)
    _check_no_grad("causal_conv1d_fwd", "it writes into out; use causal_conv1d for training", x=x, weight=weight,
                   bias=bias)
    if use_direct_call():
        _launch_fwd(out, x, weight, bias, use_silu, VARIANTS[variant])
    else:
        torch.ops.aiter_lite.causal_conv1d_fwd(out, x, weight, bias, use_silu, VARIANTS[variant])
    return out


def causal_conv1d(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
                  activation: Optional[str] = None, *, initial_states: Optional[torch.Tensor] = None,
                  return_final_states: bool = False, final_states_out: Optional[torch.Tensor] = None,
                  seq_idx: Optional[torch.Tensor] = None, variant: str = "auto", cp_context=None):
    """Functional forward, differentiable: returns a new tensor laid out like x, or (out, final_states)
    with return_final_states. activation: None, "silu" or "swish".

    initial_states [batch, dim, width-1] (x's dtype, any strides): what the window reads before t = 0.
    seq_idx (int32 [batch, seqlen], non-decreasing per row): packed sequences; no window reads across a
    change of index (each sequence starts from zeros; initial_states continue the row's first one).
    Negative entries mark padding tokens (anywhere in a row): their output is 0.
    return_final_states: also return the last width-1 inputs of each row's last sequence (left-padded with
    its initial window or zeros), [batch, dim, width-1] laid out like x, or written into final_states_out
    (ignored when return_final_states is False, as in causal-conv1d).
    cp_context: x is this rank's chunk of a sequence split over a process group (aiter_lite.distributed).
    """
    if cp_context is not None:
        from ..distributed.function import causal_conv1d_cp
        return causal_conv1d_cp(x, weight, bias, activation, cp_context=cp_context, seq_idx=seq_idx,
                                initial_states=initial_states, return_final_states=return_final_states,
                                final_states_out=final_states_out)
    use_silu = _silu_flag(activation)
    if initial_states is None and seq_idx is None and not return_final_states:
        out = _launch_fwd_fast(None, x, weight, bias, use_silu, variant)
        if out is not None:
            return out
        if not _well_formed_fwd(x, x, weight, bias, use_silu, variant):
            check_tensor("x", x, ndim=(3,))
            bias = _check_fwd(x, x, weight, bias, use_silu, variant)
        if use_direct_call() and not _needs_grad(x, weight, bias):
            out = torch.empty_like(x)
            _launch_fwd(out, x, weight, bias, use_silu, VARIANTS[variant], fresh_out=True)
            return out
        return torch.ops.aiter_lite.causal_conv1d(x, weight, bias, use_silu, VARIANTS[variant])
    return _forward_with_states(x, weight, bias, use_silu, initial_states, return_final_states, final_states_out,
                                seq_idx, variant)


def _forward_with_states(x, weight, bias, use_silu, initial_states, return_final_states, final_states_out,
                         seq_idx, variant):
    check_tensor("x", x, ndim=(3,))
    bias = _check_fwd(x, x, weight, bias, use_silu, variant)
    if not isinstance(return_final_states, bool):
        raise TypeError(f"return_final_states must be a bool, got {type(return_final_states).__name__}")
    batch, dim, _ = x.shape
    state_shape = (batch, dim, weight.shape[1] - 1)
    if initial_states is not None:
        checks.check_state_tensor("initial_states", initial_states, x, state_shape)
    seq_idx = checks.check_seq_idx(seq_idx, x, return_final_states)
    if not return_final_states:
        final_states_out = None
    elif final_states_out is not None:
        checks.check_state_tensor("final_states_out", final_states_out, x, state_shape)
        if not _is_compiling():
            check_no_alias("final_states_out", final_states_out, (("x", x), ("weight", weight), ("bias", bias)))
            if initial_states is not None and not checks.same_view(final_states_out, initial_states):
                check_no_alias("final_states_out", final_states_out, (("initial_states", initial_states),))
    if use_direct_call() and not _needs_grad(x, weight, bias, initial_states):
        out = torch.empty_like(x)
        final = None
        if return_final_states:
            final = final_states_out if final_states_out is not None else new_final_states(x, weight.shape[1])
        launch_fwd_states(out, x, weight, bias, use_silu, VARIANTS[variant], initial_states=initial_states,
                          final_states=final, seq_idx=seq_idx)
        return (out, final) if return_final_states else out
    out, final = torch.ops.aiter_lite.causal_conv1d_states(x, weight, bias, initial_states, seq_idx,
                                                           return_final_states, use_silu, VARIANTS[variant])
    if not return_final_states:
        return out
    if final_states_out is not None:
        final = final_states_out.copy_(final)
    return out, final


def causal_conv1d_fn(x, weight, bias=None, seq_idx=None, initial_states=None, return_final_states=False,
                     final_states_out=None, activation=None, cp_context=None):
    """causal-conv1d 1.7's causal_conv1d_fn (same arguments, order, defaults and returns): out, or
    (out, final_states) with return_final_states. Differentiable. Beyond causal-conv1d: any width, both
    layouts for states and seq_idx, and seq_idx together with return_final_states (see docs/ops.md).
    cp_context: see causal_conv1d and docs/distributed.md."""
    return causal_conv1d(x, weight, bias, activation, initial_states=initial_states,
                         return_final_states=return_final_states, final_states_out=final_states_out, seq_idx=seq_idx,
                         cp_context=cp_context)


def causal_conv1d_varlen_states(x: torch.Tensor, cu_seqlens: torch.Tensor, state_len: int) -> torch.Tensor:
    """causal-conv1d's causal_conv1d_varlen_states: x [total_tokens, dim], cu_seqlens int32 (or int64, as
    causal-conv1d accepts it) [batch+1] (non-decreasing); returns [batch, dim, state_len] (a transposed view of [batch, state_len, dim] storage,
    as causal-conv1d returns it): row b holds the last state_len tokens of sequence b, zero-padded on the
    left where it is shorter. Forward only."""
    check_tensor("x", x, ndim=(2,))
    if isinstance(state_len, bool) or not isinstance(state_len, int) or state_len < 0:
        raise TypeError(f"state_len must be an int >= 0, got {state_len!r}")
    cu_seqlens = checks.check_cu_seqlens("cu_seqlens", cu_seqlens, x.shape[0], x, allow_int64=True)
    backend_of(x)
    _check_no_grad("causal_conv1d_varlen_states", "it is forward only", x=x)
    if not use_direct_call():
        return torch.ops.aiter_lite.causal_conv1d_varlen_states(x, cu_seqlens, state_len)
    states = x.new_empty(cu_seqlens.shape[0] - 1, state_len, x.shape[1]).transpose(1, 2)
    launch_varlen_states(states, x, cu_seqlens)
    return states


def causal_conv1d_varlen(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
                         conv_states: Optional[torch.Tensor] = None, query_start_loc: Optional[torch.Tensor] = None,
                         cache_indices: Optional[torch.Tensor] = None,
                         has_initial_state: Optional[torch.Tensor] = None, activation: Optional[str] = "silu",
                         pad_slot_id: int = -1) -> torch.Tensor:
    """Serving prefill in vLLM's conventions (its causal_conv1d_fn argument order and defaults).

    x: [dim, total_tokens] (any strides), sequence b = tokens query_start_loc[b] .. query_start_loc[b+1]-1
    (int32 [batch+1]; None: one sequence); or [batch, dim, seqlen] without query_start_loc. Returns out with
    x's shape and layout.
    conv_states: the state pool [num_slots, dim, state_len >= width-1], x's dtype, any strides, updated in
    place: sequence b starts from its slot cache_indices[b] (int32 [batch]; None: slot b) where
    has_initial_state[b] (bool [batch]; None: from zeros), and its slot ends holding its final state (the
    last state_len entries of its initial window and tokens). A sequence whose slot is pad_slot_id writes no
    output (its columns of out are left unwritten) and touches no slot; slots not named are not touched.
    Forward only: raises when an input requires grad.
    """
    use_silu = _silu_flag(activation)
    check_tensor("x", x, ndim=(2, 3))
    x3 = x.unsqueeze(0) if x.dim() == 2 else x
    bias = _check_weight_bias(x3, weight, bias)
    if isinstance(pad_slot_id, bool) or not isinstance(pad_slot_id, int):
        raise TypeError(f"pad_slot_id must be an int, got {type(pad_slot_id).__name__}")
    dim, width = weight.shape
    if x.dim() == 3:
        if query_start_loc is not None:
            raise ValueError("query_start_loc must be None when x is [batch, dim, seqlen]; pass x as "
                             "[dim, total_tokens] for packed sequences")
        batch = x.shape[0]
    else:
        if query_start_loc is not None:
            query_start_loc = checks.check_cu_seqlens("query_start_loc", query_start_loc, x.shape[1], x)
        batch = 1 if query_start_loc is None else query_start_loc.shape[0] - 1
    num_slots = None
    if conv_states is not None:
        check_tensor("conv_states", conv_states, ndim=(3,))
        if conv_states.dtype != x.dtype:
            raise TypeError(f"conv_states has dtype {conv_states.dtype} but x has {x.dtype}; they must match")
        if conv_states.shape[1] != dim or conv_states.shape[2] < width - 1:
            raise ValueError(f"conv_states must have shape (num_slots, dim={dim}, state_len>={width - 1}), "
                             f"got {tuple(conv_states.shape)}")
        check_same_device("x", x, conv_states=conv_states)
        num_slots = conv_states.shape[0]
        if cache_indices is None and num_slots < batch:
            raise ValueError(f"conv_states has {num_slots} slots for {batch} sequences; pass cache_indices")
        if not _is_compiling():
            check_no_alias("conv_states", conv_states, (("x", x), ("weight", weight), ("bias", bias)))
    if cache_indices is not None:
        cache_indices = checks.check_slots("cache_indices", cache_indices, batch,
                                           num_slots if num_slots is not None else 2**31 - 1, pad_slot_id, x)
    if has_initial_state is not None:
        if conv_states is None:
            raise ValueError("has_initial_state needs conv_states (the pool the initial states are read from)")
        has_initial_state = checks.check_int_tensor("has_initial_state", has_initial_state, (batch,), x,
                                                    dtype=torch.bool)
    backend_of(x)
    _check_no_grad("causal_conv1d_varlen", "it is serving prefill, forward only", x=x, weight=weight, bias=bias)
    if not use_direct_call():
        return torch.ops.aiter_lite.causal_conv1d_varlen(x, weight, bias, conv_states, query_start_loc, cache_indices,
                                                         has_initial_state, use_silu, pad_slot_id)
    out = torch.empty_like(x)
    if x.numel() or conv_states is not None:
        launch_varlen(out, x, weight, bias, conv_states, query_start_loc, cache_indices, has_initial_state,
                      use_silu, pad_slot_id)
    return out


def causal_conv1d_update(x: torch.Tensor, conv_state: torch.Tensor, weight: torch.Tensor,
                         bias: Optional[torch.Tensor] = None, activation: Optional[str] = None,
                         cache_seqlens: Optional[torch.Tensor] = None,
                         conv_state_indices: Optional[torch.Tensor] = None, pad_slot_id: int = -1) -> torch.Tensor:
    """Decode step with the semantics of causal-conv1d's causal_conv1d_update (and vLLM's pad_slot_id).

    x: [batch, dim] or [batch, dim, seqlen]; conv_state: [batch (or pool), dim, state_len >= width-1],
    x's dtype, updated in place. cache_seqlens (int32 [batch]): conv_state is a circular buffer and
    the new tokens go to (cache_seqlens + t) % state_len. conv_state_indices (int32 [batch]): row b
    uses conv_state[indices[b]]; a negative index marks a padded slot (zero output, state untouched).
    On the CPU an index >= the pool size raises ValueError; on the GPU (where checking would cost a
    device sync) it is treated like a padded slot. pad_slot_id (vLLM's keyword): an index equal to it
    marks a padded slot too (the default, -1, is one of the negative ones).
    """
    use_silu = _silu_flag(activation)
    if pad_slot_id != -1:
        conv_state_indices = _mark_padded_slots(conv_state_indices, pad_slot_id)
    if not _well_formed_update(x, conv_state, weight, bias, cache_seqlens, conv_state_indices):
        _, _, bias, cache_seqlens, conv_state_indices = _check_update(
            x, conv_state, weight, bias, cache_seqlens, conv_state_indices)
    if _grad_enabled() and any(t is not None and t.requires_grad for t in (x, weight, bias, conv_state)):
        # (serving calls run under no_grad/inference_mode and skip this in one call)
        return update_with_grad(x, conv_state, weight, bias, use_silu, cache_seqlens, conv_state_indices,
                                lambda: _run_update(x, conv_state, weight, bias, use_silu, cache_seqlens,
                                                    conv_state_indices))
    return _run_update(x, conv_state, weight, bias, use_silu, cache_seqlens, conv_state_indices)


def _mark_padded_slots(conv_state_indices, pad_slot_id):
    """conv_state_indices with every entry equal to pad_slot_id set to -1 (the kernels' padded slot)."""
    if isinstance(pad_slot_id, bool) or not isinstance(pad_slot_id, int):
        raise TypeError(f"pad_slot_id must be an int, got {type(pad_slot_id).__name__}")
    if conv_state_indices is None or pad_slot_id < 0:
        return conv_state_indices  # no pool indices, or a negative id: already a padded slot
    if not isinstance(conv_state_indices, torch.Tensor):
        return conv_state_indices  # the full checks name it
    return conv_state_indices.masked_fill(conv_state_indices == pad_slot_id, -1)


def _run_update(x, conv_state, weight, bias, use_silu, cache_seqlens, conv_state_indices) -> torch.Tensor:
    if use_direct_call():  # x stays 2-D or 3-D: _launch_update reads a 2-D x as seqlen 1 (no view ops)
        out = torch.empty_like(x)
        _launch_update(out, x, conv_state, weight, bias, use_silu, cache_seqlens, conv_state_indices)
        return out
    squeeze = x.dim() == 2
    out = torch.ops.aiter_lite.causal_conv1d_update(x.unsqueeze(-1) if squeeze else x, conv_state, weight, bias,
                                                    use_silu, cache_seqlens, conv_state_indices)
    return out.squeeze(-1) if squeeze else out


def _well_formed_update(x, conv_state, weight, bias, cache_seqlens, conv_state_indices) -> bool:
    """The common decode call (plain tensors on one GPU, no index tensors, every shape and dtype as
    the full checks want) in one cheap test; anything else goes through _check_update."""
    try:
        if cache_seqlens is not None or conv_state_indices is not None or not x.is_cuda:
            return False
        shape, sshape, wshape = x.shape, conv_state.shape, weight.shape
        dtype = x.dtype
        if (len(shape) not in (2, 3) or len(sshape) != 3 or len(wshape) != 2 or dtype not in DTYPE_CODES
                or conv_state.dtype != dtype or weight.dtype not in DTYPE_CODES or wshape[0] != shape[1]
                or wshape[1] < 1 or sshape[0] != shape[0] or sshape[1] != shape[1] or sshape[2] < wshape[1] - 1):
            return False
        if bias is not None and (bias.dim() != 1 or bias.shape[0] != shape[1] or bias.dtype != weight.dtype):
            return False
        dev = x.get_device()
        return (conv_state.get_device() == dev and weight.get_device() == dev
                and (bias is None or bias.get_device() == dev))
    except (AttributeError, TypeError):  # not tensors: the full checks say which argument
        return False


def _check_update(x, conv_state, weight, bias, cache_seqlens, conv_state_indices):
    """The full argument checks of causal_conv1d_update (each error names its argument).
    Returns (squeeze, x as [B, D, L], bias, cache_seqlens, conv_state_indices)."""
    check_tensor("x", x, ndim=(2, 3))
    squeeze = x.dim() == 2
    x3 = x.unsqueeze(-1) if squeeze else x
    batch, dim, _ = x3.shape
    bias = _check_weight_bias(x3, weight, bias)
    check_tensor("conv_state", conv_state, ndim=(3,))
    width = weight.shape[1]
    if conv_state.dtype != x.dtype:
        raise TypeError(f"conv_state has dtype {conv_state.dtype} but x has {x.dtype}; they must match")
    if conv_state.shape[1] != dim or conv_state.shape[2] < width - 1:
        raise ValueError(f"conv_state must have shape (pool, dim={dim}, state_len>={width - 1}), "
                         f"got {tuple(conv_state.shape)}")
    if conv_state_indices is None and conv_state.shape[0] != batch:
        raise ValueError(f"conv_state must have batch={batch} rows (or pass conv_state_indices), "
                         f"got {tuple(conv_state.shape)}")
    check_same_device("x", x, conv_state=conv_state)
    cache_seqlens = check_index_tensor("cache_seqlens", cache_seqlens, batch, x.device)
    conv_state_indices = check_index_tensor("conv_state_indices", conv_state_indices, batch, x.device)
    backend_of(x)
    return squeeze, x3, bias, cache_seqlens, conv_state_indices
