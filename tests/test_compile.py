"""torch.compile(fullgraph=True) and torch.profiler see the registered aiter_lite ops."""
import pytest
import torch

import aiter_lite
from aiter_lite.ops import causal_conv1d_ref, causal_conv1d_update_ref, matmul_ref
from aiter_lite.testing import rel_error

pytestmark = pytest.mark.slow


def test_compile_conv_forward():
    x, w, b = torch.randn(2, 16, 37), torch.randn(16, 4), torch.randn(16)

    @torch.compile(fullgraph=True, backend="inductor")
    def f(x, w, b):
        return aiter_lite.causal_conv1d(x, w, b, "silu") * 2.0

    assert rel_error(f(x, w, b), 2.0 * causal_conv1d_ref(x, w, b, "silu")) < 1e-6


def test_compile_conv_fwd_out_variant():
    x, w = torch.randn(2, 16, 37), torch.randn(16, 3)

    @torch.compile(fullgraph=True)
    def f(x, w):
        out = torch.empty_like(x)
        aiter_lite.causal_conv1d_fwd(out, x, w, None, True)
        return out + 1

    assert rel_error(f(x, w) - 1, causal_conv1d_ref(x, w, None, "silu")) < 1e-6


def test_compile_conv_update():
    x, w = torch.randn(3, 16), torch.randn(16, 4)
    state = torch.randn(3, 16, 3)
    ref_state = state.clone()
    ref = causal_conv1d_update_ref(x, ref_state, w, None, "silu")

    @torch.compile(fullgraph=True)
    def f(x, state, w):
        return aiter_lite.causal_conv1d_update(x, state, w, None, "silu")

    assert rel_error(f(x, state, w), ref) < 1e-6
    torch.testing.assert_close(state, ref_state)


def test_compile_matmul():
    a, b = torch.randn(33, 20), torch.randn(20, 17)

    @torch.compile(fullgraph=True)
    def f(a, b):
        return aiter_lite.matmul(a, b).relu()

    assert rel_error(f(a, b), matmul_ref(a, b).relu()) < 1e-5


def test_profiler_shows_ops_by_name():
    x, w = torch.randn(2, 8, 10), torch.randn(8, 4)
    a, b = torch.randn(8, 8), torch.randn(8, 8)
    with torch.profiler.profile() as prof:
        aiter_lite.causal_conv1d(x, w)
        aiter_lite.matmul(a, b)
    names = {e.key for e in prof.key_averages()}
    assert "aiter_lite::causal_conv1d" in names and "aiter_lite::matmul" in names, names
