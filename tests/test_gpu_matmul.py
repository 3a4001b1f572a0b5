"""GPU tests of aiter_lite.matmul against a float64 reference: every variant x dtype (tf32 with
allow_tf32=True), tail shapes, transposed / sliced / misaligned operands (fast paths and their
fallbacks), batched with broadcast, every tile config, poisoned outputs. Skipped without CUDA.

Error metric: ||out - ref||_F / max(||ref||_F, || |a| @ |b| ||_F / sqrt(K)), in float64. The second
term only matters when the sum cancels (a single output element, say), where the plain relative
error measures the cancellation instead of the kernel.
Tolerances: fp32 1e-5; fp16 2e-3; bf16 1e-2; tf32 6e-4 on outputs of >= 4096 elements and 1e-3 on
smaller ones. TF32 inputs rounded to nearest give 2.9e-4 on random normal data whatever K is (a CPU
simulation: 2.8e-4 .. 3.0e-4 for K = 16 .. 4096), so 3e-4 would fail half the time; truncated
inputs (no cvt.rna) give 7.7e-4, which the 6e-4 bound catches.
"""
from __future__ import annotations

import math

import pytest
import torch

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
VARIANTS = ("naive", "tiled", "tensor_core", "auto")

# (M, N, K) drawn from {1, 7, 16, 127, 128, 129, 1000, 4096}: every size appears in each position,
# tails on every side, a few full tiles, K = 4096 only with small M or N.
SHAPES = [
    (1, 1, 1), (1, 7, 16), (7, 1, 129), (16, 16, 16), (7, 127, 128), (127, 129, 7),
    (128, 128, 128), (129, 127, 129), (1000, 7, 1000), (16, 1000, 127), (129, 1000, 4096),
    (4096, 16, 1000), (1, 4096, 4096), (1000, 1000, 16), (128, 4096, 129), (4096, 129, 1),
]
SMALL_SHAPES = [(7, 16, 127), (129, 127, 128), (128, 1000, 129), (1000, 129, 1000)]


def _tol(mode: str, numel: int) -> float:
    if mode == "tf32":
        return 6e-4 if numel >= 4096 else 1e-3
    return {"fp32": 1e-5, "fp16": 2e-3, "bf16": 1e-2}[mode]


def _operand(rows: int, cols: int, dtype, layout: str, gen, batch: int | None = None) -> torch.Tensor:
    """A [.., rows, cols] operand with the given memory layout:
    n: contiguous; t: a transposed view (column-major); pad: rows padded to an odd leading dim
    (misaligned for 16-byte loads); off: a view one element into its storage (misaligned pointer);
    step: every other column (no unit stride: aiter_lite copies it); bcast: batch stride 0."""
    lead = () if batch is None else (batch,)

    def randn(*shape):
        return torch.randn(*shape, device="cuda", generator=gen, dtype=torch.float32).to(dtype)

    if layout == "n":
        return randn(*lead, rows, cols)
    if layout == "t":
        return randn(*lead, cols, rows).transpose(-1, -2)
    if layout == "pad":
        return randn(*lead, rows, cols + 3)[..., :cols]
    if layout == "off":
        return randn(math.prod(lead) * rows * cols + 1)[1:].view(*lead, rows, cols)
    if layout == "step":
        return randn(*lead, rows, 2 * cols)[..., ::2]
    if layout == "bcast":
        assert batch is not None
        return randn(rows, cols).expand(batch, rows, cols)
    raise ValueError(layout)


