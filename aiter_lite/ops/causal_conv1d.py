"""Causal depthwise conv1d (Mamba style): forward with bias and SiLU, and the decode-step update.

Public functions check every argument, then launch the module for the tensors' device. Eager calls
go straight to the launcher; under torch.compile or the profiler they go through the registered
torch.library ops (aiter_lite::causal_conv1d_fwd, ::causal_conv1d_update), which call the same
launchers.
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F

from ..jit import get_module
from ._common import (_GPU_BACKEND, DTYPE_CODES, _current_device, _is_compiling, _profiler_enabled, _raw_stream,
                      backend_of, check_index_tensor,
                      check_no_alias, check_same_device, check_tensor, current_device_index, device_and_stream,
                      on_device, use_direct_call)

MODULE = "module_causal_conv1d"
VARIANTS = {"auto": 0, "naive": 1, "shared": 2, "vectorized": 3}
_ACTIVATIONS = (None, "silu", "swish")

__all__ = ["causal_conv1d", "causal_conv1d_fwd", "causal_conv1d_update", "causal_conv1d_ref",
           "causal_conv1d_update_ref", "VARIANTS"]


# ---------------------------------------------------------------------------------------------
# Argument checks


def _silu_flag(activation) -> bool:
    if activation not in _ACTIVATIONS:
        raise ValueError(f"activation must be None or 'silu', got {activation!r}")
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
    if use_direct_call():
        _launch_fwd(out, x, weight, bias, use_silu, VARIANTS[variant])
    else:
        torch.ops.aiter_lite.causal_conv1d_fwd(out, x, weight, bias, use_silu, VARIANTS[variant])
    return out


def causal_conv1d(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
                  activation: Optional[str] = None, *, variant: str = "auto", cp_context=None) -> torch.Tensor:
    """Functional forward: returns a new tensor laid out like x. activation: None or "silu".
    cp_context: x is this rank's chunk of a sequence split over a process group (aiter_lite.distributed)."""
    if cp_context is not None:
        from ..distributed.function import causal_conv1d_cp
        return causal_conv1d_cp(x, weight, bias, activation, cp_context=cp_context)
    use_silu = _silu_flag(activation)
    out = _launch_fwd_fast(None, x, weight, bias, use_silu, variant)
    if out is not None:
        return out
    if not _well_formed_fwd(x, x, weight, bias, use_silu, variant):
        check_tensor("x", x, ndim=(3,))
        bias = _check_fwd(x, x, weight, bias, use_silu, variant)
    if use_direct_call():
        out = torch.empty_like(x)
        _launch_fwd(out, x, weight, bias, use_silu, VARIANTS[variant], fresh_out=True)
        return out
    return torch.ops.aiter_lite.causal_conv1d(x, weight, bias, use_silu, VARIANTS[variant])


def causal_conv1d_update(x: torch.Tensor, conv_state: torch.Tensor, weight: torch.Tensor,
                         bias: Optional[torch.Tensor] = None, activation: Optional[str] = None,
                         cache_seqlens: Optional[torch.Tensor] = None,
                         conv_state_indices: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Decode step with the semantics of causal-conv1d's causal_conv1d_update.

    x: [batch, dim] or [batch, dim, seqlen]; conv_state: [batch (or pool), dim, state_len >= width-1],
    x's dtype, updated in place. cache_seqlens (int32 [batch]): conv_state is a circular buffer and
    the new tokens go to (cache_seqlens + t) % state_len. conv_state_indices (int32 [batch]): row b
    uses conv_state[indices[b]]; a negative index marks a padded slot (zero output, state untouched).
    On the CPU an index >= the pool size raises ValueError; on the GPU (where checking would cost a
    device sync) it is treated like a padded slot.
    """
    use_silu = _silu_flag(activation)
    if not _well_formed_update(x, conv_state, weight, bias, cache_seqlens, conv_state_indices):
        _, _, bias, cache_seqlens, conv_state_indices = _check_update(
            x, conv_state, weight, bias, cache_seqlens, conv_state_indices)
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


# ---------------------------------------------------------------------------------------------
# float64 references


def causal_conv1d_ref(x, weight, bias=None, activation=None) -> torch.Tensor:
    """Reference forward computed in float64; returns float64."""
    width = weight.shape[1]
    x64, w64 = x.double(), weight.double()
    b64 = None if bias is None or bias.numel() == 0 else bias.double()
    out = F.conv1d(x64, w64.unsqueeze(1), b64, padding=width - 1, groups=x.shape[1])[..., : x.shape[-1]]
    return F.silu(out) if _silu_flag(activation) else out


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
