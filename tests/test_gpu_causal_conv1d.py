"""GPU tests of the causal conv1d kernels (csrc/kernels/causal_conv1d_*.cu) against the float64
references of aiter_lite.ops, computed on the GPU. Skipped without CUDA.

Forward sweep: dtype x width 1..8 x layout x seqlen {1, 2, 3, 63, 64, 65, 129, 1000, 4096} x bias x
SiLU x variant (auto, naive, shared, vectorized), on fresh random normal inputs with outputs
prefilled with NaN, so an element a kernel forgets to write fails the finiteness check.
Layouts: contiguous (flat vector kernel), channel_last ([B, L, D] storage viewed as [B, D, L]),
padded (rows contiguous, dim stride L + 5: the shared-memory kernel), strided (a strided slice of a
wider tensor: the naive kernel). Plus: fp32 weights with 16-bit x, strided and misaligned weights,
bias and pointers, out strided unlike x, channel-last with D not a multiple of the vector width,
and (marked slow, guarded by free memory) tensors past 2^31 elements.
Update: seqlen 1..4, state_len W-1 and W+3, shift register and circular buffer (random, negative
and large cache_seqlens), state indices with padded slots and a pool larger than the batch, state
[pool, D, S] and channel-last [pool, S, D]; out and the whole conv_state are compared.

Elementwise check: |out - ref| <= atol + rtol * |ref| with rtol = atol = 1e-5 (fp32), 2e-3 (fp16),
1.6e-2 (bf16); the state must match exactly (it only ever holds copies of inputs).
"""
from __future__ import annotations

import itertools

import pytest
import torch

import aiter_lite
from aiter_lite.ops import causal_conv1d_ref, causal_conv1d_update_ref
from conv_states_cases import tap_by_tap_reference

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
TOL = {torch.float32: (1e-5, 1e-5), torch.float16: (2e-3, 2e-3), torch.bfloat16: (1.6e-2, 1.6e-2)}
VARIANTS = ("auto", "naive", "shared", "vectorized")
SEQLENS = (1, 2, 3, 63, 64, 65, 129, 1000, 4096)
LAYOUTS = ("contiguous", "channel_last", "padded", "strided")
WIDTHS = tuple(range(1, 9))


def randn(*shape, dtype, gen):
    return torch.randn(*shape, device="cuda", dtype=torch.float32, generator=gen).to(dtype)


def make_x(b, d, l, dtype, layout, gen):
    if layout == "contiguous":
        return randn(b, d, l, dtype=dtype, gen=gen)
    if layout == "channel_last":
        return randn(b, l, d, dtype=dtype, gen=gen).transpose(1, 2)
    if layout == "padded":
        return randn(b, d, l + 5, dtype=dtype, gen=gen)[:, :, :l]
    if layout == "strided":
        return randn(b, 2 * d + 1, 2 * l + 3, dtype=dtype, gen=gen)[:, 1::2, 2::2]
    raise ValueError(layout)


def assert_close(out: torch.Tensor, ref: torch.Tensor, dtype, what: str) -> None:
    rtol, atol = TOL[dtype]
    out64 = out.double()
    finite = torch.isfinite(out64)
    if not bool(finite.all()):
        idx = tuple(int(i) for i in (~finite).nonzero()[0])
        raise AssertionError(f"{what}: non-finite output at {idx} (unwritten?) of shape {tuple(out.shape)}")
    err = (out64 - ref).abs()
    bad = err > atol + rtol * ref.abs()
    if bool(bad.any()):
        idx = tuple(int(i) for i in bad.nonzero()[0])
        raise AssertionError(f"{what}: {int(bad.sum())} elements off, first at {idx}: got {float(out64[idx])}, "
                             f"want {float(ref[idx])}; max abs err {float(err.max()):.3e}")


def run_fwd(x, weight, bias, silu, variant, out=None):
    out = torch.full_like(x, float("nan")) if out is None else out.fill_(float("nan"))
    aiter_lite.causal_conv1d_fwd(out, x, weight, bias, silu, variant=variant)
    return out


