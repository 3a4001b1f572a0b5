"""matmul with torch.matmul's other shapes (ops/matmul_shapes.py): 1-D operands and several broadcasting
batch dims, against torch.matmul in float64, with gradients, an epilogue and torch.compile; zero-size
batches that broadcast (a batch of 1 against 0 once read out of bounds: a segfault on the CPU); the
shapes torch.matmul refuses raise ValueError here."""
import pytest
import torch
import torch.nn.functional as F

import aiter_lite

SHAPES = [((7,), (7,)), ((7,), (7, 5)), ((4, 7), (7,)), ((3, 4, 7), (7,)), ((7,), (3, 7, 5)),
          ((2, 1, 4, 7), (3, 7, 5)), ((2, 3, 4, 7), (7, 5)), ((4, 7), (2, 3, 7, 5)), ((2, 1, 4, 7), (1, 3, 7, 5)),
          ((6, 4, 7), (2, 1, 7, 5)), ((1, 2, 1, 4, 7), (2, 3, 7, 5)), ((0, 4, 7), (7, 5)), ((2, 1, 4, 7), (0, 7, 5)),
          ((4, 7), (0, 7, 5)), ((1, 4, 7), (0, 7, 5)), ((0, 4, 7), (1, 7, 5))]


def _randn(shape, dtype=torch.float32):
    return torch.randn(shape, dtype=torch.float64).to(dtype)


@pytest.mark.parametrize("sa,sb", SHAPES)
def test_forward_matches_torch_matmul(sa, sb):
    a, b = _randn(sa), _randn(sb)
    ref = torch.matmul(a.double(), b.double())
    out = aiter_lite.matmul(a, b)
    assert out.shape == ref.shape and out.dtype == a.dtype
    torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("sa,sb", [s for s in SHAPES if 0 not in s[0] + s[1]])
def test_gradients_match_torch(sa, sb):
    a, b = _randn(sa).requires_grad_(), _randn(sb).requires_grad_()
    a64, b64 = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    out, ref = aiter_lite.matmul(a, b), torch.matmul(a64, b64)
    g = torch.randn_like(ref)
    ga, gb = torch.autograd.grad(out, (a, b), g.to(out.dtype))
    ra, rb = torch.autograd.grad(ref, (a64, b64), g)
    torch.testing.assert_close(ga.double(), ra, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(gb.double(), rb, rtol=1e-5, atol=1e-5)


def test_epilogue_on_batch_dims_with_gradients():
    a, b = _randn((2, 3, 4, 7)).requires_grad_(), _randn((3, 7, 5)).requires_grad_()
    bias, residual = _randn((5,)).requires_grad_(), _randn((2, 3, 4, 5)).requires_grad_()
    out = aiter_lite.matmul(a, b, bias=bias, activation="gelu_tanh", residual=residual, alpha=0.5, beta=2.0)
    leaves = [t.detach().double().requires_grad_() for t in (a, b, bias, residual)]
    ref = F.gelu(0.5 * torch.matmul(leaves[0], leaves[1]) + leaves[2], approximate="tanh") + 2.0 * leaves[3]
    torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-5)
    g = torch.randn_like(ref)
    for ours, theirs in zip(torch.autograd.grad(out, (a, b, bias, residual), g.float()),
                            torch.autograd.grad(ref, leaves, g)):
        torch.testing.assert_close(ours.double(), theirs, rtol=1e-4, atol=1e-4)


def test_bf16_and_compile():
    a, b = _randn((2, 3, 4, 16), torch.bfloat16), _randn((16,), torch.bfloat16)
    ref = torch.matmul(a.double(), b.double())
    assert (aiter_lite.matmul(a, b).double() - ref).norm() / ref.norm() < 1e-2
    compiled = torch.compile(lambda x, y: aiter_lite.matmul(x, y), fullgraph=True, backend="aot_eager")
    c, d = _randn((2, 1, 4, 7)), _randn((3, 7, 5))
    torch.testing.assert_close(compiled(c, d).double(), torch.matmul(c.double(), d.double()), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("sa,sb", [((7,), (5,)), ((2, 2, 4, 7), (3, 7, 5)), ((2, 3, 7), (3, 3, 7, 5)), ((), (3,))],
                         ids=["k", "batch", "batch3", "0-dim"])
def test_shapes_torch_refuses_raise_value_error(sa, sb):
    with pytest.raises(ValueError):
        aiter_lite.matmul(torch.randn(sa), torch.randn(sb))


def test_out_and_residual_shapes_are_checked():
    a, b = _randn((2, 3, 4, 7)), _randn((7, 5))
    with pytest.raises(ValueError, match="a must be 2-D or 3-D"):
        aiter_lite.matmul(a, b, torch.empty(2, 3, 4, 5))  # out= keeps the kernels' shapes
    with pytest.raises(ValueError, match="residual"):
        aiter_lite.matmul(a, b, residual=torch.randn(3, 4, 5))
