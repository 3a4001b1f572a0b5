"""GPU tests of the Hopper (sm_90a) matmul path: wgmma + TMA (csrc/kernels/matmul_wgmma.cuh).

Every test asks the dispatch which kernel it runs (aiter_lite.ops.matmul.matmul_plan) and asserts it,
so a layout that silently fell back to the mma.sync kernel fails here instead of passing on the wrong
kernel. Outputs are NaN-poisoned; errors are measured against a float64 reference with the metric of
tests/test_gpu_matmul.py (fp16 <= 2e-3, bf16 <= 1e-2). Skipped without a compute capability 9.0 GPU
(except the test that variant="wgmma" is refused elsewhere).

TMA needs 16-byte aligned bases and row strides: a contiguous [M, K] A qualifies only when K % 8 == 0.
The operands here are therefore mostly slices of wider tensors whose leading dims are padded to a
multiple of 8 ("pad8"), so that odd M, N, K (1, 7, 127, 129, 1000) still run the wgmma kernel and its
zero-filled TMA tails are tested. The mma.sync kernel's 16-byte cp.async path has the same stride and
alignment rules, so contiguous operands with odd leading dims (and misaligned pointers) run the SIMT
kernel. An M-contiguous A (a.t(), the A^T of a backward's dB) runs wgmma with an N-contiguous B in the
configs without clusters (wgmma_has_kernel), else mma.sync.
"""
from __future__ import annotations

import math

import pytest
import torch

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
TOL = {"fp16": 2e-3, "bf16": 1e-2}
SIZES = (1, 7, 16, 127, 128, 129, 1000, 4096)
# (M, N, K) from SIZES: each size in each position, tails on every side, K = 4096 only with a small side.
SKINNY_MAX_M = 16  # auto with config -1: the skinny kernel up to this M for fp32, and for 16-bit instead of SIMT
SHAPES = [
    (1, 1, 1), (1, 7, 16), (7, 1, 129), (16, 16, 16), (7, 127, 128), (127, 129, 7), (128, 128, 128),
    (129, 127, 129), (1000, 7, 1000), (16, 1000, 127), (129, 1000, 4096), (4096, 16, 1000), (1, 4096, 4096),
    (1000, 1000, 16), (128, 4096, 129), (4096, 129, 1), (1000, 1000, 1000),
]


def _sm90() -> bool:
    return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


needs_sm90 = pytest.mark.skipif(not _sm90(), reason="needs a compute capability 9.0 GPU (H100/H200)")


def _wgmma_configs():
    from aiter_lite.tuning.matmul_configs import configs_for

    return configs_for("wgmma_16")


def _round8(x: int) -> int:
    return (x + 7) // 8 * 8


def _randn(*shape, dtype, gen):
    return torch.randn(*shape, device="cuda", generator=gen, dtype=torch.float32).to(dtype)


def _a(m, k, dtype, gen, layout="pad8", batch=None):
    """A [.., m, k]. pad8: K-contiguous with the row stride padded to a multiple of 8 (TMA-able);
    n: contiguous; t: M-contiguous (a transposed view); t8: M-contiguous with the column stride padded
    to a multiple of 8 (TMA-able); off: one element into its storage."""
    lead = () if batch is None else (batch,)
    if layout == "pad8":
        return _randn(*lead, m, _round8(k), dtype=dtype, gen=gen)[..., :k]
    if layout == "n":
        return _randn(*lead, m, k, dtype=dtype, gen=gen)
    if layout == "t":
        return _randn(*lead, k, m, dtype=dtype, gen=gen).transpose(-1, -2)
    if layout == "t8":
        return _randn(*lead, k, _round8(m), dtype=dtype, gen=gen)[..., :m].transpose(-1, -2)
    if layout == "off":  # 2 bytes past a 16-byte boundary; row stride a multiple of 8
        count = math.prod(lead) * m * _round8(k)
        return _randn(count + 1, dtype=dtype, gen=gen)[1:].view(*lead, m, _round8(k))[..., :k]
    raise ValueError(layout)


def _b(k, n, dtype, gen, layout="pad8", batch=None):
    """B [.., k, n]. pad8: N-contiguous, row stride padded to a multiple of 8; t8: K-contiguous
    (w.t() of a [n, k] weight whose row stride is padded to a multiple of 8); n: contiguous [k, n];
    t: w.t() of a contiguous [n, k] weight."""
    lead = () if batch is None else (batch,)
    if layout == "pad8":
        return _randn(*lead, k, _round8(n), dtype=dtype, gen=gen)[..., :n]
    if layout == "t8":
        return _randn(*lead, n, _round8(k), dtype=dtype, gen=gen)[..., :k].transpose(-1, -2)
    if layout == "n":
        return _randn(*lead, k, n, dtype=dtype, gen=gen)
    if layout == "t":
        return _randn(*lead, n, k, dtype=dtype, gen=gen).transpose(-1, -2)
    raise ValueError(layout)


def _poisoned(a, b, out_layout="n"):
    shape = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    m, n = shape[-2:]
    lead = shape[:-2]
    if out_layout == "n":
        out = torch.empty(shape, device="cuda", dtype=a.dtype)
    elif out_layout == "t":  # column-major
        out = torch.empty(*lead, n, m, device="cuda", dtype=a.dtype).transpose(-1, -2)
    elif out_layout == "pad":  # odd row stride: no vector stores
        out = torch.empty(*lead, m, n + 3, device="cuda", dtype=a.dtype)[..., :n]
    elif out_layout == "off":  # pointer 2 bytes off 16-byte alignment
        out = torch.empty(math.prod(lead) * m * n + 1, device="cuda", dtype=a.dtype)[1:].view(*shape)
    else:
        raise ValueError(out_layout)
    return out.fill_(float("nan"))