# ---------------------------------------------------------------------------------------------
# Forward


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
def test_forward_sweep(dtype, width, layout):
    gen = torch.Generator(device="cuda").manual_seed(1000 * width + LAYOUTS.index(layout))
    batch, dim = 2, 24
    for seqlen in SEQLENS:
        x = make_x(batch, dim, seqlen, dtype, layout, gen)
        weight = randn(dim, width, dtype=dtype, gen=gen)
        bias_full = randn(dim, dtype=dtype, gen=gen)
        for use_bias, silu in itertools.product((False, True), (False, True)):
            bias = bias_full if use_bias else None
            ref = causal_conv1d_ref(x.double(), weight.double(), None if bias is None else bias.double(),
                                    "silu" if silu else None)
            for variant in VARIANTS:
                out = run_fwd(x, weight, bias, silu, variant)
                assert_close(out, ref, dtype, f"L={seqlen} bias={use_bias} silu={silu} variant={variant}")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("x_dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_forward_fp32_weights(x_dtype, layout):
    gen = torch.Generator(device="cuda").manual_seed(7)
    for width, seqlen in [(2, 129), (4, 1000), (4, 65), (7, 300)]:
        x = make_x(3, 40, seqlen, x_dtype, layout, gen)
        weight = randn(40, width, dtype=torch.float32, gen=gen)
        bias = randn(40, dtype=torch.float32, gen=gen)
        ref = causal_conv1d_ref(x.double(), weight.double(), bias.double(), "silu")
        for variant in VARIANTS:
            out = run_fwd(x, weight, bias, True, variant)
            assert out.dtype == x_dtype
            assert_close(out, ref, x_dtype, f"W={width} L={seqlen} variant={variant}")


@pytest.mark.parametrize("layout", ["contiguous", "channel_last"])
@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
def test_forward_strided_weight_and_bias(dtype, layout):
    """weight [D, W] as a transposed view (width stride D) and bias with stride 2: scalar weight loads."""
    gen = torch.Generator(device="cuda").manual_seed(11)
    dim = 48
    for width, seqlen in [(3, 257), (4, 64), (8, 1000)]:
        x = make_x(2, dim, seqlen, dtype, layout, gen)
        weight = randn(width, dim, dtype=dtype, gen=gen).t()
        bias = randn(2 * dim, dtype=dtype, gen=gen)[::2]
        ref = causal_conv1d_ref(x.double(), weight.double(), bias.double(), "silu")
        for variant in VARIANTS:
            assert_close(run_fwd(x, weight, bias, True, variant), ref, dtype, f"W={width} variant={variant}")


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
def test_forward_misaligned_and_odd_channels(dtype):
    """Pointers one element past 16-byte alignment (no vector path may touch them), channel-last
    with D not a multiple of the vector width (scalar-over-D kernel), and out strided unlike x."""
    gen = torch.Generator(device="cuda").manual_seed(13)
    for width, seqlen in [(2, 129), (4, 1000), (5, 64)]:
        dim = 24
        weight = randn(dim, width, dtype=dtype, gen=gen)
        bias = randn(dim, dtype=dtype, gen=gen)
        # dense but misaligned x and out
        x = randn(2 * dim * seqlen + 1, dtype=dtype, gen=gen)[1:].view(2, dim, seqlen)
        out = torch.empty(2 * dim * seqlen + 1, dtype=dtype, device="cuda")[1:].view(2, dim, seqlen)
        ref = causal_conv1d_ref(x.double(), weight.double(), bias.double(), "silu")
        for variant in VARIANTS:
            assert_close(run_fwd(x, weight, bias, True, variant, out), ref, dtype, f"misaligned {variant}")
        # channel-last with odd D, and channel-last with a misaligned base pointer
        for d, offset in [(13, 0), (24, 1)]:
            w_d, b_d = randn(d, width, dtype=dtype, gen=gen), randn(d, dtype=dtype, gen=gen)
            base = randn(2 * seqlen * d + offset, dtype=dtype, gen=gen)[offset:]
            x = base.view(2, seqlen, d).transpose(1, 2)
            ref = causal_conv1d_ref(x.double(), w_d.double(), b_d.double(), None)
            for variant in VARIANTS:
                assert_close(run_fwd(x, w_d, b_d, False, variant), ref, dtype, f"CL d={d} off={offset} {variant}")
        # out laid out unlike x (x contiguous, out channel-last; x channel-last, out contiguous)
        x = randn(2, dim, seqlen, dtype=dtype, gen=gen)
        ref = causal_conv1d_ref(x.double(), weight.double(), bias.double(), "silu")
        out = torch.empty(2, seqlen, dim, dtype=dtype, device="cuda").transpose(1, 2)
        for variant in VARIANTS:
            assert_close(run_fwd(x, weight, bias, True, variant, out), ref, dtype, f"out CL {variant}")
        x_cl = x.transpose(1, 2).contiguous().transpose(1, 2)
        out = torch.empty(2, dim, seqlen, dtype=dtype, device="cuda")
        for variant in VARIANTS:
            assert_close(run_fwd(x_cl, weight, bias, True, variant, out), ref, dtype, f"x CL out dense {variant}")


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
def test_forward_wide_filters_and_degenerate_shapes(dtype):
    """Widths past the compile-time kernels (runtime-width path) and sizes 1 in every position."""
    gen = torch.Generator(device="cuda").manual_seed(17)
    cases = [(2, 8, 100, 9), (1, 4, 50, 16), (2, 3, 7, 33), (1, 1, 1, 1), (1, 1, 5000, 4), (7, 1, 3, 3),
             (1, 300, 1, 4), (3, 5, 2, 8), (1, 2, 4096 * 3 + 5, 2)]
    for (b, d, l, w), layout in itertools.product(cases, ["contiguous", "channel_last", "strided"]):
        x = make_x(b, d, l, dtype, layout, gen)
        weight = randn(d, w, dtype=dtype, gen=gen)
        bias = randn(d, dtype=dtype, gen=gen)
        ref = causal_conv1d_ref(x.double(), weight.double(), bias.double(), "silu")
        for variant in VARIANTS:
            assert_close(run_fwd(x, weight, bias, True, variant), ref, dtype, f"{b}x{d}x{l} w{w} {layout} {variant}")


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
def test_forward_channel_last_long_chunks(dtype):
    """Channel-last shapes big enough for the kernel to give each thread 8..64 time steps (the rolling
    window crosses its unrolled groups); the sweep's shapes only reach 4."""
    gen = torch.Generator(device="cuda").manual_seed(41)
    for (b, d, l), width in [((4, 1024, 2049), 4), ((8, 4096, 2050), 7), ((8, 4096, 2048), 2)]:
        x = randn(b, l, d, dtype=dtype, gen=gen).transpose(1, 2)
        weight, bias = randn(d, width, dtype=dtype, gen=gen), randn(d, dtype=dtype, gen=gen)
        ref = causal_conv1d_ref(x.double(), weight.double(), bias.double(), "silu")
        for variant in ("auto", "vectorized"):
            assert_close(run_fwd(x, weight, bias, True, variant), ref, dtype, f"{b}x{d}x{l} w{width} {variant}")
        del ref
        torch.cuda.empty_cache()


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
def test_forward_channel_last_staged_rows(dtype):
    """Channel-last rows of channels on 16-byte boundaries (the staged kernel for these small fp32 calls, the
    register kernel otherwise): a last warp of channels only partly filled (D = 8, 40, 264 against 32 lanes of 4
    channels), seq and batch strides past D, a base 16 bytes into its allocation, chunks that start before the
    halo (L < W) and end mid-stage, out padded unlike x; every width, fp32 weights with 16-bit x."""
    gen = torch.Generator(device="cuda").manual_seed(53)
    elts = 16 // torch.empty((), dtype=dtype).element_size()
    for (b, d, l), width in [((3, 8, 2), 4), ((2, 40, 3), 8), ((2, 264, 129), 3), ((1, 264, 1001), 7),
                             ((2, 520, 65), 1), ((3, 40, 777), 2), ((1, 1544, 300), 5), ((2, 264, 31), 6)]:
        xs = [randn(b, l, d, dtype=dtype, gen=gen).transpose(1, 2),
              randn(b, l + 1, d + 2 * elts, dtype=dtype, gen=gen)[:, 1:, elts:d + elts].transpose(1, 2),
              randn(b * l * d + elts, dtype=dtype, gen=gen)[elts:].view(b, l, d).transpose(1, 2)]
        weight, bias = randn(d, width, dtype=torch.float32, gen=gen), randn(d, dtype=torch.float32, gen=gen)
        for i, x in enumerate(xs):
            ref = causal_conv1d_ref(x.double(), weight.double(), bias.double(), "silu")
            out = torch.empty(b, l, d + elts, dtype=dtype, device="cuda")[:, :, :d].transpose(1, 2) if i == 1 else None
            for variant in ("auto", "vectorized"):
                assert_close(run_fwd(x, weight, bias, True, variant, out), ref, dtype,
                             f"{b}x{d}x{l} w{width} layout {i} {variant}")


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
def test_forward_rows_kernel_tiles(dtype):
    """Dense shapes big enough for the rows kernel's 4-vectors-per-lane tiles (the sweep's shapes are
    small and take 1 vector per lane), with rows that end inside a tile, plus a 1-vector-per-lane
    shape with a partial last tile."""
    gen = torch.Generator(device="cuda").manual_seed(43)
    n_elts = 16 // torch.empty((), dtype=dtype).element_size()
    for (b, d, vecs), width in [((1, 1300, 424), 4), ((2, 700, 512), 7), ((3, 260, 1000), 2), ((2, 33, 40), 8)]:
        l = vecs * n_elts
        x = randn(b, d, l, dtype=dtype, gen=gen)
        weight, bias = randn(d, width, dtype=dtype, gen=gen), randn(d, dtype=dtype, gen=gen)
        ref = causal_conv1d_ref(x.double(), weight.double(), bias.double(), "silu")
        for variant in ("auto", "vectorized"):
            assert_close(run_fwd(x, weight, bias, True, variant), ref, dtype, f"{b}x{d}x{l} w{width} {variant}")
        del ref
        torch.cuda.empty_cache()


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
def test_forward_flat_kernel_modes(dtype):
    """Dense odd-length shapes over many warp tiles of the flat kernel: row mode (a per-warp weight
    table sized to the rows a tile spans; rows longer than one 16-byte vector) from its shortest rows
    (9 for 16-bit types, 5 for fp32, where a width-8 halo reaches two rows back) up, rows that start
    inside vectors, and the segment walk of rows no longer than a vector."""
    gen = torch.Generator(device="cuda").manual_seed(47)
    for (b, d, l), width in [((3, 370, 33), 4), ((3, 370, 34), 8), ((2, 450, 16), 3), ((2, 450, 17), 4),
                             ((2, 450, 9), 8), ((4, 300, 8), 4), ((4, 300, 5), 8), ((6, 200, 3), 3),
                             ((4, 290, 129), 2), ((4, 290, 129), 7), ((2, 110, 1001), 4), ((5, 70, 35), 1),
                             ((3, 370, 34), 5), ((2, 450, 9), 6), ((4, 300, 5), 5), ((4, 300, 8), 6)]:
        x = randn(b, d, l, dtype=dtype, gen=gen)
        weight, bias = randn(d, width, dtype=dtype, gen=gen), randn(d, dtype=dtype, gen=gen)
        ref = causal_conv1d_ref(x.double(), weight.double(), bias.double(), "silu")
        for variant in ("auto", "vectorized"):
            assert_close(run_fwd(x, weight, bias, True, variant), ref, dtype, f"{b}x{d}x{l} w{width} {variant}")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("width", [5, 6, 7])
@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
def test_forward_wide_kernel_skips_taps_outside_the_filter(dtype, width, layout):
    """Widths 5..8 share one 8-tap kernel per family with the filter right-aligned (kWideWidth): the
    8 - width leading taps are skipped, not multiplied by zero, so an inf in x reaches only the outputs
    whose window holds it (0 * inf would be NaN in the next 8 - width outputs). Every kernel family:
    rows (L = 4096), flat (odd L), channel-last, shared (padded)."""
    gen = torch.Generator(device="cuda").manual_seed(31 * width + LAYOUTS.index(layout))
    for batch, dim, seqlen in [(2, 24, 4096), (3, 40, 1001), (2, 16, 65)]:
        x = make_x(batch, dim, seqlen, dtype, layout, gen)
        seqlen = x.shape[-1]  # the strided layout's view has one step more
        x[:, ::5, seqlen // 3] = float("inf")
        x[:, 1::7, seqlen // 2] = float("-inf")
        weight, bias = randn(dim, width, dtype=dtype, gen=gen), randn(dim, dtype=dtype, gen=gen)
        ref = tap_by_tap_reference(x, weight, bias)  # no inf * 0 where the filter does not reach
        for variant in ("auto", "vectorized", "shared"):
            out = run_fwd(x, weight, bias, False, variant)
            finite = torch.isfinite(ref)
            assert torch.equal(torch.isfinite(out), finite), f"{batch}x{dim}x{seqlen} {variant}: non-finite spread"
            assert_close(torch.where(finite, out, 0), torch.where(finite, ref, 0), dtype, f"{seqlen} {variant}")


def test_forward_functional_matches_fwd():
    gen = torch.Generator(device="cuda").manual_seed(19)
    for layout in LAYOUTS:
        x = make_x(2, 16, 77, torch.bfloat16, layout, gen)
        w, b = randn(16, 4, dtype=torch.bfloat16, gen=gen), randn(16, dtype=torch.bfloat16, gen=gen)
        for variant in VARIANTS:
            got = aiter_lite.causal_conv1d(x, w, b, "silu", variant=variant)
            assert got.stride() == torch.empty_like(x).stride()
            torch.testing.assert_close(got, run_fwd(x, w, b, True, variant), rtol=0, atol=0)


def _free_bytes() -> int:
    free, _ = torch.cuda.mem_get_info()
    return free


def _check_rows(out, x, weight, bias, dtype, spans):
    """Compare out[b, d, s:e] with a float64 reference computed on x[b, d, s-(W-1):e]."""
    width = weight.shape[1]
    for b, d, s, e in spans:
        s0 = max(s - (width - 1), 0)
        xs = x[b:b + 1, d:d + 1, s0:e].double()
        ref = causal_conv1d_ref(xs, weight[d:d + 1].double(), bias[d:d + 1].double(), "silu")[..., s - s0:]
        assert_close(out[b:b + 1, d:d + 1, s:e], ref, dtype, f"b={b} d={d} t=[{s},{e})")


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS)
def test_forward_past_2_31_elements_one_row(variant):
    """fp16 [1, 1, 2^31 + 129]: element offsets past 2^31 in every kernel."""
    n = 2**31 + 129
    if _free_bytes() < 2 * 2 * n + (1 << 30):
        pytest.skip("not enough free GPU memory")
    gen = torch.Generator(device="cuda").manual_seed(23)
    x = torch.empty(1, 1, n, dtype=torch.float16, device="cuda")
    x.normal_(generator=gen)
    weight, bias = randn(1, 4, dtype=torch.float16, gen=gen), randn(1, dtype=torch.float16, gen=gen)
    out = run_fwd(x, weight, bias, True, variant)
    spans = [(0, 0, 0, 4096), (0, 0, 2**31 - 4096, 2**31 + 4096), (0, 0, n - 5000, n)]
    _check_rows(out, x, weight, bias, torch.float16, spans)
    assert bool(torch.isfinite(out[0, 0, ::4093]).all())
    del x, out
    torch.cuda.empty_cache()


@pytest.mark.slow
@pytest.mark.parametrize("layout,l", [("contiguous", 32771), ("contiguous", 32776), ("channel_last", 32771)])
def test_forward_past_2_31_elements_many_rows(layout, l):
    """bf16 [2, 32776, l]: batch and channel offsets past 2^31 (flat, rows (l = 32776) and channel-last
    vector kernels)."""
    b, d = 2, 32776
    n = b * d * l
    if _free_bytes() < 2 * 2 * n + (1 << 30):
        pytest.skip("not enough free GPU memory")
    gen = torch.Generator(device="cuda").manual_seed(29)
    shape = (b, d, l) if layout == "contiguous" else (b, l, d)
    x = torch.empty(shape, dtype=torch.bfloat16, device="cuda")
    x.normal_(generator=gen)
    if layout == "channel_last":
        x = x.transpose(1, 2)
    weight, bias = randn(d, 3, dtype=torch.bfloat16, gen=gen), randn(d, dtype=torch.bfloat16, gen=gen)
    out = run_fwd(x, weight, bias, True, "auto")
    spans = [(0, 0, 0, 200), (1, d - 1, l - 300, l), (1, d // 2, 1000, 1500), (1, 7, 0, l), (0, d - 2, 5, 900)]
    _check_rows(out, x, weight, bias, torch.bfloat16, spans)
    assert bool(torch.isfinite(out[:, ::97, ::89]).all())
    del x, out
    torch.cuda.empty_cache()


# ---------------------------------------------------------------------------------------------
# Update


def _poison_allocator(nbytes: int) -> None:
    """Best effort: leave NaN in the caching allocator's next block of this size, so an output the
    op allocates and the kernel fails to write is likely to hold NaN."""
    t = torch.full((max(nbytes, 4) // 4,), float("nan"), dtype=torch.float32, device="cuda")
    del t


def make_state(pool, dim, state_len, dtype, layout, gen):
    if layout == "channel_last":  # [pool, S, D] storage: channels contiguous (vectorised kernel)
        return randn(pool, state_len, dim, dtype=dtype, gen=gen).transpose(1, 2)
    return randn(pool, dim, state_len, dtype=dtype, gen=gen)


def make_update_x(batch, dim, seqlen, dtype, layout, gen):
    if layout == "2d":
        return randn(batch, dim, dtype=dtype, gen=gen)
    if layout == "channel_last":
        return randn(batch, seqlen, dim, dtype=dtype, gen=gen).transpose(1, 2)
    return randn(batch, dim, seqlen, dtype=dtype, gen=gen)


def check_update(x, state, weight, bias, silu, cache_seqlens, indices, dtype, what):
    ref_state = state.double().clone()
    ref = causal_conv1d_update_ref(x.double(), ref_state, weight.double(),
                                   None if bias is None else bias.double(), "silu" if silu else None,
                                   cache_seqlens, indices)
    _poison_allocator(x.numel() * x.element_size())
    out = aiter_lite.causal_conv1d_update(x, state, weight, bias, "silu" if silu else None, cache_seqlens, indices)
    assert out.shape == x.shape and out.dtype == x.dtype
    assert_close(out, ref, dtype, what + " out")
    if not torch.equal(state.double(), ref_state):
        bad = (state.double() != ref_state).nonzero()
        idx = tuple(int(i) for i in bad[0])
        raise AssertionError(f"{what}: conv_state differs at {len(bad)} places, first {idx}: "
                             f"got {float(state[idx])}, want {float(ref_state[idx])}")


@pytest.mark.parametrize("state_layout", ["contiguous", "channel_last"])
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
def test_update_sweep(dtype, width, state_layout):
    gen = torch.Generator(device="cuda").manual_seed(100 * width + (state_layout == "channel_last"))
    batch, dim = 5, 40
    cases = itertools.product((1, 2, 3, 4), (max(width - 1, 1), width + 3), ("none", "circular"),
                              ("none", "indices"))
    for n, (seqlen, state_len, mode, idx_mode) in enumerate(cases):
        x_layout = ("2d", "contiguous", "channel_last")[n % 3] if seqlen == 1 else ("contiguous", "channel_last")[n % 2]
        x = make_update_x(batch, dim, seqlen, dtype, x_layout, gen)
        pool = 3 * batch if idx_mode == "indices" else batch
        state = make_state(pool, dim, state_len, dtype, state_layout, gen)
        weight = randn(dim, width, dtype=dtype if n % 4 else torch.float32, gen=gen)
        bias = randn(dim, dtype=weight.dtype, gen=gen) if n % 2 else None
        silu = n % 3 != 1
        cache_seqlens = None
        if mode == "circular":
            cache_seqlens = torch.randint(-50, 1000, (batch,), dtype=torch.int32, device="cuda", generator=gen)
            cache_seqlens[0] = 0
            cache_seqlens[1] = 2**31 - 1
            cache_seqlens[2] = -(2**31)
        indices = None
        if idx_mode == "indices":
            indices = torch.randperm(pool, device="cuda", generator=gen)[:batch].to(torch.int32)
            indices[1] = -1  # padded slot
            indices[3] = -7
        check_update(x, state, weight, bias, silu, cache_seqlens, indices, dtype,
                     f"L={seqlen} S={state_len} {mode} {idx_mode} x={x_layout}")


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
def test_update_layouts_and_wide(dtype):
    """Odd dim (no vector path), strided x and state, misaligned state, widths past 8, seqlen past
    state_len, batch 1, and a shape of the benchmarks."""
    gen = torch.Generator(device="cuda").manual_seed(31)
    for width, dim, seqlen, state_len in [(4, 13, 1, 3), (4, 33, 3, 7), (9, 16, 2, 8), (12, 24, 5, 20),
                                          (4, 64, 9, 4), (3, 64, 17, 2), (2, 4096, 1, 1), (4, 10240, 1, 3)]:
        for state_layout, mode in itertools.product(("contiguous", "channel_last", "strided", "misaligned"),
                                                    ("none", "circular")):
            batch = 3
            x = make_update_x(batch, dim, seqlen, dtype, "contiguous" if seqlen > 1 else "2d", gen)
            if state_layout == "strided":
                state = randn(batch, dim, 2 * state_len + 1, dtype=dtype, gen=gen)[:, :, 1::2]
            elif state_layout == "misaligned":
                state = randn(batch * state_len * dim + 1, dtype=dtype, gen=gen)[1:].view(batch, state_len, dim)
                state = state.transpose(1, 2)
            else:
                state = make_state(batch, dim, state_len, dtype, state_layout, gen)
            weight = randn(dim, width, dtype=dtype, gen=gen)
            bias = randn(dim, dtype=dtype, gen=gen)
            cache_seqlens = (torch.randint(0, 100, (batch,), dtype=torch.int32, device="cuda", generator=gen)
                             if mode == "circular" else None)
            check_update(x, state, weight, bias, True, cache_seqlens, None, dtype,
                         f"W={width} D={dim} L={seqlen} S={state_len} {state_layout} {mode}")


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
def test_update_batch_sizes_channel_last(dtype):
    """Batch sizes that give the vectorised kernel one and several batch rows per thread."""
    gen = torch.Generator(device="cuda").manual_seed(37)
    for batch, dim in [(1, 4096), (16, 4096), (64, 10240), (256, 4096)]:
        x = randn(batch, dim, dtype=dtype, gen=gen)
        state = make_state(batch + 3, dim, 3, dtype, "channel_last", gen)
        weight, bias = randn(dim, 4, dtype=torch.float32, gen=gen), randn(dim, dtype=torch.float32, gen=gen)
        indices = torch.randperm(batch + 3, device="cuda", generator=gen)[:batch].to(torch.int32)
        indices[::5] = -1
        for cache_seqlens in (None, torch.randint(0, 64, (batch,), dtype=torch.int32, device="cuda", generator=gen)):
            check_update(x, state, weight, bias, True, cache_seqlens, indices, dtype, f"B={batch} D={dim}")


@pytest.mark.parametrize("state_layout", ["contiguous", "channel_last"])
def test_update_index_past_the_pool_is_padding(state_layout):
    # On the GPU an index >= the pool size cannot be checked without a device sync: the kernel
    # treats it as a padded slot (zero output, no state touched) instead of going out of bounds.
    gen = torch.Generator(device="cuda").manual_seed(17)
    batch, dim, width, pool = 4, 64, 4, 3
    x = randn(batch, dim, 1, dtype=torch.bfloat16, gen=gen)
    weight = randn(dim, width, dtype=torch.bfloat16, gen=gen)
    state = randn(pool, dim, width - 1, dtype=torch.bfloat16, gen=gen)
    if state_layout == "channel_last":
        state = state.transpose(1, 2).contiguous().transpose(1, 2)
    indices = torch.tensor([0, 3, 2, 1 << 30], dtype=torch.int32, device="cuda")
    ref_state = state.clone()
    ref = causal_conv1d_update_ref(x, ref_state, weight, None, "silu", None, indices)
    out = aiter_lite.causal_conv1d_update(x, state, weight, None, "silu", None, indices)
    torch.cuda.synchronize()
    assert (out[1] == 0).all() and (out[3] == 0).all()
    torch.testing.assert_close(out.double(), ref, rtol=1.6e-2, atol=1.6e-2)
    torch.testing.assert_close(state, ref_state, rtol=0, atol=0)
