"""GPU (-m gpu): the CPU sweep of test_causal_conv1d_states.py / test_causal_conv1d_grad.py on CUDA
(states, seq_idx, varlen states, serving prefill with a pool, gradients of every feature), plus bitwise
reproducibility of the backward under torch.use_deterministic_algorithms(True) and agreement with the
CPU kernels."""
import itertools

import pytest
import torch

import aiter_lite
from aiter_lite.ops import causal_conv1d_ref, causal_conv1d_varlen_states_ref
from conv_states_cases import (LAYOUTS, TOLERANCE, check_deterministic_backward, check_forward, check_varlen, make_states, make_x, packed_seq_idx,
                               random_normal, rel_error)

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]
DEV = torch.device("cuda")
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
GRAD_TOL = {torch.float32: 2e-5, torch.float16: 4e-3, torch.bfloat16: 3e-2}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("width", range(1, 9))
def test_states_and_seq_idx(dtype, layout, width):
    torch.manual_seed(0)
    for seqlen in [1, 3, 129, 1134]:
        x = make_x(2, 67, seqlen, dtype, DEV, layout)
        weight, bias = random_normal((67, width), dtype, DEV), random_normal((67,), dtype, DEV)
        init = make_states(2, 67, width, dtype, DEV, layout)
        check_forward(x, weight, bias, "silu", initial_states=init)
        check_forward(x, weight, None, None)
        seq_idx = packed_seq_idx(2, seqlen, DEV, segments=5)
        check_forward(x, weight, bias, "silu", seq_idx=seq_idx, initial_states=init)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", [1, 2, 3, 4, 5, 7, 8])
