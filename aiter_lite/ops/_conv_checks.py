"""Argument checks of the causal conv1d state, packed-sequence and serving arguments.

Each raises TypeError (wrong kind or dtype) or ValueError (wrong shape, device, values, aliasing) with a
message that starts with the argument's name, before anything is launched or any state is touched.

Value checks (a decreasing seq_idx or cu_seqlens, a slot index past the pool) read the tensor on the host:
free on the CPU, one device sync on a GPU. They are skipped while a CUDA graph is being captured and under
torch.compile, where a sync is not allowed (the kernels then treat an out-of-range slot as padding).
"""
from __future__ import annotations

from typing import Optional

import torch

from ._common import _is_compiling, check_same_device, check_tensor


def host_value_checks_allowed(t: torch.Tensor) -> bool:
    if _is_compiling() or t.is_meta:
        return False
    return not (t.is_cuda and torch.cuda.is_current_stream_capturing())


def check_int_tensor(name: str, t, shape: tuple, x: torch.Tensor, dtype=torch.int32) -> torch.Tensor:
    """An index tensor of the given dtype and shape on x's device (copied if its last stride is not 1)."""
    check_tensor(name, t, float_dtype=False)
    if t.dtype != dtype:
        raise TypeError(f"{name} must have dtype {dtype}, got {t.dtype}")
    if tuple(t.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(t.shape)}")
    check_same_device("x", x, **{name: t})
    if t.dim() == 1 and t.numel() > 1 and t.stride(0) != 1:
        t = t.contiguous()  # read with unit stride by the kernels
    return t


def check_nondecreasing(name: str, t: torch.Tensor) -> None:
    """t (1-D, or 2-D: per row) never decreases along its last dim."""
    if t.shape[-1] < 2 or not host_value_checks_allowed(t):
        return
    bad = (t[..., 1:] < t[..., :-1]).nonzero()
    if bad.numel():
        where = tuple(int(v) for v in bad[0])
        raise ValueError(f"{name} must be non-decreasing along its last dim; it decreases after index {where}")


def check_seq_idx(seq_idx, x: torch.Tensor) -> Optional[torch.Tensor]:
    if seq_idx is None:
        return None
    seq_idx = check_int_tensor("seq_idx", seq_idx, (x.shape[0], x.shape[2]), x)
    check_nondecreasing("seq_idx", seq_idx)
    return seq_idx


def check_state_tensor(name: str, t, x: torch.Tensor, shape: tuple) -> torch.Tensor:
    """A state tensor of x's dtype and device with exactly this shape (any strides)."""
    check_tensor(name, t, ndim=(3,))
    if t.dtype != x.dtype:
        raise TypeError(f"{name} has dtype {t.dtype} but x has {x.dtype}; they must match")
    if tuple(t.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(t.shape)}")
    check_same_device("x", x, **{name: t})
    return t


def same_view(a: torch.Tensor, b: torch.Tensor) -> bool:
    return (a.data_ptr() == b.data_ptr() and a.shape == b.shape and a.stride() == b.stride()
            and a.dtype == b.dtype)


def check_cu_seqlens(name: str, t, total: int, x: torch.Tensor) -> torch.Tensor:
    """int32 [batch + 1], non-decreasing, from >= 0 to <= total tokens."""
    check_tensor(name, t, ndim=(1,), float_dtype=False)
    if t.dtype != torch.int32:
        raise TypeError(f"{name} must have dtype torch.int32, got {t.dtype}")
    if t.shape[0] < 1:
        raise ValueError(f"{name} must have batch + 1 >= 1 entries, got shape {tuple(t.shape)}")
    check_same_device("x", x, **{name: t})
    if t.numel() > 1 and t.stride(0) != 1:
        t = t.contiguous()
    if host_value_checks_allowed(t):
        check_nondecreasing(name, t)
        first, last = int(t[0]), int(t[-1])
        if first < 0 or last > total:
            raise ValueError(f"{name} must stay within 0..{total} (the tokens of x), got {first}..{last}")
    return t


def check_slots(name: str, t, batch: int, num_slots: int, pad_slot_id: int, x: torch.Tensor) -> torch.Tensor:
    """int32 [batch] slot indices: each in 0..num_slots-1, or pad_slot_id (or negative) for padding."""
    t = check_int_tensor(name, t, (batch,), x)
    if host_value_checks_allowed(t) and batch:
        bad = ((t >= num_slots) & (t != pad_slot_id)).nonzero()
        if bad.numel():
            i = int(bad[0, 0])
            raise ValueError(f"{name}[{i}] = {int(t[i])} is past the state pool of {num_slots} slots "
                             f"(pad_slot_id is {pad_slot_id})")
    return t
