"""Repacking of GPU matmul operands whose row stride the tensor-core kernels load badly.

The tensor-core kernels load an operand along its unit-stride dim in 16-byte pieces (cp.async on
sm_80, TMA boxes of 128-byte rows on sm_90). Two row strides hurt:
- not a multiple of 16 bytes (e.g. a contiguous fp16 [M, K] with K % 8 != 0): those kernels cannot
  run at all and the call falls back to the SIMT kernel, an order of magnitude slower (22.6-30 TFLOP/s
  on the H100 for the odd shapes of issue 21, 2026-11-24, against 400-700 for the tensor cores). Both
  operands must then be repacked, or the copy buys nothing: they are decided together
  (maybe_repack_pair), against the SIMT kernel's time;
- on Hopper, fp32 (the tf32 wgmma kernel) with rows not a multiple of 128 bytes: every 128-byte TMA
  row straddles two 128-byte lines. (fp16/bf16 are not repacked for that any more: such rows cost the
  16-bit wgmma kernel only where B's rows start at odd multiples of 16 bytes, and there its planner
  runs 2 x 2 multicast clusters, which measured faster than repacking: 3000^3 bf16 on an H100 0.86x
  cuBLAS against 0.74x; see wgmma_b_rows_off_sector in csrc/kernels/matmul.cu.)
For large enough problems such an operand is copied first into a buffer whose rows are padded to a
multiple of 128 bytes (same orientation, same values; the padding is never read). The copy costs one
read and one write of the operand, so it is made only when the model below says the matmul gains at
least twice that. Small problems keep the direct call.
"""
from __future__ import annotations

import functools
from typing import Optional

import torch

__all__ = ["ALIGN_BYTES", "row_stride", "should_repack", "repack", "maybe_repack", "maybe_repack_pair",
           "off_16_copies_pay"]

ALIGN_BYTES = 128
# Rough H100 figures for the decision (the ratio matters, not the absolute values).
_TENSOR_FLOPS = 600e12      # a tensor-core matmul with aligned rows
_MISALIGNED_SLOWDOWN = 0.8  # extra time with misaligned rows, as a fraction of the aligned time
_COPY_BYTES_PER_S = 2.5e12  # read + write of a device copy
_COPY_LAUNCH_S = 4e-6
_SIMT_FLOPS = 25e12         # the SIMT fallback for rows off 16 bytes (H100, fp16/bf16 odd shapes, 2026-11-24)
# Below this no copy can pay (the gain must cover twice the copy's launch alone).
_MIN_FLOPS = 2 * _COPY_LAUNCH_S / (1 / _SIMT_FLOPS - 1 / _TENSOR_FLOPS)


def row_stride(t: torch.Tensor) -> Optional[int]:
    """Elements between consecutive lines of t's unit-stride dim (of its last two), or None when
    that does not apply: a single row or column, or no unit-stride dim."""
    rows, cols = t.shape[-2], t.shape[-1]
    if rows <= 1 or cols <= 1:
        return None
    if t.stride(-1) == 1:
        return t.stride(-2)
    if t.stride(-2) == 1:
        return t.stride(-1)
    return None


@functools.lru_cache(maxsize=None)
def _wants_128(device_index: int) -> bool:
    """The device's tensor-core kernel uses TMA (compute capability 9.0)."""
    return torch.cuda.get_device_capability(device_index) == (9, 0)


def _copy_s(t: torch.Tensor) -> float:
    return 2 * t.numel() * t.element_size() / _COPY_BYTES_PER_S + _COPY_LAUNCH_S


def _off_16_bytes(t: torch.Tensor) -> bool:
    """t's lines start off 16-byte multiples: no tensor-core kernel loads it."""
    stride = row_stride(t)
    return stride is not None and stride * t.element_size() % 16 != 0


def _simt_gain_s(flops: float) -> float:
    return flops / _SIMT_FLOPS - flops / _TENSOR_FLOPS


