"""The repacking of badly aligned matmul operands (aiter_lite/ops/matmul_repack.py): the decision
and the copy, on the CPU (the GPU path runs the same functions; tests/test_gpu_matmul_wgmma.py
checks the results there)."""
from __future__ import annotations

import pytest
import torch

from aiter_lite.ops.matmul_repack import ALIGN_BYTES, repack, row_stride, should_repack


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