def _check(out, a, b, mode, what):
    from aiter_lite.ops import matmul_ref

    ref = matmul_ref(a, b)
    scale = torch.matmul(a.double().abs(), b.double().abs())
    assert out.shape == ref.shape, f"{what}: shape {tuple(out.shape)} != {tuple(ref.shape)}"
    out64 = out.double()
    assert torch.isfinite(out64).all(), f"{what}: non-finite outputs (unwritten NaN poison?)"
    denom = max(ref.norm().item(), scale.norm().item() / math.sqrt(a.shape[-1]))
    err = (out64 - ref).norm().item() / max(denom, 1e-30)
    assert err <= TOL[mode], f"{what}: relative error {err:.3e} > {TOL[mode]:.0e}"


def _repacked(a, b) -> bool:
    """The call copies its operands to aligned rows first (ops/matmul_repack.py: rows off 16 bytes on a
    product large enough to pay), so TMA takes them."""
    from aiter_lite.ops.matmul_repack import maybe_repack_pair

    ra, rb = maybe_repack_pair(a, b, 2.0 * a.shape[-2] * a.shape[-1] * b.shape[-1])
    return ra is not a or rb is not b


def _run(a, b, mode, variant="wgmma", config=-1, out=None, expect="wgmma"):
    """Runs aiter_lite.matmul into a poisoned out after checking which kernel the dispatch picks."""
    import aiter_lite
    from aiter_lite.ops.matmul import matmul_plan

    if out is None:
        out = _poisoned(a, b)
    if expect == "simt" and variant == "auto" and config == -1 and a.shape[-2] <= SKINNY_MAX_M:
        expect = "skinny"  # few rows of A on a layout the tensor cores cannot load (test_gpu_matmul_skinny.py)
    if expect == "wgmma" and config >= 0:
        from aiter_lite.tuning.matmul_configs import MATMUL_CONFIGS

        if 0 < MATMUL_CONFIGS[config].a_rows < a.shape[-2]:
            expect = "tensor_core"  # a config that loads a_rows rows of A serves no more; forced, it falls back
    plan = matmul_plan(a, b, out, variant=variant, config=config)
    kernel, cfg = plan.split()
    assert kernel == expect, f"expected the {expect} kernel, the dispatch plans {plan!r}"
    if config >= 0 and expect == "wgmma":
        assert int(cfg) == config
    res = aiter_lite.matmul(a, b, out, variant=variant, config=config)
    assert res.data_ptr() == out.data_ptr()
    torch.cuda.synchronize()
    return out, plan


def _check_config(index, m, n, k, gen, what, b_layout="pad8", a_layout="pad8"):
    """Config `index` on an m x n x k product with a poisoned out, in both dtypes, against float64."""
    for mode in DTYPES:
        a = _a(m, k, DTYPES[mode], gen, a_layout)
        b = _b(k, n, DTYPES[mode], gen, b_layout)
        out, _ = _run(a, b, mode, config=index)
        _check(out, a, b, mode, f"{what} {mode} seed={gen.initial_seed()}")


@pytest.fixture
def gen():
    g = torch.Generator(device="cuda")
    g.seed()
    return g


# ---- the kernel on every tail shape, both B layouts, both dtypes -----------------------------------


@needs_sm90
@pytest.mark.parametrize("b_layout", ["pad8", "t8"])
@pytest.mark.parametrize("mode", list(DTYPES))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_shapes(shape, mode, b_layout, gen):
    m, n, k = shape
    a = _a(m, k, DTYPES[mode], gen)
    b = _b(k, n, DTYPES[mode], gen, b_layout)
    out, plan = _run(a, b, mode)
    _check(out, a, b, mode, f"{shape} {mode} B {b_layout} ({plan}) seed={gen.initial_seed()}")


