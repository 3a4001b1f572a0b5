"""aiter_lite.matmul's gradients (CPU): against float64 torch autograd, for every epilogue, transposed,
batched and broadcast operands, under torch.compile(fullgraph) too; and the cases that must raise."""
import pytest
import torch

import aiter_lite
from aiter_lite.ops.matmul import matmul_ref
from aiter_lite.testing import rel_error

ACTS = [None, "relu", "gelu", "gelu_tanh", "silu"]


def _leaf(t):
    return t.detach().clone().requires_grad_(True)


def _grads(fn, tensors, grad_out):
    out = fn(*tensors)
    out.backward(grad_out.to(out.dtype))
    return out, [t.grad for t in tensors]


def _check_against_float64(a, b, bias, residual, act, alpha, beta, dtype=torch.float32, tol=1e-5, **kw):
    inputs = [x for x in (a, b, bias, residual) if x is not None]
    ours = [_leaf(x.to(dtype) if x is not residual else x.to(kw.get("out_dtype") or dtype)) for x in inputs]
    ref = [_leaf(x.double()) for x in inputs]

    def split(ts):
        it = iter(ts)
        return [next(it) if x is not None else None for x in (a, b, bias, residual)]

    def ours_fn(*ts):
        xa, xb, xbias, xres = split(ts)
        return aiter_lite.matmul(xa, xb, bias=xbias, activation=act, residual=xres, alpha=alpha, beta=beta, **kw)

    def ref_fn(*ts):
        xa, xb, xbias, xres = split(ts)
        return matmul_ref(xa, xb, bias=xbias, activation=act, residual=xres, alpha=alpha, beta=beta)

    shape = ref_fn(*[r.detach() for r in ref]).shape
    grad = torch.randn(shape, dtype=torch.float64)
    out, g = _grads(ours_fn, ours, grad)
    out_ref, g_ref = _grads(ref_fn, ref, grad)
    assert rel_error(out, out_ref) <= tol
    for name, x, y in zip("a b bias residual".split(), g, g_ref):
        assert x is not None, f"no gradient for {name}"
        assert rel_error(x, y) <= tol, name


@pytest.mark.parametrize("act", ACTS)
def test_grad_every_epilogue(act):
    m, n, k = 37, 29, 41
    _check_against_float64(torch.randn(m, k), torch.randn(k, n), torch.randn(n), torch.randn(m, n), act, 0.7, -1.3)


@pytest.mark.parametrize("case", ["a3-b2", "a2-b3", "a3-b3", "a1-b3", "a3-b1", "at-bt"])
def test_grad_batched_and_broadcast(case):
    m, n, k, batch = 13, 11, 17, 3
    shapes = {"a3-b2": ((batch, m, k), (k, n)), "a2-b3": ((m, k), (batch, k, n)),
              "a3-b3": ((batch, m, k), (batch, k, n)), "a1-b3": ((1, m, k), (batch, k, n)),
              "a3-b1": ((batch, m, k), (1, k, n)), "at-bt": ((batch, k, m), (n, k))}[case]
    a, b = torch.randn(*shapes[0]), torch.randn(*shapes[1])
    if case == "at-bt":  # transposed views
        a, b = a.mT, b.mT
    _check_against_float64(a, b, torch.randn(n), None, "silu", 1.0, 1.0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_grad_16bit_and_fp32_output(dtype):
    m, n, k = 21, 19, 23
    _check_against_float64(torch.randn(m, k), torch.randn(k, n), torch.randn(n), torch.randn(m, n), "gelu", 1.0, 0.5,
                           dtype=dtype, tol=2e-2, out_dtype=torch.float32)


def test_grad_only_where_needed():
    a, b = torch.randn(6, 5, requires_grad=True), torch.randn(5, 4)
    aiter_lite.matmul(a, b, activation="relu").sum().backward()
    assert a.grad is not None and b.grad is None


def test_double_backward():
    a = torch.randn(5, 4, dtype=torch.float32, requires_grad=True)
    b = torch.randn(4, 3, requires_grad=True)
    (ga,) = torch.autograd.grad(aiter_lite.matmul(a, b).pow(2).sum(), a, create_graph=True)
    ga.sum().backward()
    a64, b64 = _leaf(a.double()), _leaf(b.double())
    (ga64,) = torch.autograd.grad(torch.matmul(a64, b64).pow(2).sum(), a64, create_graph=True)
    ga64.sum().backward()
    assert rel_error(b.grad, b64.grad) <= 1e-5


def test_no_grad_call_has_no_graph():
    a, b = torch.randn(4, 3, requires_grad=True), torch.randn(3, 2)
    with torch.no_grad():
        c = aiter_lite.matmul(a, b)
    assert not c.requires_grad and c.grad_fn is None
    assert aiter_lite.matmul(a, b).grad_fn is not None


def test_out_with_grad_raises():
    a, b = torch.randn(4, 3, requires_grad=True), torch.randn(3, 2)
    with pytest.raises(ValueError, match="out"):
        aiter_lite.matmul(a, b, torch.empty(4, 2))


@pytest.mark.slow
def test_compile_forward_backward():
    a, b, bias = torch.randn(3, 9, 8), torch.randn(8, 7), torch.randn(7)

    def f(a, b, bias):
        return aiter_lite.matmul(a, b, bias=bias, activation="gelu_tanh").square().sum()

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    ours = [_leaf(t) for t in (a, b, bias)]
    eager = [_leaf(t) for t in (a, b, bias)]
    compiled(*ours).backward()
    f(*eager).backward()
    for x, y in zip(ours, eager):
        assert rel_error(x.grad, y.grad) <= 1e-5


def test_opcheck():
    a, b, bias, r = torch.randn(5, 4), torch.randn(4, 3), torch.randn(3), torch.randn(5, 3)
    torch.library.opcheck(torch.ops.aiter_lite.matmul.default,
                          (a.requires_grad_(), b.requires_grad_(), bias, r, 2, 0.5, 2.0, None, None, 0, -1),
                          test_utils=("test_schema", "test_autograd_registration", "test_faketensor"))