def _reference(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    from aiter_lite.ops import matmul_ref

    ref = matmul_ref(a, b)
    scale = torch.matmul(a.double().abs(), b.double().abs())
    return ref, scale


def _check(out: torch.Tensor, a: torch.Tensor, b: torch.Tensor, mode: str, what: str) -> None:
    assert out.dtype == a.dtype
    ref, scale = _reference(a, b)
    assert out.shape == ref.shape, f"{what}: shape {tuple(out.shape)} != {tuple(ref.shape)}"
    out64 = out.double()
    assert torch.isfinite(out64).all(), f"{what}: non-finite outputs (unwritten NaN poison?)"
    k = a.shape[-1]
    denom = max(ref.norm().item(), scale.norm().item() / math.sqrt(k))
    err = (out64 - ref).norm().item() / denom
    tol = _tol(mode, ref.numel())
    assert err <= tol, f"{what}: relative error {err:.3e} > {tol:.0e}"


def _run(a, b, mode, variant, config=-1, out=None):
    import aiter_lite

    if out is None:  # poisoned: an element the kernel misses stays NaN
        shape = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
        out = torch.full(shape, float("nan"), device="cuda", dtype=a.dtype)
    res = aiter_lite.matmul(a, b, out, allow_tf32=(mode == "tf32"), variant=variant, config=config)
    assert res is out or res.data_ptr() == out.data_ptr()
    torch.cuda.synchronize()
    return out


def _skip_unsupported(mode: str, variant: str) -> None:
    if mode == "fp32" and variant == "tensor_core":
        pytest.skip("tensor_core with strict fp32 is an error (test_tensor_core_fp32_needs_tf32)")
    if mode == "tf32" and variant in ("naive", "tiled"):
        pytest.skip("tf32 applies to the tensor-core kernel only (naive/tiled are strict)")


@pytest.fixture
def gen():
    g = torch.Generator(device="cuda")
    g.seed()  # fresh inputs every run; the seed is in the failure report
    return g


def _seed_note(gen) -> str:
    return f"seed={gen.initial_seed()}"


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("mode", list(DTYPES))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_shapes(shape, mode, variant, gen):
    _skip_unsupported(mode, variant)
    m, n, k = shape
    if variant == "naive" and m * n * k > 2**31:
        pytest.skip("too slow for the naive kernel")
    a = _operand(m, k, DTYPES[mode], "n", gen)
    b = _operand(k, n, DTYPES[mode], "n", gen)
    out = _run(a, b, mode, variant)
    _check(out, a, b, mode, f"{shape} {mode} {variant} {_seed_note(gen)}")


@pytest.mark.parametrize("variant", ("tiled", "tensor_core", "auto"))
@pytest.mark.parametrize("mode", list(DTYPES))
@pytest.mark.parametrize("layout", ["nt", "tn", "tt", "pad-n", "n-pad", "off-t", "t-off", "step-n", "n-step"])
@pytest.mark.parametrize("shape", SMALL_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_layouts(shape, layout, mode, variant, gen):
    """Transposed operands take the tensor-core fast path in either orientation; padded (odd leading
    dim), offset (misaligned pointer) and stepped operands take the fallbacks."""
    _skip_unsupported(mode, variant)
    m, n, k = shape
    la, lb = layout.split("-") if "-" in layout else tuple(layout)
    a = _operand(m, k, DTYPES[mode], la, gen)
    b = _operand(k, n, DTYPES[mode], lb, gen)
    out = _run(a, b, mode, variant)
    _check(out, a, b, mode, f"{shape} {layout} {mode} {variant} {_seed_note(gen)}")


@pytest.mark.parametrize("variant", ("naive", "tiled", "tensor_core", "auto"))
@pytest.mark.parametrize("mode", list(DTYPES))
@pytest.mark.parametrize("case", ["a3-b2", "a2-b3", "a3-b3", "a3t-b3t", "a3-bcast", "bcast-b3t"])
@pytest.mark.parametrize("mnk", [(129, 127, 131), (256, 512, 128)], ids=["edges", "interior"])
def test_batched(mnk, case, mode, variant, gen):
    _skip_unsupported(mode, variant)
    batch, (m, n, k) = 5, mnk
    dt = DTYPES[mode]
    la, lb = case.split("-")

    def make(spec, rows, cols):
        if spec == "a2" or spec == "b2":
            return _operand(rows, cols, dt, "n", gen)
        if spec == "bcast":
            return _operand(rows, cols, dt, "bcast", gen, batch)
        return _operand(rows, cols, dt, "t" if spec.endswith("t") else "n", gen, batch)

    a, b = make(la, m, k), make(lb, k, n)
    out = _run(a, b, mode, variant)
    assert out.shape == (batch, m, n)
    _check(out, a, b, mode, f"batched {case} {mode} {variant} {_seed_note(gen)}")


def _configs():
    from aiter_lite.tuning.matmul_configs import MATMUL_CONFIGS

    return MATMUL_CONFIGS


def _skip_unbuilt_tc(index):
    """An sm_90 device runs the sm_90a image, which holds only the tensor-core configs the planner
    routes to there (tc_config_on_sm90); the others are tested on other archs."""
    from aiter_lite.tuning.matmul_configs import tc_config_on_sm90

    if torch.cuda.get_device_capability() == (9, 0) and not tc_config_on_sm90(index):
        pytest.skip(f"tensor-core config {index} is not compiled for sm_90a (mma.sync is wgmma's fallback there)")


def _modes_for(cfg) -> list[tuple[str, str]]:
    if cfg.path == "simt":
        return [("fp32", "tiled"), ("fp16", "tiled"), ("bf16", "tiled")]
    if cfg.path == "tensor_core_16":
        return [("fp16", "tensor_core"), ("bf16", "tensor_core")]
    if cfg.path == "wgmma_16":  # Hopper only; tests/test_gpu_matmul_wgmma.py covers it in depth
        sm90 = torch.cuda.get_device_capability() == (9, 0)
        return [("fp16", "wgmma"), ("bf16", "wgmma")] if sm90 else []
    if cfg.path == "wgmma_tf32":  # Hopper only, as above
        sm90 = torch.cuda.get_device_capability() == (9, 0)
        return [("tf32", "wgmma")] if sm90 else []
    return [("tf32", "tensor_core")]


@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
@pytest.mark.parametrize("shape", [(257, 383, 1000), (64, 256, 96), (1, 7, 129), (512, 768, 256)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("index", range(len(_configs())))
def test_every_config(index, shape, layout, gen):
    """Each table entry in each operand orientation (a separate kernel instantiation each). The
    tensor-core kernel has two copies of its main loop: 512x768x256 runs every config's unguarded
    copy (all blocks inside, K a multiple of BK), the other shapes the guarded one."""
    _skip_unbuilt_tc(index)
    cfg = _configs()[index]
    m, n, k = shape
    for mode, variant in _modes_for(cfg):
        a = _operand(m, k, DTYPES[mode], layout[0], gen)
        b = _operand(k, n, DTYPES[mode], layout[1], gen)
        out = _run(a, b, mode, variant, config=index)
        _check(out, a, b, mode, f"config {index} {shape} {layout} {mode} {_seed_note(gen)}")


@pytest.mark.parametrize("index", range(len(_configs())))
def test_config_large(index, gen):
    """Many k-tiles through every stage of the pipeline, several blocks in the grouped order."""
    _skip_unbuilt_tc(index)
    cfg = _configs()[index]
    m, n, k = 1000, 1100, 4096
    for mode, variant in _modes_for(cfg)[:1]:
        a = _operand(m, k, DTYPES[mode], "n", gen)
        b = _operand(k, n, DTYPES[mode], "n", gen)
        out = _run(a, b, mode, variant, config=index)
        _check(out, a, b, mode, f"config {index} large {mode} {_seed_note(gen)}")


@pytest.mark.parametrize("mode", list(DTYPES))
@pytest.mark.parametrize("variant", ("naive", "tiled", "tensor_core"))
@pytest.mark.parametrize("out_layout", ["t", "pad", "off"])
def test_strided_out(out_layout, variant, mode, gen):
    """Outputs that are transposed, padded or misaligned take the scalar-store epilogue."""
    _skip_unsupported(mode, variant)
    m, n, k = 129, 131, 200
    dt = DTYPES[mode]
    a, b = _operand(m, k, dt, "n", gen), _operand(k, n, dt, "n", gen)
    out = _operand(m, n, dt, out_layout, gen)
    out.fill_(float("nan"))
    _run(a, b, mode, variant, out=out)
    _check(out, a, b, mode, f"out {out_layout} {mode} {variant} {_seed_note(gen)}")


def test_large_batch_is_sliced(gen):
    """More than 65535 batch entries: the backend launches the batch in slices of gridDim.z."""
    batch = 70001
    a = _operand(3, 5, torch.float16, "n", gen, batch)
    b = _operand(5, 2, torch.float16, "n", gen, batch)
    for variant in ("naive", "tiled", "tensor_core"):
        out = _run(a, b, "fp16", variant)
        _check(out, a, b, "fp16", f"batch {batch} {variant}")


def test_zero_sizes(gen):
    import aiter_lite

    a = _operand(5, 0, torch.float16, "n", gen)
    b = _operand(0, 7, torch.float16, "n", gen)
    out = aiter_lite.matmul(a, b)
    assert out.shape == (5, 7) and (out == 0).all()
    e = aiter_lite.matmul(_operand(0, 4, torch.float16, "n", gen), _operand(4, 3, torch.float16, "n", gen))
    assert e.shape == (0, 3)


def test_tensor_core_fp32_needs_tf32(gen):
    import aiter_lite

    a, b = _operand(16, 16, torch.float32, "n", gen), _operand(16, 16, torch.float32, "n", gen)
    with pytest.raises(ValueError, match="allow_tf32"):
        aiter_lite.matmul(a, b, allow_tf32=False, variant="tensor_core")


def test_bad_configs(gen):
    import aiter_lite
    from aiter_lite.tuning.matmul_configs import DEFAULT_CONFIG, MATMUL_CONFIGS

    a16, b16 = _operand(64, 64, torch.float16, "n", gen), _operand(64, 64, torch.float16, "n", gen)
    a32, b32 = a16.float(), b16.float()
    with pytest.raises(ValueError, match="out of range"):
        aiter_lite.matmul(a16, b16, config=len(MATMUL_CONFIGS))
    with pytest.raises(ValueError, match="config"):  # SIMT config for the fp16 tensor-core path
        aiter_lite.matmul(a16, b16, config=DEFAULT_CONFIG["simt"])
    with pytest.raises(ValueError, match="config"):  # tensor-core config for strict fp32
        aiter_lite.matmul(a32, b32, allow_tf32=False, config=DEFAULT_CONFIG["tensor_core_16"])
    with pytest.raises(ValueError, match="config"):  # fp16 config for the tf32 path
        aiter_lite.matmul(a32, b32, allow_tf32=True, config=DEFAULT_CONFIG["tensor_core_16"])
    with pytest.raises(ValueError, match="config"):
        aiter_lite.matmul(a16, b16, variant="naive", config=0)
    # A tensor-core config on a layout that falls back to the SIMT kernel is accepted.
    a_off = _operand(64, 64, torch.float16, "off", gen)
    out = _run(a_off, b16, "fp16", "tensor_core", config=DEFAULT_CONFIG["tensor_core_16"])
    _check(out, a_off, b16, "fp16", "fallback with a tensor-core config")


@pytest.mark.parametrize("size", [1000, 1024])
def test_repeatable(size, gen):
    """Same inputs, same bits: no race between pipeline stages (a moving error would show here)."""
    for mode, variant in (("fp16", "tensor_core"), ("tf32", "tensor_core"), ("fp32", "tiled")):
        a = _operand(size, size, DTYPES[mode], "n", gen)
        b = _operand(size, size, DTYPES[mode], "t", gen)
        first = _run(a, b, mode, variant)
        for _ in range(3):
            assert torch.equal(_run(a, b, mode, variant), first), f"{mode} {variant} not repeatable"


@pytest.mark.parametrize("k", [320, 333], ids=["k-whole", "k-tail"])
@pytest.mark.parametrize("index", [i for i, c in enumerate(_configs()) if c.path.startswith("tensor_core")])
def test_tensor_core_many_tiles_per_block(index, k, gen):
    """The tensor-core grid is persistent (a block per resident slot): with more tiles than slots a
    block runs several, each tile's first k-tiles copied while the previous tile is stored, the
    stage ring carried over, interior and edge tiles mixed (M, N with tails; K = 320 also gives
    interior tiles the unguarded copy), across batch entries. 3 x 2100 x 2300 has 459 tiles of
    128 x 256 and 1782 of 64 x 128, several per slot on any current GPU."""
    _skip_unbuilt_tc(index)
    cfg = _configs()[index]
    batch, m, n = 3, 2100, 2300
    for mode, variant in _modes_for(cfg):
        a = _operand(m, k, DTYPES[mode], "n", gen, batch)
        b = _operand(k, n, DTYPES[mode], "n", gen, batch)
        out = _run(a, b, mode, variant, config=index)
        _check(out, a, b, mode, f"config {index} {batch}x{m}x{n}x{k} {mode} {_seed_note(gen)}")


def test_tensor_core_config_not_built_for_sm90_is_refused():
    """On an sm_90 device an explicit tensor-core config that the sm_90a image does not hold is a clear
    ValueError before any launch; config -1 and the built ones run."""
    import aiter_lite
    from aiter_lite.tuning.matmul_configs import MATMUL_CONFIGS, tc_config_on_sm90

    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("every tensor-core config is compiled for this arch")
    a = torch.randn(64, 96, device="cuda", dtype=torch.float16)
    b = torch.randn(96, 80, device="cuda", dtype=torch.float16)
    for c in MATMUL_CONFIGS:
        if c.path != "tensor_core_16":
            continue
        if tc_config_on_sm90(c.index):
            out = aiter_lite.matmul(a, b, variant="tensor_core", config=c.index)
            assert (out.double() - a.double() @ b.double()).abs().max().item() < 0.05
        else:
            with pytest.raises(ValueError, match="not compiled for sm_90a"):
                aiter_lite.matmul(a, b, variant="tensor_core", config=c.index)
