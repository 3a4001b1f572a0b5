"""The repacking of badly aligned matmul operands (aiter_lite/ops/matmul_repack.py): the decision
and the copy, on the CPU (the GPU path runs the same functions; tests/test_gpu_matmul_wgmma.py
checks the results there)."""
from __future__ import annotations

import pytest
import torch

from aiter_lite.ops.matmul_repack import ALIGN_BYTES, off_16_copies_pay, repack, row_stride, should_repack


def test_row_stride_of_each_orientation():
    a = torch.empty(30, 3000, dtype=torch.float16)
    assert row_stride(a) == 3000
    assert row_stride(a.t()) == 3000  # column-major view: lines along dim -2
    assert row_stride(a[:1]) is None  # one line: its stride is never used
    assert row_stride(a[:, :1]) is None
    assert row_stride(a[:, ::2]) is None  # no unit stride (matmul copies such operands anyway)
    assert row_stride(torch.empty(4, 30, 100)[:, :, :50]) == 100


@pytest.mark.parametrize("hopper", [False, True])
def test_aligned_rows_are_never_repacked(hopper):
    a = torch.empty(3008, 3008, dtype=torch.float16)  # 6016-byte rows: 47 x 128
    assert not should_repack(a, 2.0 * 3008 ** 3, hopper)


def test_hopper_repacks_large_fp32_rows_off_128_bytes_only():
    a = torch.empty(3000, 3000, dtype=torch.float32)  # 12000-byte rows: 16-byte but not 128-byte aligned
    assert should_repack(a, 2.0 * 3000 ** 3, hopper=True)
    assert not should_repack(a, 2.0 * 3000 ** 3, hopper=False)  # cp.async only needs 16 bytes
    small = torch.empty(100, 100, dtype=torch.float32)
    assert not should_repack(small, 2.0 * 100 ** 3, hopper=True)  # the copy would cost more than it saves


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_hopper_keeps_16_bit_rows_off_128_bytes(dtype):
    """The 16-bit wgmma kernel runs such rows itself (2 x 2 multicast clusters where B's rows are off
    the sector grid), faster than a copy would make it."""
    a = torch.empty(3000, 3000, dtype=dtype)  # 6000-byte rows
    assert not should_repack(a, 2.0 * 3000 ** 3, hopper=True)
    assert should_repack(torch.empty(4096, 4095, dtype=dtype), 2.0 * 4096 ** 2 * 4095, hopper=True)


def test_rows_off_16_bytes_are_repacked_on_any_gpu_when_large():
    a = torch.empty(4096, 4095, dtype=torch.float16)
    assert should_repack(a, 2.0 * 4096 * 4096 * 4095, hopper=False)
    # a thin problem (N = 16): the matmul is too short for the copy of a 32 MB operand to pay
    assert not should_repack(a, 2.0 * 4096 * 16 * 4095, hopper=False)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("layout", ["row", "col", "batched", "sliced"])
def test_repack_keeps_values_and_orientation(dtype, layout):
    g = torch.Generator().manual_seed(0)
    base = torch.randn(3, 37, 61, generator=g).to(dtype)
    t = {"row": base[0], "col": base[0].t(), "batched": base, "sliced": base[1, :, 5:50]}[layout]
    r = repack(t)
    assert torch.equal(r, t)
    assert r.shape == t.shape and r.dtype == t.dtype
    stride = row_stride(r)
    assert stride * r.element_size() % ALIGN_BYTES == 0
    assert (r.stride(-1) == 1) == (t.stride(-1) == 1)  # same orientation
    assert r.data_ptr() % ALIGN_BYTES == 0 or r.device.type == "cpu"


@pytest.mark.parametrize("width,offset", [(3000, 0), (3001, 0), (3002, 1), (3004, 2), (64, 0)])
def test_repack_of_any_line_alignment(width, offset):
    # widths and start offsets that 16-, 8-, 4-byte or only 2-byte elements divide
    base = torch.randn(9 * (width + 8) + 8).to(torch.float16)
    t = base[offset:offset + 9 * (width + 3)].view(9, width + 3)[:, :width]
    r = repack(t)
    assert torch.equal(r, t)
    assert row_stride(r) * 2 % ALIGN_BYTES == 0


def test_operands_off_16_bytes_are_copied_together_or_not_at_all():
    """Either operand off 16 bytes keeps the call on the SIMT kernel: the copies pay only together."""
    a = torch.empty(128, 1025, dtype=torch.float16)    # rows of 2050 bytes
    b = torch.empty(1025, 4095, dtype=torch.float16)   # rows of 8190 bytes
    assert off_16_copies_pay(a, b, 2.0 * 128 * 4095 * 1025)  # the SIMT kernel would take ~40x longer
    assert not off_16_copies_pay(a, b, 2.0 * 2 * 4095 * 1025)  # two rows: the copies cost more
    # A vocabulary projection with 16 tokens: copying the 400 MB weight never pays.
    w = torch.empty(4096, 50257, dtype=torch.bfloat16)
    x = torch.empty(16, 4096, dtype=torch.bfloat16)
    assert not off_16_copies_pay(x, w, 2.0 * 16 * 50257 * 4096)
    assert off_16_copies_pay(torch.empty(1000, 4096, dtype=torch.bfloat16), w, 2.0 * 1000 * 50257 * 4096)
    aligned = torch.empty(64, 64, dtype=torch.float16)
    assert off_16_copies_pay(aligned, aligned, 1.0)  # nothing off 16 bytes: nothing to weigh
