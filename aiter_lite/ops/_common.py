"""Shared argument checks and launch plumbing for the ops.

Every check raises TypeError (wrong kind or dtype) or ValueError (wrong shape, device, aliasing)
with a message that starts with the argument's name, before anything is launched.
"""
from __future__ import annotations

from typing import Optional

import torch

# Integer codes of csrc/include/dtype.h.
DTYPE_CODES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
SUPPORTED = "float16, bfloat16 or float32"


_GPU_BACKEND = "hip" if torch.version.hip else "cuda"


def backend_of(t: torch.Tensor) -> str:
    """The JIT backend for a tensor's device (is_cuda/is_cpu: device.type costs ~0.3 us per call)."""
    if t.is_cuda:
        return _GPU_BACKEND
    if t.is_cpu:
        return "cpu"
    raise ValueError(f"device {t.device} is not supported (aiter_lite runs on cpu and cuda/hip tensors)")


def check_tensor(name: str, t, *, ndim: Optional[tuple[int, ...]] = None, float_dtype: bool = True) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if ndim is not None and t.dim() not in ndim:
        raise ValueError(f"{name} must be {' or '.join(f'{n}-D' for n in ndim)}, got shape {tuple(t.shape)}")
    if float_dtype and t.dtype not in DTYPE_CODES:
        raise TypeError(f"{name} has dtype {t.dtype}; supported: {SUPPORTED}")
    return t


def check_same_device(ref_name: str, ref: torch.Tensor, **others) -> None:
    for name, t in others.items():
        if t is not None and t.device != ref.device:
            raise ValueError(f"{name} is on {t.device} but {ref_name} is on {ref.device}; "
                             "all tensors must be on the same device")


def check_index_tensor(name: str, t, length: int, device: torch.device) -> Optional[torch.Tensor]:
    if t is None:
        return None
    check_tensor(name, t, ndim=(1,), float_dtype=False)
    if t.dtype != torch.int32:
        raise TypeError(f"{name} must have dtype torch.int32, got {t.dtype}")
    if t.shape[0] != length:
        raise ValueError(f"{name} must have shape ({length},), got {tuple(t.shape)}")
    if t.device != device:
        raise ValueError(f"{name} is on {t.device} but x is on {device}; all tensors must be on the same device")
    # The kernels read it with unit stride: a strided or expanded view (e.g. idx[::2], or a stride-0
    # broadcast that would read past its one element) is copied (length int32s).
    return t if length <= 1 or t.stride(0) == 1 else t.contiguous()


def _extent(t: torch.Tensor) -> tuple[int, int]:
    """[start, end) byte range a tensor's elements can touch."""
    start = t.data_ptr()
    span = sum((s - 1) * st for s, st in zip(t.shape, t.stride()))
    return start, start + (span + 1) * t.element_size()


def _dense_and_apart(out: torch.Tensor, inputs) -> bool:
    """True when out and every input (pairs of (name, tensor or None)) are contiguous and their byte
    ranges are disjoint; False means: compare the storages and extents."""
    if not out.is_contiguous():
        return False
    p = out.data_ptr()
    n = out.numel() * out.element_size()
    for _, t in inputs:
        if t is None:
            continue
        if not t.is_contiguous():
            return False
        q = t.data_ptr()
        if p < q + t.numel() * t.element_size() and q < p + n:
            return False
    return True


def check_no_alias(out_name: str, out: torch.Tensor, inputs) -> None:
    """out must not overlap any input (pairs of (name, tensor or None)), nor itself (an expanded tensor).

    Dense tensors overlap exactly when their byte ranges do, so when out and every input are
    contiguous integer range tests decide (the hot path); otherwise only inputs that share out's
    storage have their byte extents compared."""
    if out.numel() == 0 or _dense_and_apart(out, inputs):
        return
    if not out.is_contiguous() and torch._debug_has_internal_overlap(out) == 1:
        raise ValueError(f"{out_name} has internally overlapping memory (e.g. an expanded tensor); "
                         "pass a tensor whose elements are distinct")
    storage = out.untyped_storage().data_ptr()
    for name, t in inputs:
        if t is None or t.numel() == 0 or t.untyped_storage().data_ptr() != storage:
            continue
        (o0, o1), (i0, i1) = _extent(out), _extent(t)
        if o0 < i1 and i0 < o1:
            raise ValueError(f"{out_name} overlaps {name} in memory; aiter_lite ops do not support in-place "
                             "or aliased outputs")


_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # absent in CPU-only builds
_current_device = getattr(torch._C, "_cuda_getDevice", None)


def stream_of(t: torch.Tensor) -> int:
    """The raw stream handle to launch on for t's device (0 on the CPU)."""
    return device_and_stream(t)[1]


class on_device:
    """Make t's GPU the current device for the launch (a no-op when it already is, and on the CPU)."""

    __slots__ = ("index", "prev")

    def __init__(self, t: torch.Tensor):
        self.index = t.get_device() if t.is_cuda else -1
        self.prev = -1

    def __enter__(self):
        if self.index >= 0:
            current = _current_device() if _current_device else torch.cuda.current_device()
            if current != self.index:
                self.prev = current
                torch.cuda.set_device(self.index)

    def __exit__(self, *exc):
        if self.prev >= 0:
            torch.cuda.set_device(self.prev)


def device_and_stream(t: torch.Tensor) -> tuple[int, int]:
    """(device index, raw current-stream handle) of t: (-1, 0) on the CPU. One call instead of
    stream_of + on_device on the hot path; callers switch devices (on_device) only when the index
    differs from current_device_index()."""
    if not t.is_cuda:
        return -1, 0
    dev = t.get_device()
    return dev, (_raw_stream(dev) if _raw_stream is not None else torch.cuda.current_stream(dev).cuda_stream)


def current_device_index() -> int:
    return _current_device() if _current_device is not None else torch.cuda.current_device()


_is_compiling = torch.compiler.is_compiling
_profiler_enabled = torch._C._autograd._profiler_enabled


def use_direct_call() -> bool:
    """Eager calls skip the dispatcher (host overhead); compile tracing and profiling use torch.ops."""
    return not _is_compiling() and not _profiler_enabled()