@needs_sm90
@pytest.mark.parametrize("mode", list(DTYPES))
@pytest.mark.parametrize("shape", [(7, 16, 127), (129, 127, 128), (1000, 129, 1000), (256, 512, 128)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("b_layout", ["n", "t"])
def test_auto_on_contiguous_operands(b_layout, shape, mode, gen):
    """variant="auto" with plain contiguous tensors: the wgmma kernel when the leading dims are
    multiples of 8 elements (16 bytes), else the SIMT kernel (mma.sync needs the same); correct
    either way."""
    m, n, k = shape
    a = _a(m, k, DTYPES[mode], gen, "n")
    b = _b(k, n, DTYPES[mode], gen, b_layout)
    lead_b = n if b_layout == "n" else k
    tma_ok = (k % 8 == 0 or m == 1) and (lead_b % 8 == 0 or (k if b_layout == "n" else n) == 1)
    tma_ok = tma_ok or _repacked(a, b)
    out, plan = _run(a, b, mode, variant="auto", expect="wgmma" if tma_ok else "simt")
    _check(out, a, b, mode, f"auto {shape} {mode} B {b_layout} ({plan})")


# ---- every config of the table, explicitly ----------------------------------------------------------


@needs_sm90
@pytest.mark.parametrize("b_layout", ["pad8", "t8"])
@pytest.mark.parametrize("shape", [(257, 383, 1000), (64, 256, 96), (1, 7, 129), (512, 768, 256),
                                   (1100, 1200, 1024), (4096, 4096, 256)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("index", [c.index for c in _wgmma_configs()])
def test_every_config(index, shape, b_layout, gen):
    """Each wgmma config in each B layout: tails on all sides (257 x 383 x 1000), exact tiles (512 x
    768 x 256), odd numbers of tile rows and columns for the clusters (1100 x 1200), and more tiles
    than CTAs (4096 x 4096: the persistent loop runs several tiles per CTA, the ring wraps many times)."""
    _check_config(index, *shape, gen, f"config {index} {shape} B {b_layout}", b_layout)


def _few_rows_configs():
    return [c.index for c in _wgmma_configs() if c.a_rows]


@needs_sm90
@pytest.mark.parametrize("b_layout", ["pad8", "t8"])
@pytest.mark.parametrize("m", [1, 5, 17, 32, 33])
@pytest.mark.parametrize("index", [-1] + _few_rows_configs())
def test_few_rows_configs(index, m, b_layout, gen):
    """The configs that load only 32 rows of A (their m64 wgmma reads the rest of the block from whatever follows in
    shared memory, rows never stored): M = 1, 5, 17, 32 against float64 with NaN-poisoned out, N and K tails, K long
    enough that the ring of 10 or 17 stages wraps many times, a batch with a broadcast B, and the fused epilogue (bias,
    gelu_tanh, residual, alpha, beta) whose garbage rows must not leak; M = 33 forced onto one falls back to mma.sync,
    and under auto takes a 64-row config. Auto (-1) with M <= 32 runs one of them on 4095 columns (64 tiles)."""
    from aiter_lite.ops import matmul_ref
    from aiter_lite.ops.matmul import matmul_plan
    from aiter_lite.tuning.matmul_configs import MATMUL_CONFIGS

    import aiter_lite

    for mode in DTYPES:
        dt = DTYPES[mode]
        for batch, n, k in ((None, 4095, 4096 + 72), (3, 264, 136)):
            a = _a(m, k, dt, gen, batch=batch)
            b = _b(k, n, dt, gen, b_layout)
            if batch is not None:
                b = b.expand(batch, k, n)
            variant = "auto" if index < 0 else "wgmma"
            kernel, cfg = matmul_plan(a, b, variant=variant, config=index).split()
            if m <= 32 and (index >= 0 or batch is None):  # auto on 3 x 5 tiles: split-K (wgmma_choose_few_rows)
                assert kernel == "wgmma" and MATMUL_CONFIGS[int(cfg)].a_rows == 32, (kernel, cfg)
            elif m <= 32:
                assert kernel == "wgmma", (kernel, cfg)
            elif index >= 0:
                assert kernel == "tensor_core", (kernel, cfg)
            else:
                assert kernel == "wgmma" and not MATMUL_CONFIGS[int(cfg)].a_rows, (kernel, cfg)
            out = _poisoned(a, b)
            aiter_lite.matmul(a, b, out, variant=variant, config=index)
            _check(out, a, b, mode, f"config {index} M={m} N={n} K={k} batch={batch} B {b_layout} {mode}")
            kw = dict(bias=_randn(n, dtype=torch.float32, gen=gen), activation="gelu_tanh",
                      residual=_randn(*out.shape, dtype=dt, gen=gen), alpha=0.5, beta=-1.5)
            out = _poisoned(a, b)
            aiter_lite.matmul(a, b, out, variant=variant, config=index, **kw)
            ref = matmul_ref(a, b, **kw)
            err = ((out.double() - ref).norm() / ref.norm()).item()
            assert torch.isfinite(out).all() and err <= TOL[mode], \
                f"epilogue config {index} M={m} N={n} B {b_layout} {mode}: {err:.2e}"


@needs_sm90
@pytest.mark.parametrize("b_layout", ["pad8", "t8"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("index", [c.index for c in _wgmma_configs()])
def test_config_tail_shapes(index, shape, b_layout, gen):
    """Every wgmma config (128x192, the 128x64 tile and the split-K configs included) on every tail
    shape of SIZES, both B layouts, both dtypes, against float64 with NaN-poisoned outputs."""
    _check_config(index, *shape, gen, f"config {index} {shape} B {b_layout}", b_layout)


def _split_configs():
    return [c.index for c in _wgmma_configs() if c.split_k > 1]


@needs_sm90
@pytest.mark.parametrize("b_layout", ["pad8", "t8"])
@pytest.mark.parametrize("k", [1, 7, 16, 64, 65, 127, 129, 200, 1000, 4096 + 72])
@pytest.mark.parametrize("index", _split_configs())
def test_split_k_ranges(index, k, b_layout, gen):
    """Split-K: every CTA of a cluster takes k-tiles [r * k_tiles / split, (r + 1) * k_tiles / split).
    K <= 64 (one k-tile) leaves rank 1 with an empty range (it must contribute zeros, not garbage),
    65 gives one k-tile each, 129 and 200 uneven shares with a K tail, 4096 + 72 many k-tiles. M and N
    with tails on both sides, several tiles so that several clusters run, both dtypes."""
    _check_config(index, 129, 200, k, gen, f"split-K config {index} K={k} B {b_layout}", b_layout)


@needs_sm90
@pytest.mark.parametrize("index", _split_configs())
def test_split_k_many_clusters(index, gen):
    """More clusters than fit on the GPU at once (the split-K grid is one cluster per tile, not
    persistent): later clusters start as earlier ones exit; K with a tail; batched with a broadcast B."""
    batch, m, n, k = 3, 1000, 1000, 1000
    for mode in DTYPES:
        a = _a(m, k, DTYPES[mode], gen, batch=batch)
        b = _b(k, n, DTYPES[mode], gen, "t8").expand(batch, k, n)
        out, plan = _run(a, b, mode, config=index)
        _check(out, a, b, mode, f"split-K config {index} many clusters {mode} seed={gen.initial_seed()}")


def _overlap_configs():
    return [c.index for c in _wgmma_configs() if c.epilogue_overlap > 0]


@needs_sm90
@pytest.mark.parametrize("out_layout", ["n", "t"])
@pytest.mark.parametrize("k", [1, 64, 65, 200, 1000])
@pytest.mark.parametrize("index", _overlap_configs())
def test_overlap_epilogue(index, k, out_layout, gen):
    """Configs whose consumers store part of a tile during the next tile's mainloop: several tiles per
    CTA (3 x 2000 x 3000 is 3 x 16 x 12 tiles of 128 x 256 on ~132 CTAs), edge tiles in M and N
    deferred too, one k-tile per tile (K <= 64: the deferred stores run after the next mainloop
    instead), two (65: during the next tile's last k-tile), many; 16-byte and element stores."""
    batch, m, n = 3, 2000, 3000
    for mode in DTYPES:
        a = _a(m, k, DTYPES[mode], gen, batch=batch)
        b = _b(k, n, DTYPES[mode], gen, "t8")
        out = _poisoned(a, b, out_layout)
        _run(a, b, mode, config=index, out=out)
        _check(out, a, b, mode, f"overlap config {index} K={k} out {out_layout} {mode} seed={gen.initial_seed()}")


@needs_sm90
@pytest.mark.parametrize("index", [c.index for c in _wgmma_configs()])
def test_config_long_k(index, gen):
    """Many k-tiles: every stage of the ring through many phases, in both dtypes."""
    _check_config(index, 300, 520, 8192 + 72, gen, f"config {index} long K")


@needs_sm90
@pytest.mark.parametrize("case", ["a3-b3", "a3-b2", "a2-b3t", "bcast-b3", "a3-bcastt"])
@pytest.mark.parametrize("index", [-1] + [c.index for c in _wgmma_configs()])
def test_batched(index, case, gen):
    """Batch entries are further work units; stride-0 (broadcast) operands use batch coordinate 0."""
    batch, m, n, k = 3, 129, 264, 136
    mode = "bf16"
    dt = DTYPES[mode]
    la, lb = case.split("-")

    def make_a():
        if la == "a2":
            return _a(m, k, dt, gen)
        if la == "bcast":
            return _a(m, k, dt, gen).expand(batch, m, k)
        return _a(m, k, dt, gen, batch=batch)

    def make_b():
        layout = "t8" if lb.endswith("t") else "pad8"
        if lb.startswith("b2"):
            return _b(k, n, dt, gen, layout)
        if lb.startswith("bcast"):
            return _b(k, n, dt, gen, layout).expand(batch, k, n)
        return _b(k, n, dt, gen, layout, batch=batch)

    a, b = make_a(), make_b()
    out, plan = _run(a, b, mode, config=index)
    assert out.shape == (batch, m, n)
    _check(out, a, b, mode, f"batched {case} config {index} ({plan})")


@needs_sm90
@pytest.mark.parametrize("out_layout", ["t", "pad", "off"])
@pytest.mark.parametrize("mode", list(DTYPES))
def test_strided_out(out_layout, mode, gen):
    """Outputs the 16-byte stores cannot take: element stores, still clipped at the edges."""
    m, n, k = 129, 131, 200
    a = _a(m, k, DTYPES[mode], gen)
    b = _b(k, n, DTYPES[mode], gen)
    out = _poisoned(a, b, out_layout)
    for index in [c.index for c in _wgmma_configs()]:
        out.fill_(float("nan"))
        _run(a, b, mode, config=index, out=out)
        _check(out, a, b, mode, f"out {out_layout} config {index} {mode}")


# ---- M-contiguous A (a.t(): the A^T of dB = A^T dC), read through wgmma's transpose bit --------------


def _a_mn_configs():
    from aiter_lite.tuning.matmul_configs import wgmma_has_kernel

    return [c.index for c in _wgmma_configs() if wgmma_has_kernel(c, a_k_major=False)]


@needs_sm90
@pytest.mark.parametrize("mode", list(DTYPES))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_a_m_major_shapes(shape, mode, gen):
    """Config -1 with an M-contiguous A on every tail shape: wgmma (M tails are the zero-filled inner
    dim of A's boxes now), in the config the Python mirror predicts."""
    from aiter_lite.tuning.matmul_configs import default_config

    m, n, k = shape
    a = _a(m, k, DTYPES[mode], gen, "t8")
    b = _b(k, n, DTYPES[mode], gen)
    out, plan = _run(a, b, mode)
    _check(out, a, b, mode, f"A^T {shape} {mode} ({plan}) seed={gen.initial_seed()}")
    if k > 1:  # the M-major kernel (K = 1: A is K-contiguous as well, and takes the K-major one)
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        assert int(plan.split()[1]) in _a_mn_configs()
        assert int(plan.split()[1]) == default_config("wgmma_16", m, n, 1, sms, k=k, a_k_major=False)


@needs_sm90
@pytest.mark.parametrize("shape", [(257, 383, 1000), (64, 256, 96), (7, 129, 129), (1100, 1200, 1024),
                                   (4096, 4096, 256), (300, 520, 8192 + 72)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("index", _a_mn_configs())
def test_a_m_major_every_config(index, shape, gen):
    """Every config with an M-major A kernel: tails on all sides, many tiles per CTA, long K (the
    ring through many phases), both dtypes."""
    _check_config(index, *shape, gen, f"A^T config {index} {shape}", "pad8", "t8")


@needs_sm90
@pytest.mark.parametrize("case", ["a3-b3", "a3-b2", "bcast-b3", "a2-b3"])
@pytest.mark.parametrize("index", [-1] + _a_mn_configs())
def test_a_m_major_batched(index, case, gen):
    """Batched and broadcast M-contiguous A."""
    batch, m, n, k = 3, 136, 264, 129
    dt, mode = torch.bfloat16, "bf16"
    la, lb = case.split("-")
    if la == "a2":
        a = _a(m, k, dt, gen, "t8")
    elif la == "bcast":
        a = _a(m, k, dt, gen, "t8").expand(batch, m, k)
    else:
        a = _a(m, k, dt, gen, "t8", batch=batch)
    b = _b(k, n, dt, gen) if lb == "b2" else _b(k, n, dt, gen, batch=batch)
    out, plan = _run(a, b, mode, config=index)
    _check(out, a, b, mode, f"A^T batched {case} config {index} ({plan})")


@needs_sm90
@pytest.mark.parametrize("mode", list(DTYPES))
def test_backward_runs_wgmma(mode, gen):
    """The backward of a @ b and of x @ w.t() (nn.Linear): dA = dC B^T and dB = A^T dC both on wgmma
    (the transposes are views), gradients against float64."""
    import aiter_lite
    from aiter_lite.ops.matmul import matmul_plan

    dt = DTYPES[mode]
    m, n, k = 1000, 264, 520
    for b_layout in ("n", "t"):
        a = _a(m, k, dt, gen, "n").requires_grad_()
        b = _b(k, n, dt, gen, b_layout).detach().requires_grad_()
        dc = _randn(m, n, dtype=dt, gen=gen)
        assert matmul_plan(dc, b.detach().t()).split()[0] == "wgmma"
        assert matmul_plan(a.detach().t(), dc).split()[0] == "wgmma"
        aiter_lite.matmul(a, b).backward(dc)
        _check(a.grad, dc, b.detach().t(), mode, f"dA B {b_layout}")
        _check(b.grad, a.detach().t(), dc, mode, f"dB B {b_layout}")


# ---- fallbacks and errors ---------------------------------------------------------------------------


@needs_sm90
@pytest.mark.parametrize("case,expect", [("a_t", "tensor_core"), ("a_t_bt", "tensor_core"), ("a_off", "simt"),
                                         ("a_odd_k", "simt"), ("b_odd_n", "simt"), ("bt_odd_k", "simt")])
def test_fallbacks(case, expect, gen):
    """Layouts the wgmma kernel does not take run the mma.sync kernel (an M-contiguous A in a config
    without its kernel: the first config, a 2-CTA cluster; an M-contiguous A with a K-contiguous B) or,
    where that cannot take them either (strides or pointers off 16 bytes), the SIMT kernel
    (docs/matmul.md), even with variant="wgmma" and an explicit wgmma config (validated, then not used)."""
    dt, mode = torch.float16, "fp16"
    m, n, k = 136, 72, 88
    a, b = _a(m, k, dt, gen), _b(k, n, dt, gen)
    if case == "a_t":
        a = _a(m, k, dt, gen, "t")
    elif case == "a_t_bt":
        a, b = _a(m, k, dt, gen, "t"), _b(k, n, dt, gen, "t")
    elif case == "a_off":
        a = _a(m, k, dt, gen, "off")
    elif case == "a_odd_k":
        k = 87
        a, b = _a(m, k, dt, gen, "n"), _b(k, n, dt, gen)
    elif case == "b_odd_n":
        n = 71
        b = _b(k, n, dt, gen, "n")
    elif case == "bt_odd_k":
        k = 87
        a, b = _a(m, k, dt, gen), _b(k, n, dt, gen, "t")
    config = _wgmma_configs()[0].index
    if case == "a_t":
        from aiter_lite.tuning.matmul_configs import MATMUL_CONFIGS, wgmma_has_kernel

        assert not wgmma_has_kernel(MATMUL_CONFIGS[config], a_k_major=False)
    out, plan = _run(a, b, mode, variant="wgmma", config=config, expect=expect)
    _check(out, a, b, mode, f"fallback {case} ({plan})")


@needs_sm90
def test_default_config_matches_python_mirror(gen):
    """config=-1 on the wgmma path (wgmma_choose_config) agrees with aiter_lite.tuning.matmul_configs,
    on the issue's shapes and a few more (the choice weighs K: split-K configs)."""
    from aiter_lite.tuning.matmul_configs import MATMUL_CONFIGS, b_rows_off_sector, default_config

    from aiter_lite.ops.matmul import matmul_cluster_slots, matmul_plan

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    slots = {size: matmul_cluster_slots(size) for size in (2, 4)}
    assert slots[2] > 0 and slots[4] > 0 and slots[4] <= sms // 4, slots
    # B lines off the sector grid (N-major B with n = 3000, 5000: rows of 6000 and 10000 bytes;
    # K-major b = w.t() with k = 3000) bring in the 2 x 2 clusters where M > 256; A's lines do not.
    shapes = ((4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 2048), (3000, 3000, 3000),
              (4096, 11008, 4096), (8192, 1024, 8192), (128, 8192, 8192), (16, 4096, 4096), (16, 4096, 64),
              (1000, 1000, 1000), (1, 4096, 4096), (512, 4096, 4096), (64, 64, 64), (5000, 5000, 5000),
              (3000, 3000, 4096), (4096, 4096, 3000), (128, 3000, 8192), (2000, 2000, 2000),
              (64, 11008, 4096), (65, 11008, 4096), (32, 32000, 4096))  # 64 rows or fewer: 64-row tiles
    for b_layout in ("n", "t"):
        for m, n, k in shapes:
            a = torch.empty(m, k, device="cuda", dtype=torch.bfloat16)
            b = torch.empty(k, n, device="cuda", dtype=torch.bfloat16) if b_layout == "n" else \
                torch.empty(n, k, device="cuda", dtype=torch.bfloat16).t()
            kernel, cfg = matmul_plan(a, b).split()
            assert kernel == "wgmma"
            lines, line_stride = (k, b.stride(0)) if b_layout == "n" else (n, b.stride(1))
            off = b_rows_off_sector(m, lines, line_stride)
            assert off == (m > 256 and (n if b_layout == "n" else k) % 16 == 8), (m, n, k, b_layout)
            want = default_config("wgmma_16", m, n, 1, sms, k=k, b_rows_off_sector=off, cluster_slots=slots)
            assert int(cfg) == want, (m, n, k, b_layout)
            if off:
                assert MATMUL_CONFIGS[want].cluster_m * MATMUL_CONFIGS[want].cluster_n > 1, (m, n, k, b_layout)
    a = torch.empty(3, 100, 264, device="cuda", dtype=torch.bfloat16)
    b = torch.empty(264, 520, device="cuda", dtype=torch.bfloat16)
    kernel, cfg = matmul_plan(a, b).split()
    assert int(cfg) == default_config("wgmma_16", 100, 520, 3, sms, k=264, cluster_slots=slots)


@needs_sm90
@pytest.mark.parametrize("size", [1000, 2048])
def test_repeatable(size, gen):
    """Same inputs, same bits, in every config: no race between stages, consumers or cluster peers."""
    for index in [c.index for c in _wgmma_configs()]:
        a = _a(size, size, torch.bfloat16, gen)
        b = _b(size, size, torch.bfloat16, gen, "t8")
        first, _ = _run(a, b, "bf16", config=index)
        first = first.clone()
        for _ in range(3):
            again, _ = _run(a, b, "bf16", config=index)
            assert torch.equal(again, first), f"config {index} not repeatable"


def test_bad_requests(gen):
    import aiter_lite

    a32 = torch.randn(64, 64, device="cuda")
    with pytest.raises(ValueError, match="wgmma"):
        aiter_lite.matmul(a32, a32, variant="wgmma")
    a16 = a32.half()
    from aiter_lite.tuning.matmul_configs import DEFAULT_CONFIG

    with pytest.raises(ValueError, match="config"):  # a mma.sync config for the wgmma variant
        aiter_lite.matmul(a16, a16, variant="wgmma", config=DEFAULT_CONFIG["tensor_core_16"])
    with pytest.raises(ValueError, match="config"):  # a wgmma config for the mma.sync variant
        aiter_lite.matmul(a16, a16, variant="tensor_core", config=DEFAULT_CONFIG["wgmma_16"])
    if not _sm90():
        with pytest.raises(ValueError, match="compute capability 9.0"):
            aiter_lite.matmul(a16, a16, variant="wgmma")
        with pytest.raises(ValueError, match="compute capability 9.0"):
            aiter_lite.matmul(a16, a16, config=DEFAULT_CONFIG["wgmma_16"])


# ---- the tf32 kernel (fp32 inputs, allow_tf32): csrc/kernels/matmul_wgmma_tf32.cuh -----------------
# TMA needs 16-byte row strides, i.e. multiples of 4 fp32: "pad4" slices of wider tensors let odd M,
# N, K (1, 7, 127, 129, 1000) run the kernel. Tolerances as tests/test_gpu_matmul.py for tf32: 6e-4 on
# outputs of >= 4096 elements, 1e-3 on smaller ones (inputs rounded to nearest give 2.9e-4 on random
# normal data at any K, so 3e-4 would fail about half the time); test_tf32_rounds_both_operands checks
# the rounding itself with a tighter bound on large outputs.

TF32_SHAPES = [
    (1, 1, 1), (1, 7, 129), (7, 1, 127), (7, 127, 1000), (127, 129, 7), (129, 127, 129), (1000, 7, 1000),
    (127, 1000, 129), (1000, 1000, 127), (129, 1000, 1), (1000, 129, 1000), (1, 1000, 1000), (256, 128, 96),
    (512, 384, 1024), (1000, 1000, 1000),
]


def _round4(x: int) -> int:
    return (x + 3) // 4 * 4


def _tf32_configs():
    from aiter_lite.tuning.matmul_configs import configs_for

    return configs_for("wgmma_tf32")


def _a32(m, k, gen, layout="pad4", batch=None):
    """fp32 A [.., m, k]. pad4: K-contiguous, row stride padded to a multiple of 4; n: contiguous;
    t: M-contiguous (a transposed view)."""
    lead = () if batch is None else (batch,)
    if layout == "pad4":
        return _randn(*lead, m, _round4(k), dtype=torch.float32, gen=gen)[..., :k]
    return _a(m, k, torch.float32, gen, layout, batch)


def _b32(k, n, gen, layout="pad4", batch=None):
    """fp32 B [.., k, n]. pad4: N-contiguous, row stride padded to a multiple of 4; t4: K-contiguous
    (w.t() of an [n, k] weight with a padded row stride); n: contiguous; t: w.t() of a contiguous
    [n, k] weight."""
    lead = () if batch is None else (batch,)
    if layout == "pad4":
        return _randn(*lead, k, _round4(n), dtype=torch.float32, gen=gen)[..., :n]
    if layout == "t4":
        return _randn(*lead, n, _round4(k), dtype=torch.float32, gen=gen)[..., :k].transpose(-1, -2)
    return _b(k, n, torch.float32, gen, layout, batch)


def _tf32_tol(numel: int) -> float:
    return 6e-4 if numel >= 4096 else 1e-3


def _tf32_err(out, a, b) -> float:
    from aiter_lite.ops import matmul_ref

    ref = matmul_ref(a, b)
    scale = torch.matmul(a.double().abs(), b.double().abs())
    assert out.shape == ref.shape
    out64 = out.double()
    assert torch.isfinite(out64).all(), "non-finite outputs (unwritten NaN poison?)"
    denom = max(ref.norm().item(), scale.norm().item() / math.sqrt(a.shape[-1]))
    return (out64 - ref).norm().item() / max(denom, 1e-30)


def _check_tf32(out, a, b, what, tol=None):
    err = _tf32_err(out, a, b)
    tol = _tf32_tol(out.numel()) if tol is None else tol
    assert err <= tol, f"{what}: relative error {err:.3e} > {tol:.0e}"


def _run_tf32(a, b, variant="auto", config=-1, out=None, expect="wgmma_tf32"):
    """aiter_lite.matmul(..., allow_tf32=True) into a NaN-poisoned out, after checking the kernel."""
    import aiter_lite
    from aiter_lite.ops.matmul import matmul_plan

    if out is None:
        out = _poisoned(a, b)
    if variant == "auto" and config == -1 and a.shape[-2] <= SKINNY_MAX_M:
        expect = "skinny"  # few rows of fp32 A: the memory-bound kernel (test_gpu_matmul_skinny.py)
    plan = matmul_plan(a, b, out, allow_tf32=True, variant=variant, config=config)
    kernel, cfg = plan.split()
    assert kernel == expect, f"expected the {expect} kernel, the dispatch plans {plan!r}"
    if config >= 0 and expect == "wgmma_tf32":
        assert int(cfg) == config
    res = aiter_lite.matmul(a, b, out, allow_tf32=True, variant=variant, config=config)
    assert res.data_ptr() == out.data_ptr()
    torch.cuda.synchronize()
    return out, plan


@needs_sm90
@pytest.mark.parametrize("b_layout", ["pad4", "t4"])
@pytest.mark.parametrize("shape", TF32_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_tf32_shapes(shape, b_layout, gen):
    """variant auto (the default choice) on every tail shape: M, N, K in {1, 7, 127, 129, 1000}, K not a
    multiple of 32, both B layouts."""
    m, n, k = shape
    a, b = _a32(m, k, gen), _b32(k, n, gen, b_layout)
    out, plan = _run_tf32(a, b)
    _check_tf32(out, a, b, f"{shape} B {b_layout} ({plan}) seed={gen.initial_seed()}")


@needs_sm90
@pytest.mark.parametrize("b_layout", ["pad4", "t4"])
@pytest.mark.parametrize("index", [c.index for c in _tf32_configs()])
def test_tf32_every_config(index, b_layout, gen):
    """Each tf32 config explicitly (variant "wgmma") on every tail shape, and on a shape with more
    tiles than CTAs (the persistent loop runs several tiles per CTA, the ring wraps many times)."""
    for m, n, k in TF32_SHAPES + [(2048, 2048, 256), (600, 4096, 1000)]:
        a, b = _a32(m, k, gen), _b32(k, n, gen, b_layout)
        out, plan = _run_tf32(a, b, variant="wgmma", config=index)
        _check_tf32(out, a, b, f"config {index} {(m, n, k)} B {b_layout} seed={gen.initial_seed()}")


@needs_sm90
@pytest.mark.parametrize("index", [c.index for c in _tf32_configs()])
def test_tf32_long_k(index, gen):
    """Many k-tiles (odd count: the fragment buffers' parity ends on the other buffer), both layouts."""
    m, n, k = 300, 520, 8192 + 36
    for b_layout in ("pad4", "t4"):
        a, b = _a32(m, k, gen), _b32(k, n, gen, b_layout)
        out, _ = _run_tf32(a, b, config=index)
        _check_tf32(out, a, b, f"config {index} long K B {b_layout} seed={gen.initial_seed()}")


@needs_sm90
@pytest.mark.parametrize("b_layout", ["n", "t"])
@pytest.mark.parametrize("shape", [(7, 16, 127), (129, 127, 128), (1000, 129, 1000), (256, 512, 128), (4, 4, 4)],
                         ids=lambda s: "x".join(map(str, s)))
def test_tf32_auto_on_contiguous_operands(shape, b_layout, gen):
    """Plain contiguous tensors (the torch.matmul case): the tf32 wgmma kernel when the leading dims
    are multiples of 4 fp32 (16 bytes), else the SIMT kernel (mma.sync needs the same); correct
    either way."""
    m, n, k = shape
    a, b = _a32(m, k, gen, "n"), _b32(k, n, gen, b_layout)
    lead_b = n if b_layout == "n" else k
    tma_ok = (k % 4 == 0 or m == 1) and (lead_b % 4 == 0 or (k if b_layout == "n" else n) == 1)
    tma_ok = tma_ok or _repacked(a, b)
    out, plan = _run_tf32(a, b, expect="wgmma_tf32" if tma_ok else "simt")
    _check_tf32(out, a, b, f"auto {shape} B {b_layout} ({plan})")


@needs_sm90
def test_tf32_rounds_both_operands(gen):
    """Both operands are rounded to nearest tf32 (the copy engine for A, cvt.rna for B): on large random
    normal outputs that gives 2.8e-4 .. 3.0e-4, a truncated operand 4.6e-4 or more (CPU simulation of
    the same data), so 3.6e-4 separates the two."""
    for b_layout in ("n", "t"):
        a, b = _a32(1024, 2048, gen, "n"), _b32(2048, 1024, gen, b_layout)
        out, plan = _run_tf32(a, b)
        _check_tf32(out, a, b, f"rounding, B {b_layout} ({plan})", tol=3.6e-4)


@needs_sm90
@pytest.mark.parametrize("case", ["a3-b3", "a3-b2", "a2-b3t", "bcast-b3", "a3-bcastt"])
@pytest.mark.parametrize("index", [-1] + [c.index for c in _tf32_configs()])
def test_tf32_batched(index, case, gen):
    """Batch entries are further work units; stride-0 (broadcast) operands use batch coordinate 0."""
    batch, m, n, k = 3, 129, 264, 132
    la, lb = case.split("-")
    if la == "a2":
        a = _a32(m, k, gen)
    elif la == "bcast":
        a = _a32(m, k, gen).expand(batch, m, k)
    else:
        a = _a32(m, k, gen, batch=batch)
    layout = "t4" if lb.endswith("t") else "pad4"
    if lb.startswith("b2"):
        b = _b32(k, n, gen, layout)
    elif lb.startswith("bcast"):
        b = _b32(k, n, gen, layout).expand(batch, k, n)
    else:
        b = _b32(k, n, gen, layout, batch=batch)
    out, plan = _run_tf32(a, b, config=index)
    assert out.shape == (batch, m, n)
    _check_tf32(out, a, b, f"batched {case} config {index} ({plan})")


@needs_sm90
@pytest.mark.parametrize("out_layout", ["t", "pad", "off"])
def test_tf32_strided_out(out_layout, gen):
    """Outputs the 8-byte stores cannot take: element stores, still clipped at the edges."""
    m, n, k = 129, 131, 200
    for b_layout in ("pad4", "t4"):
        a, b = _a32(m, k, gen), _b32(k, n, gen, b_layout)
        out = _poisoned(a, b, out_layout)
        for index in [c.index for c in _tf32_configs()]:
            out.fill_(float("nan"))
            _run_tf32(a, b, config=index, out=out)
            _check_tf32(out, a, b, f"out {out_layout} config {index} B {b_layout}")


@needs_sm90
@pytest.mark.parametrize("case,expect", [("a_t", "tensor_core"), ("a_off", "simt"), ("a_odd_k", "simt"),
                                         ("b_odd_n", "simt"), ("bt_odd_k", "simt"), ("tensor_core", "tensor_core")])
def test_tf32_fallbacks(case, expect, gen):
    """Layouts the tf32 wgmma kernel does not take run the mma.sync tf32 kernel (M-contiguous A) or the
    SIMT kernel (strides or pointers off 16 bytes), even with variant "wgmma" and an explicit config;
    variant "tensor_core" keeps running mma.sync."""
    m, n, k = 136, 72, 88
    a, b = _a32(m, k, gen), _b32(k, n, gen)
    variant, config = "wgmma", _tf32_configs()[0].index
    if case == "a_t":
        a = _a32(m, k, gen, "t")
    elif case == "a_off":
        a = _randn(m * k + 1, dtype=torch.float32, gen=gen)[1:].view(m, k)
    elif case == "a_odd_k":
        k = 87
        a, b = _a32(m, k, gen, "n"), _b32(k, n, gen)
    elif case == "b_odd_n":
        n = 71
        b = _b32(k, n, gen, "n")
    elif case == "bt_odd_k":
        k = 87
        a, b = _a32(m, k, gen), _b32(k, n, gen, "t")
    elif case == "tensor_core":
        variant, config = "tensor_core", -1
    out, plan = _run_tf32(a, b, variant=variant, config=config, expect=expect)
    _check_tf32(out, a, b, f"fallback {case} ({plan})")


@needs_sm90
def test_tf32_default_config_matches_python_mirror():
    """config=-1 on the tf32 wgmma path (wgmma_tf32_choose_config) agrees with
    aiter_lite.tuning.matmul_configs.default_config("wgmma_tf32", ...)."""
    from aiter_lite.ops.matmul import matmul_plan
    from aiter_lite.tuning.matmul_configs import default_config

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    shapes = ((4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 2048), (3000, 3000, 3000),
              (4096, 11008, 4096), (8192, 1024, 8192), (128, 8192, 8192), (16, 4096, 4096), (1000, 1000, 1000),
              (64, 64, 64))
    shapes = tuple(s for s in shapes if s[0] > SKINNY_MAX_M)  # fewer rows of fp32 run the skinny kernel
    for m, n, k in shapes:
        a = torch.empty(m, k, device="cuda")
        b = torch.empty(k, n, device="cuda")
        kernel, cfg = matmul_plan(a, b, allow_tf32=True).split()
        assert kernel == "wgmma_tf32"
        assert int(cfg) == default_config("wgmma_tf32", m, n, 1, sms, k=k), (m, n, k)


@needs_sm90
def test_tf32_repeatable(gen):
    """Same inputs, same bits, in every config: no race between stages or consumers."""
    for index in [c.index for c in _tf32_configs()]:
        for b_layout in ("pad4", "t4"):
            a, b = _a32(1000, 1000, gen), _b32(1000, 1000, gen, b_layout)
            first, _ = _run_tf32(a, b, config=index)
            first = first.clone()
            for _ in range(2):
                again, _ = _run_tf32(a, b, config=index)
                assert torch.equal(again, first), f"config {index} B {b_layout} not repeatable"


def test_tf32_bad_requests():
    import aiter_lite

    a32 = torch.randn(64, 64, device="cuda")
    with pytest.raises(ValueError, match="allow_tf32"):  # strict fp32 has no wgmma kernel
        aiter_lite.matmul(a32, a32, allow_tf32=False, variant="wgmma")
    from aiter_lite.tuning.matmul_configs import DEFAULT_CONFIG

    with pytest.raises(ValueError, match="config"):  # a tf32 wgmma config for the mma.sync variant
        aiter_lite.matmul(a32, a32, allow_tf32=True, variant="tensor_core", config=DEFAULT_CONFIG["wgmma_tf32"])
    with pytest.raises(ValueError, match="config"):  # an fp16 wgmma config for tf32
        aiter_lite.matmul(a32, a32, allow_tf32=True, variant="wgmma", config=DEFAULT_CONFIG["wgmma_16"])
    if not _sm90():
        with pytest.raises(ValueError, match="compute capability 9.0"):
            aiter_lite.matmul(a32, a32, allow_tf32=True, variant="wgmma")
