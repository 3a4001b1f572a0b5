"""Every op x dtype on the CPU against float64 references: odd sizes, non-contiguous inputs,
poisoned outputs. The modules build once per session (shared cache from conftest)."""
import itertools

import pytest
import torch

import aiter_lite
from aiter_lite.ops import causal_conv1d_ref, causal_conv1d_update_ref, matmul_ref
from aiter_lite.testing import TOLERANCE, matmul_rel_error, poisoned_like, random_normal, rel_error

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
CPU = torch.device("cpu")


def make_x(b, d, l, dtype, layout):
    if layout == "channel_last":
        return random_normal((b, l, d), dtype, CPU).transpose(1, 2)
    if layout == "strided":
        return random_normal((b, d + 3, 2 * l), dtype, CPU)[:, 1 : d + 1, ::2]
    return random_normal((b, d, l), dtype, CPU)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "channel_last", "strided"])
@pytest.mark.parametrize("seqlen", [1, 2, 63, 129, 1000])
def test_conv_forward(dtype, layout, seqlen):
    for width, bias_on, silu in itertools.product([1, 2, 3, 4, 5, 8], [False, True], [False, True]):
        x = make_x(2, 7, seqlen, dtype, layout)
        weight = random_normal((7, width), dtype, CPU)
        bias = random_normal((7,), dtype, CPU) if bias_on else None
        act = "silu" if silu else None
        out = aiter_lite.causal_conv1d_fwd(poisoned_like(x), x, weight, bias, silu)
        ref = causal_conv1d_ref(x, weight, bias, act)
        assert rel_error(out, ref) <= TOLERANCE[dtype], (width, bias_on, silu)
        functional = aiter_lite.causal_conv1d(x, weight, bias, act)
        assert functional.stride() == torch.empty_like(x).stride()
        torch.testing.assert_close(functional, out, rtol=0, atol=0)


@pytest.mark.parametrize("x_dtype", [torch.float16, torch.bfloat16])
def test_conv_fp32_weights_with_half_input(x_dtype):
    x = random_normal((3, 33, 129), x_dtype, CPU)
    weight, bias = random_normal((33, 4), torch.float32, CPU), random_normal((33,), torch.float32, CPU)
    out = aiter_lite.causal_conv1d(x, weight, bias, "silu")
    assert out.dtype == x_dtype
    assert rel_error(out, causal_conv1d_ref(x, weight, bias, "silu")) <= TOLERANCE[x_dtype]


def test_conv_empty_bias_means_no_bias():
    x, w = random_normal((1, 4, 10), torch.float32, CPU), random_normal((4, 3), torch.float32, CPU)
    torch.testing.assert_close(aiter_lite.causal_conv1d(x, w, torch.empty(0)), aiter_lite.causal_conv1d(x, w))