def test_channel_last_staged_kernel_features(dtype, width):
    """Channel-last x whose rows of channels start on 16-byte boundaries (the staged kernel with features):
    initial states, seq_idx with padding tokens inside a row, both, final states, rows of many chunks; outputs
    start as NaN (a freed NaN block of their size is what the op allocates next)."""
    torch.manual_seed(7)
    for dim, seqlen in [(72, 1), (72, 3), (264, 129), (40, 1134), (520, 2050)]:
        x = make_x(2, dim, seqlen, dtype, DEV, "channel_last")
        weight, bias = random_normal((dim, width), dtype, DEV), random_normal((dim,), torch.float32, DEV).to(dtype)
        init = make_states(2, dim, width, dtype, DEV, "channel_last")
        seq_idx = packed_seq_idx(2, seqlen, DEV, segments=5)
        if seqlen > 8:
            seq_idx[1, seqlen // 3:seqlen // 3 + 3] = -1
        for kwargs in ({"initial_states": init}, {"seq_idx": seq_idx}, {"seq_idx": seq_idx, "initial_states": init}):
            torch.full((2, seqlen, dim), float("nan"), dtype=dtype, device=DEV)  # freed at once: the poison
            check_forward(x, weight, bias, "silu", **kwargs)


@pytest.mark.parametrize("dtype,dim,seqlen", [(torch.bfloat16, 1024, 4096), (torch.float16, 1032, 4099),
                                               (torch.float32, 520, 4100), (torch.bfloat16, 256, 777),
                                               (torch.float16, 128, 301)])
@pytest.mark.parametrize("width", [2, 3, 4])
def test_channel_last_chunks_kernel_long_rows(dtype, dim, seqlen, width):
    """Channel-last rows for the chunks kernel (causal_conv1d_fwd_features.cu): 16-step chunks on the long rows,
    planned chunks (at most 28 steps with seq_idx) on the short ones (256x777, 128x301), seq_idx checked by a warp
    vote where the channel groups fill whole warps (D = 1032 fp16 does not: the staged kernel takes its seq_idx
    calls): runs, padding tokens inside a row, initial states, final states written by the last chunk (and by the
    finalize launch when written in place)."""
    torch.manual_seed(11)
    x = make_x(4, dim, seqlen, dtype, DEV, "channel_last")
    weight, bias = random_normal((dim, width), torch.float32, DEV), random_normal((dim,), torch.float32, DEV)
    init = make_states(4, dim, width, dtype, DEV, "channel_last")
    seq_idx = packed_seq_idx(4, seqlen, DEV, segments=9)
    seq_idx[2, 100:117] = -1
    seq_idx[3, 1:2] = -1
    for kwargs in ({"initial_states": init}, {"seq_idx": seq_idx}, {"seq_idx": seq_idx, "initial_states": init}):
        torch.full((4, seqlen, dim), float("nan"), dtype=dtype, device=DEV)  # freed at once: the poison
        check_forward(x, weight, bias, "silu", **kwargs)
    pool = init.clone()  # the final states written over the initial ones
    ref_out, ref_fin = causal_conv1d_ref(x, weight, bias, "silu", initial_states=init, return_final_states=True,
                                         seq_idx=seq_idx)
    out, _ = aiter_lite.causal_conv1d(x, weight, bias, "silu", initial_states=pool, return_final_states=True,
                                      final_states_out=pool, seq_idx=seq_idx)
    assert rel_error(out, ref_out) <= TOLERANCE[dtype]
    torch.testing.assert_close(pool.double(), ref_fin, rtol=0, atol=0)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("width", [2, 4, 5])
def test_padding_tokens(layout, width):
    """Negative seq_idx marks padding tokens (trailing, as causal-conv1d's test_causal_conv1d_varlen_padding
    builds them, and in the middle of a row): their output is 0 and no gradient flows from them."""
    from test_causal_conv1d_grad import grads_vs_reference

    torch.manual_seed(5)
    for dtype, seqlen in itertools.product(DTYPES, [7, 300]):
        seq_idx = packed_seq_idx(3, seqlen, DEV)
        seq_idx[0, seqlen // 2:] = -1
        seq_idx[1, 2:5] = -1
        def fresh():
            return make_x(3, 72, seqlen, dtype, DEV, layout), random_normal((72, width), torch.float32, DEV), \
                random_normal((72,), torch.float32, DEV)
        x, w, b = fresh()
        out = check_forward(x, w, b, "silu", seq_idx=seq_idx, final_states=False)
        assert (out.transpose(1, 2)[seq_idx < 0] == 0).all()
        x, w, b = fresh()
        grads_vs_reference(x, w, b, "silu", seq_idx=seq_idx, dtype_tol=max(GRAD_TOL[dtype], GRAD_TOL[torch.float32]))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("width", [2, 4, 8])
def test_padding_tokens_gradients_on_every_path(layout, width):
    """The backward kernels read the dout of padding tokens (seq_idx < 0) as 0 themselves (no masking pass
    before them): lengths that take the rows kernel (aligned rows, one and two vectors a lane), the tile kernel
    (odd L, strided views) and the channel-last kernels (staged and direct), with padding at a row's start,
    inside it across vector and word boundaries, and at its end; dout is NaN-free random, so a padded position
    that leaks changes dx, dweight and dbias."""
    from test_causal_conv1d_grad import grads_vs_reference

    torch.manual_seed(50 + width)
    for dtype, (batch, dim, seqlen) in itertools.product(DTYPES, [(2, 40, 1024), (1, 24, 65536), (2, 24, 777)]):
        seq_idx = packed_seq_idx(batch, seqlen, DEV)
        seq_idx[0, :13] = -1
        seq_idx[0, 200:263] = -1
        seq_idx[-1, seqlen - 37:] = -1
        x = make_x(batch, dim, seqlen, dtype, DEV, layout)
        w, b = random_normal((dim, width), torch.float32, DEV), random_normal((dim,), torch.float32, DEV)
        grads_vs_reference(x, w, b, "silu", seq_idx=seq_idx, dtype_tol=max(GRAD_TOL[dtype], GRAD_TOL[torch.float32]))


@pytest.mark.parametrize("x_dtype", [torch.bfloat16, torch.float16])
def test_fp32_weights(x_dtype):
    x = make_x(3, 256, 777, x_dtype, DEV, "channel_last")
    weight, bias = random_normal((256, 4), torch.float32, DEV), random_normal((256,), torch.float32, DEV)
    check_forward(x, weight, bias, "silu", initial_states=make_states(3, 256, 4, x_dtype, DEV, "channel_last"),
                  seq_idx=packed_seq_idx(3, 777, DEV))


@pytest.mark.parametrize("dtype", DTYPES)
def test_varlen_states(dtype):
    x = random_normal((500, 130), dtype, DEV)
    cu = torch.tensor([0, 0, 1, 5, 200, 500], dtype=torch.int32, device=DEV)
    for state_len in [1, 3, 8]:
        torch.testing.assert_close(aiter_lite.causal_conv1d_varlen_states(x, cu, state_len).double(),
                                   causal_conv1d_varlen_states_ref(x.cpu(), cu.cpu(), state_len).to(DEV), rtol=0,
                                   atol=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("width", [2, 4, 5, 6, 7, 8])
def test_varlen_prefill_with_pool(dtype, layout, width):
    torch.manual_seed(1)
    lengths = [5, 1, 0, 170, 3, 400, 77]
    dim, total = 96, sum(lengths) + 3
    x = make_x(1, dim, total, dtype, DEV, "channel_last" if layout == "channel_last" else "contiguous")[0]
    if layout == "strided":
        x = random_normal((dim + 2, 2 * total), dtype, DEV)[1:dim + 1, ::2]
    qsl = torch.tensor([0, *itertools.accumulate(lengths)], dtype=torch.int32, device=DEV)
    pool = random_normal((9, dim, width - 1), dtype, DEV)
    weight, bias = random_normal((dim, width), dtype, DEV), random_normal((dim,), dtype, DEV)
    idx = torch.tensor([3, -1, 0, 6, 1, 4, 8], dtype=torch.int32, device=DEV)
    has = torch.tensor([True, True, False, False, True, True, False], device=DEV)
    check_varlen_on_gpu(x, weight, bias, pool, qsl, idx, has)


@pytest.mark.parametrize("pad_slot_id", [3, 9, -1])
def test_prefill_then_decode_with_pad_slot_id(pad_slot_id):
    """vLLM's calls on one pool: prefill, then decode steps whose padded rows carry pad_slot_id (a slot
    number inside the pool, one past it, or -1): padded rows touch no slot, the others match the CPU."""
    torch.manual_seed(2)
    dim, width = 64, 4
    pool = random_normal((9, dim, width - 1), torch.bfloat16, DEV)
    weight, bias = random_normal((dim, width), torch.float32, DEV), random_normal((dim,), torch.float32, DEV)
    idx = torch.tensor([5, pad_slot_id, 0, 2], dtype=torch.int32, device=DEV)
    ref_idx = torch.where(idx == pad_slot_id, -1, idx).to(torch.int32).cpu()
    ref_pool = pool.cpu().clone()
    for _ in range(3):
        step = random_normal((4, dim), torch.bfloat16, DEV)
        out = aiter_lite.causal_conv1d_update(step, pool, weight, bias, "silu", conv_state_indices=idx,
                                              pad_slot_id=pad_slot_id)
        ref = aiter_lite.ops.causal_conv1d_update_ref(step.cpu(), ref_pool, weight.cpu(), bias.cpu(), "silu",
                                                      conv_state_indices=ref_idx)
        assert rel_error(out.cpu()[[0, 2, 3]], ref[[0, 2, 3]]) <= TOLERANCE[torch.bfloat16]
        torch.testing.assert_close(pool.cpu(), ref_pool, rtol=0, atol=0)


def check_varlen_on_gpu(x, weight, bias, pool, qsl, idx, has):
    """The reference runs on the CPU copies; compare outputs of real sequences and the whole pool."""
    ref_pool = pool.cpu().clone()
    ref = aiter_lite.ops.causal_conv1d_varlen_ref(x.cpu(), weight.cpu(), bias.cpu(), ref_pool, qsl.cpu(), idx.cpu(),
                                                  has.cpu())
    out = aiter_lite.causal_conv1d_varlen(x, weight, bias, pool, qsl, idx, has)
    bounds = qsl.tolist()
    for b, (s, e) in enumerate(zip(bounds[:-1], bounds[1:])):
        if int(idx[b]) >= 0 and e > s:
            assert rel_error(out[:, s:e].cpu(), ref[:, s:e]) <= TOLERANCE[x.dtype], b
    torch.testing.assert_close(pool.cpu(), ref_pool, rtol=0, atol=0)


def _seq_idx_with_padding(batch, seqlen, runs, generator):
    """packed_seq_idx with a leading run of padding tokens (-1) in every row long enough."""
    seq_idx = packed_seq_idx(batch, seqlen, DEV, segments=runs, generator=generator)
    if seqlen > 4:
        seq_idx[:, :seqlen // 5 + 1] = -1
    return seq_idx


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", range(1, 9))
def test_dense_kernel_states_and_seq_idx(dtype, width):
    """Dense [B, D, L] calls with features take the dense feature kernel (flat 16-byte vectors, masked
    per-element path at sequence starts, row ends and seq_idx changes; final states fused): odd lengths,
    lengths below the width, rows ending inside a vector, single-token runs, padding tokens, many tiles."""
    gen = torch.Generator().manual_seed(width)
    torch.manual_seed(width)
    for batch, dim, seqlen in [(3, 7, 1), (3, 7, 2), (3, 7, 3), (2, 5, 9), (2, 67, 129), (2, 40, 1000),
                               (1, 3, 4099), (2, 24, 2048)]:
        x = make_x(batch, dim, seqlen, dtype, DEV, "contiguous")
        weight, bias = random_normal((dim, width), dtype, DEV), random_normal((dim,), dtype, DEV)
        init = make_states(batch, dim, width, dtype, DEV, "contiguous")
        check_forward(x, weight, bias, "silu", initial_states=init, final_states=False)
        check_forward(x, weight, bias, "silu", initial_states=init, final_states=True)
        check_forward(x, weight, bias, None, final_states=True)
        runs = 7 if seqlen > 7 else 2
        check_forward(x, weight, bias, "silu", seq_idx=packed_seq_idx(batch, seqlen, DEV, runs, gen),
                      final_states=False)
        check_forward(x, weight, bias, "silu", seq_idx=packed_seq_idx(batch, seqlen, DEV, runs, gen),
                      initial_states=init, final_states=True)
        check_forward(x, weight, None, "silu", seq_idx=_seq_idx_with_padding(batch, seqlen, runs, gen),
                      initial_states=init, final_states=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", [1, 2, 4, 5, 8])
def test_seq_idx_on_plain_kernels_with_fixup(dtype, width):
    """seq_idx calls of at least 2^20 elements on [B, D, L] (and of any size on other layouts that are not
    channel-last) run the plain kernels, then a fix-up kernel rewrites the outputs whose window meets a change
    of seq_idx and zeroes the padding tokens: 40 runs a row, a one-token run, padding at a row's start, inside it
    (across 32-position tiles) and at its end, an odd length, initial and final states; the outputs land in a
    freed NaN block."""
    gen = torch.Generator().manual_seed(30 + width)
    torch.manual_seed(30 + width)
    batch, dim, seqlen = 2, 129, 4099  # 1.06 M elements: past the dense kernel's seq_idx limit
    x = make_x(batch, dim, seqlen, dtype, DEV, "contiguous")
    weight, bias = random_normal((dim, width), dtype, DEV), random_normal((dim,), dtype, DEV)
    init = make_states(batch, dim, width, dtype, DEV, "contiguous")
    ids = packed_seq_idx(batch, seqlen, DEV, 40, gen)
    ids[0, 2000:] += 1
    ids[0, 2001:] += 1  # position 2000 alone in its run
    ids[0, 100:163] = -1
    ids[1, :37] = -1
    trailing = ids.clone()
    trailing[1, -70:] = -1  # final states would be ambiguous here: checked without them
    for seq_idx, states in ((ids, True), (trailing, False)):
        poison = torch.full((batch * 2, dim, seqlen), float("nan"), dtype=dtype, device=DEV)
        del poison
        if states:
            check_forward(x, weight, bias, "silu", seq_idx=seq_idx, initial_states=init, final_states=True)
        check_forward(x, weight, bias, "silu", seq_idx=seq_idx, final_states=False)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_dense_kernel_outputs_all_written(dtype):
    """Every output of the dense feature kernel is written: the op's output reuses a freed NaN block."""
    x = make_x(2, 33, 777, dtype, DEV, "contiguous")
    weight, bias = random_normal((33, 4), dtype, DEV), random_normal((33,), dtype, DEV)
    init = make_states(2, 33, 4, dtype, DEV, "contiguous")
    seq_idx = packed_seq_idx(2, 777, DEV, 5)
    for kwargs in ({"initial_states": init}, {"seq_idx": seq_idx}):
        poison = torch.full_like(x, float("nan"))
        del poison
        out = aiter_lite.causal_conv1d(x, weight, bias, "silu", **kwargs)
        assert not out.isnan().any()
        assert rel_error(out, causal_conv1d_ref(x, weight, bias, "silu", **kwargs)) <= TOLERANCE[dtype]


@pytest.mark.parametrize("width", [2, 4, 7])
def test_dense_kernel_final_states_in_place(width):
    """final_states_out is initial_states (a state updated in place): the final states come from a second
    launch after every read of the initial ones, and equal the reference computed from the old states."""
    x = make_x(3, 19, 130, torch.float16, DEV, "contiguous")
    weight, bias = random_normal((19, width), torch.float16, DEV), random_normal((19,), torch.float16, DEV)
    for seq_idx in (None, packed_seq_idx(3, 130, DEV, 3)):
        init = make_states(3, 19, width, torch.float16, DEV, "contiguous")
        ref_out, ref_fin = causal_conv1d_ref(x, weight, bias, "silu", initial_states=init.clone(),
                                             return_final_states=True, seq_idx=seq_idx)
        out, fin = aiter_lite.causal_conv1d(x, weight, bias, "silu", initial_states=init, return_final_states=True,
                                            final_states_out=init, seq_idx=seq_idx)
        assert fin is init
        assert rel_error(out, ref_out) <= TOLERANCE[torch.float16]
        torch.testing.assert_close(fin.double(), ref_fin, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", [2, 3, 4, 5, 8])
def test_dense_kernel_prefill(dtype, width):
    """Serving prefill with x [dim, tokens] contiguous (since session 18 the plain kernels over the packed row,
    then each sequence's first width-1 outputs rewritten; the dense kernel's varlen mode before): sequences of
    length 0, 1, below the width and spanning many tiles, padded slots, a pool with state_len > width-1."""
    gen = torch.Generator().manual_seed(width)
    lengths = [0, 1, 2, 1, 3000, 5, 0, 1500, 7, 1, 2200, 64]
    dim, total = 40, sum(lengths)
    x = random_normal((dim, total), dtype, DEV)
    qsl = torch.tensor([0, *itertools.accumulate(lengths)], dtype=torch.int32, device=DEV)
    weight, bias = random_normal((dim, width), dtype, DEV), random_normal((dim,), dtype, DEV)
    for state_len in (width - 1, width + 2):
        pool = random_normal((20, dim, state_len), dtype, DEV)
        idx = torch.randperm(20, generator=gen)[:len(lengths)].to(torch.int32).to(DEV)
        idx[3] = -1
        idx[7] = -1
        has = (torch.rand(len(lengths), generator=gen) < 0.5).to(DEV)
        check_varlen_on_gpu(x, weight, bias, pool, qsl, idx, has)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", [1, 2, 4, 6])
def test_dense_kernel_prefill_many_short_sequences(dtype, width):
    """Prefill on [dim, tokens] contiguous with hundreds of sequences of 0-40 tokens beside long ones (written
    against the dense kernel's varlen mode: vectors meeting three or more sequences, warp tiles holding more than
    32; now sequences shorter than the head rewrite and heads next to each other), empty sequences, tokens after
    the last sequence, padded slots and initial states among them."""
    gen = torch.Generator().manual_seed(100 + width)
    lengths = (torch.randint(0, 10, (150,), generator=gen).tolist() + [900]
               + torch.randint(1, 40, (60,), generator=gen).tolist() + [1] * 40 + [333])
    dim, total = 24, sum(lengths) + 5
    x = random_normal((dim, total), dtype, DEV)
    qsl = torch.tensor([0, *itertools.accumulate(lengths)], dtype=torch.int32, device=DEV)
    weight, bias = random_normal((dim, width), dtype, DEV), random_normal((dim,), dtype, DEV)
    slots = len(lengths) + 8
    pool = random_normal((slots, dim, max(width - 1, 1)), dtype, DEV)
    idx = torch.randperm(slots, generator=gen)[:len(lengths)].to(torch.int32)
    idx[torch.rand(len(lengths), generator=gen) < 0.1] = -1
    has = torch.rand(len(lengths), generator=gen) < 0.6
    check_varlen_on_gpu(x, weight, bias, pool, qsl, idx.to(DEV), has.to(DEV))


def test_gpu_matches_cpu_kernels_on_prefill():
    x = make_x(1, 64, 300, torch.float32, DEV, "contiguous")[0]
    weight = random_normal((64, 4), torch.float32, DEV)
    qsl = torch.tensor([0, 100, 100, 300], dtype=torch.int32, device=DEV)
    pool = random_normal((4, 64, 3), torch.float32, DEV)
    idx = torch.tensor([2, 0, 3], dtype=torch.int32, device=DEV)
    has = torch.tensor([True, False, True], device=DEV)
    cpu_pool = pool.cpu()
    check_varlen(x.cpu(), weight.cpu(), None, cpu_pool, qsl.cpu(), idx.cpu(), has.cpu())
    aiter_lite.causal_conv1d_varlen(x, weight, None, pool, qsl, idx, has)
    torch.testing.assert_close(pool.cpu(), cpu_pool, rtol=0, atol=0)


@pytest.mark.parametrize("layout", ["contiguous", "channel_last"])
@pytest.mark.parametrize("x_dtype,w_dtype", [(torch.float32, torch.float32), (torch.bfloat16, torch.float32),
                                             (torch.float16, torch.float16)])
def test_grads_every_feature(layout, x_dtype, w_dtype):
    from test_causal_conv1d_grad import grads_vs_reference

    for width, seqlen in itertools.product([1, 2, 4, 5, 8], [1, 129, 1000]):
        def fresh():
            return (make_x(2, 40, seqlen, x_dtype, DEV, layout), random_normal((40, width), w_dtype, DEV),
                    random_normal((40,), w_dtype, DEV))
        tol = max(GRAD_TOL[x_dtype], GRAD_TOL[w_dtype])
        x, w, b = fresh()
        grads_vs_reference(x, w, b, "silu", dtype_tol=tol)
        x, w, b = fresh()
        init = make_states(2, 40, width, x_dtype, DEV, layout)
        grads_vs_reference(x, w, b, "silu", initial_states=init, seq_idx=packed_seq_idx(2, seqlen, DEV),
                           final_states=True, dtype_tol=tol)


@pytest.mark.parametrize("layout", ["contiguous", "channel_last"])
def test_backward_bitwise_reproducible_in_deterministic_mode(layout):
    x = make_x(4, 512, 2048, torch.bfloat16, DEV, layout).requires_grad_()
    w = random_normal((512, 4), torch.float32, DEV).requires_grad_()
    b = random_normal((512,), torch.float32, DEV).requires_grad_()
    dout = random_normal(tuple(x.shape), torch.bfloat16, DEV)
    check_deterministic_backward(x, w, b, dout, runs=5, tol=TOLERANCE[torch.bfloat16])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
@pytest.mark.parametrize("width", range(1, 9))
def test_states_on_plain_kernels(dtype, layout, width):
    """Initial and/or final states alone on a non-channel-last layout take the plain kernels, then a rewrite
    of each row's first width-1 outputs: those outputs are checked on their own (a wrong head would barely
    move the whole tensor's error), for odd lengths, lengths below width-1, and rows the rows kernel takes."""
    torch.manual_seed(width)
    tol = TOLERANCE[dtype]
    for seqlen in [1, 2, 3, 7, 9, 1135]:
        x = make_x(2, 67, seqlen, dtype, DEV, layout)
        weight, bias = random_normal((67, width), dtype, DEV), random_normal((67,), dtype, DEV)
        init = make_states(2, 67, width, dtype, DEV, layout)
        for final in (True, False):
            res = check_forward(x, weight, bias, "silu", initial_states=init, final_states=final)
            out = res[0] if final else res
            ref = causal_conv1d_ref(x, weight, bias, "silu", initial_states=init)
            head = min(width - 1, seqlen)
            if head > 0:
                assert rel_error(out[..., :head], ref[..., :head]) <= tol
        check_forward(x, weight, None, None, final_states=True)  # final states alone



def _rows_seq_idx(batch, seqlen, generator):
    """Packed runs for the rows kernel's seq_idx cut: many runs, a one-token run, a two-token run, padding at a
    row's start, inside a run (a window reads across it) and inside a 32-position marks word boundary."""
    ids = packed_seq_idx(batch, seqlen, DEV, 33, generator)
    ids[0, 700:] += 1
    ids[0, 701:] += 1  # position 700 alone in its run
    ids[0, 900:] += 1
    ids[0, 902:] += 1  # 900, 901: a two-token run
    ids[0, 300:302] = -1  # padding inside a run
    ids[0, 30:35] = -1  # across a marks word
    ids[-1, :17] = -1  # a row that starts with padding
    return ids


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", range(1, 9))
@pytest.mark.parametrize("shape", [(2, 24, 2048), (2, 100, 8192)])
def test_rows_kernel_states_and_seq_idx(dtype, width, shape):
    """Dense [B, D, L] calls with L a multiple of a 16-byte vector take the rows kernel with its features: initial
    states under the first vectors' halo, seq_idx cut at the sequence starts through the marks, padding tokens,
    then the final states. One vector a lane (2 x 24 x 2048) and four (2 x 100 x 8192); outputs poisoned first."""
    gen = torch.Generator().manual_seed(40 + width)
    torch.manual_seed(40 + width)
    batch, dim, seqlen = shape
    x = make_x(batch, dim, seqlen, dtype, DEV, "contiguous")
    weight, bias = random_normal((dim, width), torch.float32, DEV), random_normal((dim,), torch.float32, DEV)
    init = make_states(batch, dim, width, dtype, DEV, "contiguous")
    ids = _rows_seq_idx(batch, seqlen, gen)
    first_run = ids.clone()
    first_run[:, :3 * width] = first_run[:, :1]  # the first sequence reads the initial state
    first_run[-1, :3 * width] = 5 * (batch - 1)
    for kwargs in ({"initial_states": init, "final_states": False}, {"initial_states": init},
                   {"seq_idx": ids, "final_states": False}, {"seq_idx": first_run, "initial_states": init},
                   {"seq_idx": ids, "initial_states": init, "final_states": False}):
        torch.full((batch * 2, dim, seqlen), float("nan"), dtype=dtype, device=DEV)  # freed: outputs land on NaN
        check_forward(x, weight, bias, "silu", **kwargs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", [2, 4, 5, 8])
@pytest.mark.parametrize("shape", [(2, 24, 2048), (2, 100, 8192)])
def test_rows_kernel_seq_idx_not_non_decreasing(dtype, width, shape):
    """seq_idx that decreases (0 1 0 ...) reaches the kernels when the op's host check cannot run (graph capture,
    torch.compile): windows the sequence starts cannot express are computed by the reference's rule (equal ids are
    one sequence). The launcher, which does not check, against the float64 reference."""
    from aiter_lite.ops._conv_launch import launch_fwd_states
    torch.manual_seed(50 + width)
    batch, dim, seqlen = shape
    x = make_x(batch, dim, seqlen, dtype, DEV, "contiguous")
    weight, bias = random_normal((dim, width), torch.float32, DEV), random_normal((dim,), torch.float32, DEV)
    init = make_states(batch, dim, width, dtype, DEV, "contiguous")
    ids = packed_seq_idx(batch, seqlen, DEV, 9)
    ids[:, 1000:1400] = torch.randint(-1, 3, (batch, 400), dtype=torch.int32, device=DEV)
    ids[:, 1:4] = torch.tensor([1, 0, 0], dtype=torch.int32)  # the first run again after another id
    for states in (None, init):
        out = torch.full_like(x, float("nan"))
        fin = torch.full_like(init, float("nan"))
        launch_fwd_states(out, x, weight, bias, True, 0, initial_states=states, final_states=fin, seq_idx=ids)
        ref, ref_fin = causal_conv1d_ref(x, weight, bias, "silu", initial_states=states, return_final_states=True,
                                         seq_idx=ids)
        assert rel_error(out, ref) <= TOLERANCE[dtype]
        torch.testing.assert_close(fin.double(), ref_fin, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", [2, 4, 5, 8])
def test_heads_of_long_rows(dtype, width):
    """The first n < width tokens of long rows as strided views, with initial states (what a context-parallel
    rank recomputes with its halo): the forward's features kernel writes every output alone, the backward of dx and
    dinit alone runs the short-rows kernel (with weight and bias gradients, the tile kernel); outputs, final states
    and gradients against the float64 reference, with and without seq_idx, and the plain forward of such short
    strided rows (the naive kernel)."""
    from test_causal_conv1d_grad import grads_vs_reference

    torch.manual_seed(60 + width)
    tol = max(GRAD_TOL[dtype], GRAD_TOL[torch.float32])
    for n in range(1, width):
        big = random_normal((3, 96, 4096), dtype, DEV)
        x = big[..., 5:5 + n].detach()  # a leaf that keeps the long rows' strides
        weight, bias = random_normal((96, width), torch.float32, DEV), random_normal((96,), torch.float32, DEV)
        init = make_states(3, 96, width, dtype, DEV, "contiguous")
        ids = torch.tensor([[0] * n, [4] * n, [7] + [8] * (n - 1)], dtype=torch.int32, device=DEV)
        check_forward(x, weight, bias, "silu", initial_states=init)
        check_forward(x, weight, bias, "silu", initial_states=init, seq_idx=ids)
        check_forward(x, weight, bias, None, final_states=False)
        grads_vs_reference(x, weight, bias, "silu", initial_states=init, dtype_tol=tol)
        grads_vs_reference(x, weight, bias, "silu", initial_states=init, seq_idx=ids, final_states=True, dtype_tol=tol)
        for seq in (None, ids):  # dx and dinit alone (a rank's halo gradient): the short-rows kernel
            check_short_rows_dx_dinit(x.detach(), weight.detach(), bias.detach(), init.detach(), seq, tol)


def check_short_rows_dx_dinit(x, weight, bias, init, seq_idx, tol):
    """dx and dinitial_states from the launcher asked for nothing else, with a dfinal_states, against the float64
    reference's autograd."""
    from aiter_lite.ops._conv_launch import launch_bwd

    dout = random_normal(tuple(x.shape), x.dtype, DEV)
    dfin = random_normal(tuple(init.shape), x.dtype, DEV)
    dx, dw, db, dinit = launch_bwd(x, weight, bias, dout, init, seq_idx, dfin, True, True, False, False, True, False)
    assert dw.numel() == 0 and db.numel() == 0
    rx, ri = x.double().requires_grad_(), init.double().requires_grad_()
    out, fin = causal_conv1d_ref(rx, weight.double(), bias.double(), "silu", initial_states=ri,
                                 return_final_states=True, seq_idx=seq_idx)
    ref_dx, ref_dinit = torch.autograd.grad((out * dout.double()).sum() + (fin * dfin.double()).sum(), (rx, ri))
    assert rel_error(dx, ref_dx) <= tol
    assert rel_error(dinit, ref_dinit) <= tol


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", [2, 3, 4, 6, 8])
def test_rows_kernel_seq_idx_long_sequences(dtype, width):
    """seq_idx of a few long sequences on the rows kernel: most warp tiles lie inside one sequence and take the plain
    taps, the tiles with a start, a one-token run or padding the cut; against the float64 reference (outputs poisoned
    first), forward and gradients."""
    from test_causal_conv1d_grad import grads_vs_reference

    gen = torch.Generator().manual_seed(70 + width)
    torch.manual_seed(70 + width)
    batch, dim, seqlen = 2, 72, 16384
    x = make_x(batch, dim, seqlen, dtype, DEV, "contiguous")
    weight, bias = random_normal((dim, width), torch.float32, DEV), random_normal((dim,), torch.float32, DEV)
    init = make_states(batch, dim, width, dtype, DEV, "contiguous")
    ids = packed_seq_idx(batch, seqlen, DEV, 3, gen)
    ids[0, 9000:] += 1
    ids[0, 9001:] += 1  # position 9000 alone in its run
    ids[1, 5000:5003] = -1  # padding inside a run
    for kwargs in ({"seq_idx": ids, "final_states": False}, {"seq_idx": ids, "initial_states": init}):
        torch.full((batch * 2, dim, seqlen), float("nan"), dtype=dtype, device=DEV)  # freed: outputs land on NaN
        check_forward(x, weight, bias, "silu", **kwargs)
    grads_vs_reference(x.clone(), weight.clone(), bias.clone(), "silu", seq_idx=ids,
                       dtype_tol=max(GRAD_TOL[dtype], GRAD_TOL[torch.float32]))