def should_repack(t: torch.Tensor, flops: float, hopper: bool) -> bool:
    """Whether copying t alone to 128-byte aligned rows pays for a matmul of `flops` (2*M*N*K*batch):
    rows off 16 bytes anywhere (the SIMT kernel's time saved), fp32 rows off 128 bytes on Hopper."""
    stride = row_stride(t)
    if stride is None:
        return False
    stride_bytes = stride * t.element_size()
    if stride_bytes % 16 != 0:
        return _simt_gain_s(flops) >= 2 * _copy_s(t)
    if not hopper or t.element_size() != 4 or stride_bytes % ALIGN_BYTES == 0:
        return False
    return flops / _TENSOR_FLOPS * _MISALIGNED_SLOWDOWN >= 2 * _copy_s(t)


def repack(t: torch.Tensor) -> torch.Tensor:
    """A copy of t (2-D or 3-D, one unit-stride dim among the last two) whose lines start every
    multiple of ALIGN_BYTES; the orientation (row- or column-major) is kept."""
    per = ALIGN_BYTES // t.element_size()
    col_major = t.stride(-1) != 1
    src = t.transpose(-1, -2) if col_major else t  # now row-major-like: lines along the last dim
    lines, width = src.shape[-2], src.shape[-1]
    padded = (width + per - 1) // per * per
    buf = torch.empty(*src.shape[:-2], lines, padded, dtype=t.dtype, device=t.device)[..., :width]
    _copy_wide(buf, src)
    return buf.transpose(-1, -2) if col_major else buf


# Same-size stand-ins for moving raw bytes: a strided copy_ moves one element per index computation,
# so 16-byte elements move a line 8x faster than fp16 ones (no arithmetic happens on them).
_WIDE = ((16, torch.complex128), (8, torch.int64), (4, torch.int32))


def _viewable(t: torch.Tensor, size: int) -> bool:
    """t (unit-stride lines) can be viewed with `size`-byte elements: its line length, other strides
    and start divide into them (checked here, not by catching view's error: an exception per call
    cost tens of microseconds of host time)."""
    es = t.element_size()
    return (t.shape[-1] * es % size == 0 and t.storage_offset() * es % size == 0
            and all(st * es % size == 0 for st in t.stride()[:-1]))


def _copy_wide(dst: torch.Tensor, src: torch.Tensor) -> None:
    """dst.copy_(src) for same-dtype tensors with unit-stride lines, through the widest element
    that divides every line's length, stride and start."""
    for size, wide in _WIDE:
        if size <= src.element_size():
            break
        if _viewable(dst, size) and _viewable(src, size):
            try:
                dst.view(wide).copy_(src.view(wide))
                return
            except RuntimeError:  # a layout the check above did not foresee: the plain copy below
                break
    dst.copy_(src)


def maybe_repack(t: torch.Tensor, flops: float) -> torch.Tensor:
    """t, or its repacked copy when should_repack says so (CUDA tensors only)."""
    if flops < _MIN_FLOPS or not t.is_cuda or torch.version.hip:  # the hot path of small calls stops here
        return t
    hopper = _wants_128(t.device.index if t.device.index is not None else torch.cuda.current_device())
    return repack(t) if should_repack(t, flops, hopper) else t


def maybe_repack_pair(a: torch.Tensor, b: torch.Tensor, flops: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(a, b) with the operands worth it repacked (CUDA tensors only). Operands whose rows are off 16
    bytes keep the call on the SIMT kernel until every one of them is repacked, so they are repacked
    together, when the SIMT time saved covers twice all their copies, or not at all (and then nothing
    is: the SIMT kernel runs whatever the other operand's rows)."""
    if flops < _MIN_FLOPS or not a.is_cuda or torch.version.hip:  # the hot path of small calls stops here
        return a, b
    if not off_16_copies_pay(a, b, flops):
        return a, b
    return maybe_repack(a, flops), maybe_repack(b, flops)


def off_16_copies_pay(a: torch.Tensor, b: torch.Tensor, flops: float) -> bool:
    """Copying every operand whose rows are off 16 bytes pays for a matmul of `flops` (True when there
    is none): the SIMT time saved covers twice all their copies."""
    off = [t for t in (a, b) if _off_16_bytes(t)]
    return not off or _simt_gain_s(flops) >= 2 * sum(_copy_s(t) for t in off)