def test_conv_zero_size_returns_without_launch():
    x = torch.empty(0, 4, 10)
    assert aiter_lite.causal_conv1d(x, torch.randn(4, 3)).shape == (0, 4, 10)
    assert aiter_lite.causal_conv1d(torch.empty(2, 4, 0), torch.randn(4, 3)).shape == (2, 4, 0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seqlen", [1, 2, 4])
@pytest.mark.parametrize("mode", ["shift", "circular", "indices"])
def test_conv_update(dtype, seqlen, mode):
    batch, dim = 5, 19
    for width, extra_state in itertools.product([1, 2, 4, 6], [0, 3]):
        state_len = max(width - 1, 1) + extra_state
        pool = batch + 3 if mode == "indices" else batch
        x = random_normal((batch, dim, seqlen), dtype, CPU)
        state = random_normal((pool, dim, state_len), dtype, CPU)
        weight = random_normal((dim, width), dtype, CPU)
        bias = random_normal((dim,), dtype, CPU)
        seqlens = torch.randint(0, 3 * state_len, (batch,), dtype=torch.int32) if mode == "circular" else None
        indices = None
        if mode == "indices":
            indices = torch.randperm(pool, dtype=torch.int32)[:batch].contiguous()
            indices[1] = -1  # a padded slot
        ref_state = state.clone()
        ref = causal_conv1d_update_ref(x, ref_state, weight, bias, "silu", seqlens, indices)
        out = aiter_lite.causal_conv1d_update(x, state, weight, bias, "silu", seqlens, indices)
        assert rel_error(out, ref) <= TOLERANCE[dtype], (width, extra_state)
        torch.testing.assert_close(state, ref_state, rtol=0, atol=0)
        if mode == "indices":
            assert (out[1] == 0).all()


def test_conv_update_2d_input():
    x, state = random_normal((3, 8), torch.float32, CPU), random_normal((3, 8, 3), torch.float32, CPU)
    w = random_normal((8, 4), torch.float32, CPU)
    ref_state = state.clone()
    ref = causal_conv1d_update_ref(x, ref_state, w)
    out = aiter_lite.causal_conv1d_update(x, state, w)
    assert out.shape == (3, 8) and rel_error(out, ref) <= 1e-6
    torch.testing.assert_close(state, ref_state)


SIZES = [1, 7, 16, 127, 129]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul(dtype, ta, tb):
    for m, n, k in itertools.product(SIZES, SIZES, [1, 16, 129]):
        a = random_normal((k, m), dtype, CPU).t() if ta else random_normal((m, k), dtype, CPU)
        b = random_normal((n, k), dtype, CPU).t() if tb else random_normal((k, n), dtype, CPU)
        out = aiter_lite.matmul(a, b, poisoned_like(torch.empty(m, n, dtype=dtype)))
        # scale-aware: a 1x1 output of 129 cancelling terms is judged by the size of its terms
        assert matmul_rel_error(out, a, b) <= TOLERANCE[dtype], (m, n, k)


@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_batched_and_broadcast(dtype):
    a = random_normal((3, 33, 40), dtype, CPU)
    b = random_normal((3, 40, 17), dtype, CPU)
    assert rel_error(aiter_lite.matmul(a, b), matmul_ref(a, b)) <= TOLERANCE[dtype]
    b2 = random_normal((40, 17), dtype, CPU)
    assert rel_error(aiter_lite.matmul(a, b2), matmul_ref(a, b2)) <= TOLERANCE[dtype]
    a_strided = random_normal((3, 66, 80), dtype, CPU)[:, ::2, ::2]
    assert rel_error(aiter_lite.matmul(a_strided, b), matmul_ref(a_strided, b)) <= TOLERANCE[dtype]


@pytest.mark.parametrize("m,n,k", [(300, 257, 513), (512, 512, 512), (1000, 700, 300), (769, 64, 1100)])
def test_matmul_large_fp32(m, n, k):
    # Sizes past one cache tile: edge tiles, tile sizes capped at the packing granularity.
    a, b = random_normal((m, k), torch.float32, CPU), random_normal((k, n), torch.float32, CPU)
    assert rel_error(aiter_lite.matmul(a, b), matmul_ref(a, b)) <= 1e-5


def test_matmul_zero_sizes():
    assert aiter_lite.matmul(torch.randn(0, 3), torch.randn(3, 4)).shape == (0, 4)
    out = aiter_lite.matmul(torch.randn(2, 0), torch.randn(0, 4))
    assert out.shape == (2, 4) and (out == 0).all()


@pytest.mark.parametrize("view", ["strided", "expanded"])
def test_conv_update_index_tensors_that_are_views(view):
    """cache_seqlens / conv_state_indices passed as a strided slice, or cache_seqlens as an expanded
    (stride-0) view: the kernels read them with unit stride, so the op copies them first (before, a
    strided view gave wrong rows and an expanded one read past its single element)."""
    batch, dim, width, pool = 4, 8, 4, 6
    x = random_normal((batch, dim), torch.float32, CPU)
    state = random_normal((pool, dim, width + 1), torch.float32, CPU)
    weight = random_normal((dim, width), torch.float32, CPU)
    if view == "strided":
        indices = torch.tensor([5, 0, 3, 0, -1, 0, 2, 0], dtype=torch.int32)[::2]
        seqlens = torch.tensor([7, 0, 1, 0, 2, 0, 9, 0], dtype=torch.int32)[::2]
    else:
        indices = torch.tensor([5, 3, -1, 2], dtype=torch.int32)
        seqlens = torch.tensor([3], dtype=torch.int32).expand(batch)
    ref_state = state.clone()
    ref = causal_conv1d_update_ref(x, ref_state, weight, None, "silu", seqlens, indices)
    out = aiter_lite.causal_conv1d_update(x, state, weight, None, "silu", seqlens, indices)
    assert rel_error(out, ref) <= 1e-6
    torch.testing.assert_close(state, ref_state, rtol=0, atol=0)


@pytest.mark.parametrize("pad_slot_id", [3, 6, -1])
def test_conv_update_pad_slot_id(pad_slot_id):
    """vLLM's pad_slot_id keyword: a row whose index equals it is a padded slot (zero output, no slot
    touched), whatever its value: a slot number inside the pool (3), one past it (6), the default -1."""
    batch, dim, width, pool = 4, 8, 4, 6
    x = random_normal((batch, dim), torch.float32, CPU)
    state = random_normal((pool, dim, width - 1), torch.float32, CPU)
    weight = random_normal((dim, width), torch.float32, CPU)
    indices = torch.tensor([5, pad_slot_id, 0, 2], dtype=torch.int32)
    ref_state = state.clone()
    ref_indices = torch.where(indices == pad_slot_id, -1, indices).to(torch.int32)
    ref = causal_conv1d_update_ref(x, ref_state, weight, None, "silu", None, ref_indices)
    out = aiter_lite.causal_conv1d_update(x, state, weight, None, "silu", conv_state_indices=indices,
                                          pad_slot_id=pad_slot_id)
    assert (out[1] == 0).all() and rel_error(out, ref) <= 1e-6
    torch.testing.assert_close(state, ref_state, rtol=0, atol=0)
    if 0 <= pad_slot_id < pool:
        other = aiter_lite.causal_conv1d_update(x, state.clone(), weight, None, "silu", conv_state_indices=indices)
        assert rel_error(other[1], out[1]) > 0.5  # without the keyword, slot 3 is a real slot
    with pytest.raises(TypeError, match="pad_slot_id"):
        aiter_lite.causal_conv1d_update(x, state, weight, conv_state_indices=indices, pad_slot_id=1.5)


def test_matmul_cluster_slots_without_a_gpu():
    """The planner mirror's cluster query: 0 off the GPU (no clusters), a clear error for a size the
    hardware has no clusters of."""
    from aiter_lite.ops.matmul import matmul_cluster_slots

    assert matmul_cluster_slots(4, "cpu") == 0
    if not torch.cuda.is_available():
        assert matmul_cluster_slots(2) == 0
    with pytest.raises(ValueError, match="size"):
        matmul_cluster_slots(3, "cpu")


@pytest.mark.parametrize("which", ["x", "weight", "bias"])
def test_conv_requires_grad_is_never_cut_silently(which):
    """The functional form differentiates; the out= form (not differentiable) raises."""
    tensors = {"x": torch.randn(2, 4, 9), "weight": torch.randn(4, 3), "bias": torch.randn(4)}
    tensors[which].requires_grad_()
    assert aiter_lite.causal_conv1d(tensors["x"], tensors["weight"], tensors["bias"]).requires_grad
    with pytest.raises(RuntimeError, match=which):
        aiter_lite.causal_conv1d_fwd(torch.empty(2, 4, 9), tensors["x"], tensors["weight"], tensors["bias"])
    with torch.no_grad():
        assert not aiter_lite.causal_conv1d(tensors["x"], tensors["weight"], tensors["bias"]).requires_grad


@pytest.mark.parametrize("mode", ["shift", "circular", "indices", "2d"])
@pytest.mark.parametrize("activation", [None, "silu"])
def test_conv_update_gradients(mode, activation):
    """causal_conv1d_update differentiates in x, weight and bias (as causal-conv1d's own tests call it):
    against float64 autograd through the reference step on the same pre-update state; conv_state is
    updated exactly as without grad; a conv_state that requires grad raises."""
    torch.manual_seed(3)
    batch, dim = 4, 10
    for width, seqlen in itertools.product([1, 2, 4, 5], [1, 3]):
        seqlen = 1 if mode == "2d" else seqlen
        state_len = max(width - 1, 1) + 2
        pool = batch + 2 if mode == "indices" else batch
        x = random_normal((batch, dim) if mode == "2d" else (batch, dim, seqlen), torch.float32, CPU)
        state = random_normal((pool, dim, state_len), torch.float32, CPU)
        weight, bias = random_normal((dim, width), torch.float32, CPU), random_normal((dim,), torch.float32, CPU)
        seqlens = torch.randint(0, 3 * state_len, (batch,), dtype=torch.int32) if mode == "circular" else None
        indices = None
        if mode == "indices":
            indices = torch.randperm(pool, dtype=torch.int32)[:batch].contiguous()
            indices[2] = -1  # a padded slot: zero output, no gradient
        leaves = [t.clone().requires_grad_() for t in (x, weight, bias)]
        ref_leaves = [t.double().requires_grad_() for t in (x, weight, bias)]
        ref_state, our_state = state.double(), state.clone()
        out = aiter_lite.causal_conv1d_update(*leaves[:1], our_state, *leaves[1:], activation, seqlens, indices)
        ref = causal_conv1d_update_ref(ref_leaves[0], ref_state, *ref_leaves[1:], activation, seqlens, indices)
        torch.testing.assert_close(our_state, ref_state.float(), rtol=0, atol=0)
        dout = random_normal(tuple(out.shape), torch.float32, CPU)
        grads = torch.autograd.grad(out, leaves, dout)
        ref_grads = torch.autograd.grad(ref, ref_leaves, dout.double())
        for name, g, r in zip(("x", "weight", "bias"), grads, ref_grads):
            assert rel_error(g, r) <= 1e-5, (mode, width, seqlen, name)
    with pytest.raises(RuntimeError, match="conv_state"):
        aiter_lite.causal_conv1d_update(x, state[:batch].clone().requires_grad_(), weight)
