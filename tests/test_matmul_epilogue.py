"""aiter_lite.matmul's fused epilogue on the CPU: act(alpha * (a @ b) + bias) + beta * residual against a
float64 reference, every activation, 16-bit inputs with fp32 output, residual aliasing out, bad arguments."""
import pytest
import torch

import aiter_lite
from aiter_lite.ops.matmul import matmul_ref
from aiter_lite.testing import TOLERANCE, poisoned_like, rel_error

ACTS = [None, "relu", "gelu", "gelu_erf", "gelu_tanh", "silu"]


@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_epilogue(dtype, act):
    m, n, k = 67, 45, 129
    a, b = torch.randn(2, m, k, dtype=dtype), torch.randn(k, n, dtype=dtype).mT.contiguous().mT
    bias, res = torch.randn(n, dtype=torch.bfloat16), torch.randn(2, m, n, dtype=dtype)
    out = aiter_lite.matmul(a, b, poisoned_like(res), bias=bias, activation=act, residual=res, alpha=0.75, beta=-0.5)
    ref = matmul_ref(a, b, bias=bias, activation=act, residual=res, alpha=0.75, beta=-0.5)
    assert rel_error(out, ref) <= TOLERANCE[dtype]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_fp32_output(dtype):
    a, b, res = torch.randn(33, 70, dtype=dtype), torch.randn(70, 31, dtype=dtype), torch.randn(33, 31)
    out = aiter_lite.matmul(a, b, residual=res, activation="relu", out_dtype=torch.float32)
    assert out.dtype == torch.float32
    assert rel_error(out, matmul_ref(a, b, residual=res, activation="relu")) <= 1e-6


def test_plan_takes_out_dtype():
    """matmul_plan checks out_dtype as matmul does (float32 for 16-bit inputs; anything else a TypeError naming it)."""
    from aiter_lite.ops.matmul import matmul_plan

    a, b = torch.randn(8, 16, dtype=torch.bfloat16), torch.randn(16, 4, dtype=torch.bfloat16)
    assert matmul_plan(a, b, out_dtype=torch.float32) == "cpu -1"
    assert matmul_plan(a, b, torch.empty(8, 4), out_dtype=torch.float32) == "cpu -1"
    with pytest.raises(TypeError, match="out_dtype"):
        matmul_plan(a, b, out_dtype=torch.float16)
    with pytest.raises(TypeError, match="out"):  # an fp32 out without out_dtype: the result would be bf16
        matmul_plan(a, b, torch.empty(8, 4))


def test_residual_is_out():
    a, b = torch.randn(20, 30), torch.randn(30, 10)
    res = torch.randn(20, 10)
    ref = matmul_ref(a, b, residual=res, beta=2.0)
    out = res.clone()
    aiter_lite.matmul(a, b, out, residual=out, beta=2.0)
    assert rel_error(out, ref) <= 1e-5


def test_k_zero_is_the_epilogue_alone():
    bias, res = torch.randn(4), torch.randn(3, 4)
    out = aiter_lite.matmul(torch.randn(3, 0), torch.randn(0, 4), bias=bias, activation="relu", residual=res)
    torch.testing.assert_close(out, torch.relu(bias).expand(3, 4) + res)


def test_fast_path_matches_general_path():
    a, b, bias = torch.randn(9, 16), torch.randn(16, 8), torch.randn(8)
    fast = aiter_lite.matmul(a, b, bias=bias, activation="silu")
    general = aiter_lite.matmul(a, b, poisoned_like(fast), bias=bias, activation="silu")
    torch.testing.assert_close(fast, general, rtol=0, atol=0)


X = torch.randn


@pytest.mark.parametrize("call, exc, name", [
    (lambda: aiter_lite.matmul(X(5, 6), X(6, 7), bias=X(6)), ValueError, "bias"),
    (lambda: aiter_lite.matmul(X(5, 6), X(6, 7), bias=X(1, 7)), ValueError, "bias"),
    (lambda: aiter_lite.matmul(X(5, 6), X(6, 7), bias=torch.ones(7, dtype=torch.int32)), TypeError, "bias"),
    (lambda: aiter_lite.matmul(X(5, 6), X(6, 7), bias=X(7).to("meta")), ValueError, "bias"),
    (lambda: aiter_lite.matmul(X(5, 6), X(6, 7), residual=X(5, 6)), ValueError, "residual"),
    (lambda: aiter_lite.matmul(X(5, 6), X(6, 7), residual=X(5, 7).half()), TypeError, "residual"),
    (lambda: aiter_lite.matmul(X(5, 6), X(6, 7), activation="tanh"), ValueError, "activation"),
    (lambda: aiter_lite.matmul(X(5, 6), X(6, 7), activation=["relu"]), ValueError, "activation"),
    (lambda: aiter_lite.matmul(X(5, 6), X(6, 7), alpha="2"), TypeError, "alpha"),
    (lambda: aiter_lite.matmul(X(5, 6), X(6, 7), beta=None), TypeError, "beta"),
    (lambda: aiter_lite.matmul(X(5, 6), X(6, 7), out_dtype=torch.float16), TypeError, "out_dtype"),
    (lambda: aiter_lite.matmul(X(5, 6).half(), X(6, 7).half(), out_dtype=torch.int8), TypeError, "out_dtype"),
    (lambda: aiter_lite.matmul(X(5, 6).half(), X(6, 7).half(), X(5, 7).half(), out_dtype=torch.float32),
     TypeError, "out"),
    (lambda: (lambda buf: aiter_lite.matmul(X(5, 6), X(6, 7), buf[:35].view(5, 7), residual=buf[1:36].view(5, 7)))(
        torch.zeros(40)), ValueError, "overlaps residual"),
])
def test_bad_epilogue_arguments(call, exc, name):
    with pytest.raises(exc, match=name):
        call()


def test_fast_path_cache_tells_cpu_from_meta():
    a, b = torch.randn(5, 6), torch.randn(6, 7)
    aiter_lite.matmul(a, b)  # caches the CPU call's key
    with pytest.raises(ValueError, match="device"):
        aiter_lite.matmul(a, b.to("meta"))  # same shapes and device index (-1): must not launch
    with pytest.raises(ValueError, match="device"):
        aiter_lite.matmul(a, b, bias=torch.randn(7).to("meta"))
