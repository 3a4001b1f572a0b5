"""The bad-input matrix: each case raises TypeError/ValueError whose message names the argument.
Nothing is launched for any of them (checks run before the module is even loaded)."""
import pytest
import torch

import aiter_lite

f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16


def X(*shape, dtype=f32):
    return torch.randn(*shape).to(dtype)


W, B_, L = 8, 2, 16
x, w, bias = X(B_, W, L), X(W, 4), X(W)
state = X(B_, W, 3)
a, b = X(5, 6), X(6, 7)

CASES = [
    # (id, callable, exception type, argument named in the message)
    ("conv x not a tensor", lambda: aiter_lite.causal_conv1d([1, 2], w), TypeError, "x"),
    ("conv x 2-D", lambda: aiter_lite.causal_conv1d(X(W, L), w), ValueError, "x"),
    ("conv x int dtype", lambda: aiter_lite.causal_conv1d(torch.ones(B_, W, L, dtype=torch.int32), w), TypeError, "x"),
    ("conv x float64", lambda: aiter_lite.causal_conv1d(X(B_, W, L, dtype=torch.float64), w), TypeError, "x"),
    ("conv weight 1-D", lambda: aiter_lite.causal_conv1d(x, X(W)), ValueError, "weight"),
    ("conv weight wrong dim", lambda: aiter_lite.causal_conv1d(x, X(W + 1, 4)), ValueError, "weight"),
    ("conv weight width 0", lambda: aiter_lite.causal_conv1d(x, X(W, 0)), ValueError, "weight"),
    ("conv weight not tensor", lambda: aiter_lite.causal_conv1d(x, 3.0), TypeError, "weight"),
    ("conv bias wrong shape", lambda: aiter_lite.causal_conv1d(x, w, X(W + 2)), ValueError, "bias"),
    ("conv bias dtype mix", lambda: aiter_lite.causal_conv1d(x, w, X(W, dtype=f16)), TypeError, "bias"),
    ("conv bad activation", lambda: aiter_lite.causal_conv1d(x, w, None, "relu"), ValueError, "activation"),
    ("conv bad variant", lambda: aiter_lite.causal_conv1d(x, w, variant="fast"), ValueError, "variant"),
    ("conv_fwd out wrong shape", lambda: aiter_lite.causal_conv1d_fwd(X(B_, W, L + 1), x, w), ValueError, "out"),
    ("conv_fwd out wrong dtype", lambda: aiter_lite.causal_conv1d_fwd(X(B_, W, L, dtype=bf16), x, w), TypeError, "out"),
    ("conv_fwd out aliases x", lambda: aiter_lite.causal_conv1d_fwd(x, x, w), ValueError, "out"),
    ("conv_fwd out overlaps x", lambda: (lambda big: aiter_lite.causal_conv1d_fwd(big[:, :, 1:], big[:, :, :-1], w))(
        X(B_, W, L + 1)), ValueError, "out"),
    ("conv_fwd out expanded", lambda: aiter_lite.causal_conv1d_fwd(X(1, W, L).expand(B_, W, L), x, w),
     ValueError, "out"),
    ("conv_fwd use_silu not bool", lambda: aiter_lite.causal_conv1d_fwd(X(B_, W, L), x, w, None, "yes"),
     TypeError, "use_silu"),
    ("update state dtype", lambda: aiter_lite.causal_conv1d_update(X(B_, W), X(B_, W, 3, dtype=f16), w),
     TypeError, "conv_state"),
    ("update state too short", lambda: aiter_lite.causal_conv1d_update(X(B_, W), X(B_, W, 2), w), ValueError,
     "conv_state"),
    ("update state batch", lambda: aiter_lite.causal_conv1d_update(X(B_, W), X(B_ + 1, W, 3), w), ValueError,
     "conv_state"),
    ("update state dim", lambda: aiter_lite.causal_conv1d_update(X(B_, W), X(B_, W + 1, 3), w), ValueError,
     "conv_state"),
    ("update x 4-D", lambda: aiter_lite.causal_conv1d_update(X(B_, W, 1, 1), state, w), ValueError, "x"),
    ("update seqlens dtype", lambda: aiter_lite.causal_conv1d_update(X(B_, W), state, w,
                                                                     cache_seqlens=torch.zeros(B_, dtype=torch.int64)),
     TypeError, "cache_seqlens"),
    ("update seqlens shape", lambda: aiter_lite.causal_conv1d_update(X(B_, W), state, w,
                                                                     cache_seqlens=torch.zeros(B_ + 1, dtype=torch.int32)),
     ValueError, "cache_seqlens"),
    ("update indices dtype", lambda: aiter_lite.causal_conv1d_update(X(B_, W), state, w,
                                                                     conv_state_indices=torch.zeros(B_)),
     TypeError, "conv_state_indices"),
    ("update indices out of range", lambda: aiter_lite.causal_conv1d_update(
        X(B_, W), state, w, conv_state_indices=torch.tensor([0, 9], dtype=torch.int32)), ValueError,
     "conv_state_indices"),
    ("update state aliases x", lambda: (lambda s: aiter_lite.causal_conv1d_update(s[:, :, :1], s, w))(X(B_, W, 3)),
     ValueError, "conv_state"),
    ("matmul a not tensor", lambda: aiter_lite.matmul("a", b), TypeError, "a"),
    ("matmul a 1-D", lambda: aiter_lite.matmul(X(6), b), ValueError, "a"),
    ("matmul b 4-D", lambda: aiter_lite.matmul(a, X(1, 1, 6, 7)), ValueError, "b"),
    ("matmul K mismatch", lambda: aiter_lite.matmul(a, X(5, 7)), ValueError, "K dim"),
    ("matmul dtype mix", lambda: aiter_lite.matmul(a, X(6, 7, dtype=f16)), TypeError, "b has dtype"),
    ("matmul int dtype", lambda: aiter_lite.matmul(a.int(), b.int()), TypeError, "a"),
    ("matmul batch mismatch", lambda: aiter_lite.matmul(X(2, 5, 6), X(3, 6, 7)), ValueError, "batch"),
    ("matmul out shape", lambda: aiter_lite.matmul(a, b, X(5, 8)), ValueError, "out"),
    ("matmul out dtype", lambda: aiter_lite.matmul(a, b, X(5, 7, dtype=bf16)), TypeError, "out"),
    ("matmul out aliases a", lambda: (lambda sq: aiter_lite.matmul(sq, sq[:, :6].contiguous(), sq))(X(6, 6)),
     ValueError, "out"),
    ("matmul allow_tf32 type", lambda: aiter_lite.matmul(a, b, allow_tf32="yes"), TypeError, "allow_tf32"),
    ("matmul bad variant", lambda: aiter_lite.matmul(a, b, variant="fastest"), ValueError, "variant"),
    ("matmul bad config", lambda: aiter_lite.matmul(a, b, config=-5), ValueError, "config"),
    ("matmul meta device", lambda: aiter_lite.matmul(a.to("meta"), b.to("meta")), ValueError, "device"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input(case):
    _, call, exc, name = case
    with pytest.raises(exc) as info:
        call()
    assert name in str(info.value), str(info.value)


def test_matrix_is_large_enough():
    assert len(CASES) >= 25


def test_bad_input_leaves_no_state_behind():
    # A valid call right after the bad ones works.
    out = aiter_lite.causal_conv1d(x, w, bias, "silu")
    assert torch.isfinite(out).all()
