"""GPU tests of matmul's out_dtype=torch.float32 with fp16/bf16 inputs: every kernel family (naive, SIMT,
mma.sync, skinny, wgmma in every config with an epilogue kernel) stores the fp32 value of the epilogue,
not a 16-bit rounding of it. The tolerance (1e-5, norm-relative against float64) is below what rounding the
outputs to fp16 (~1.4e-4) or bf16 (~1e-3) costs, so a kernel that rounds fails. NaN-poisoned outputs, M/N
tails, transposed and broadcast operands, unaligned output rows, a residual in fp32 that may be out itself,
several tiles per CTA (deferred stores), the backward. Skipped without CUDA."""
from __future__ import annotations

import pytest
import torch

import aiter_lite
from aiter_lite.ops.matmul import matmul_plan, matmul_ref
from aiter_lite.testing import rel_error
from test_gpu_matmul_epilogue import _epilogue_configs, _randn, needs_sm90

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
TOL = 1e-5


def _poisoned(*shape):
    return torch.full(shape, float("nan"), device="cuda", dtype=torch.float32)


def _epilogue(n, batch, m, kind):
    """Epilogue arguments: none (out_fp32 alone), or bias + activation + fp32 residual + alpha/beta."""
    if kind == "plain":
        return {}
    return dict(bias=_randn(n, dtype=torch.bfloat16), activation="gelu", residual=_randn(batch, m, n), alpha=0.5,
                beta=-1.5)


@pytest.mark.parametrize("kind", ["plain", "epilogue"])
@pytest.mark.parametrize("variant", ["naive", "tiled", "tensor_core", "auto"])
@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("layout", ["nn", "tt"])
@pytest.mark.parametrize("mnk", [(129, 257, 136), (1000, 520, 264)], ids=["edges", "tiles"])
def test_out_fp32_every_path(mnk, layout, dt, variant, kind):
    m, n, k = mnk
    dtype = DTYPES[dt]
    a = _randn(2, m, k, dtype=dtype) if layout == "nn" else _randn(2, k, m, dtype=dtype).mT
    b = _randn(k, n, dtype=dtype) if layout == "nn" else _randn(n, k, dtype=dtype).mT
    kw = _epilogue(n, 2, m, kind)
    out = _poisoned(2, m, n)
    plan = matmul_plan(a, b, out, variant=variant, out_dtype=torch.float32, **kw)
    aiter_lite.matmul(a, b, out, variant=variant, out_dtype=torch.float32, **kw)
    assert rel_error(out, matmul_ref(a, b, **kw)) <= TOL, f"{plan} {dt} {layout} {kind}"
    # The functional form allocates fp32.
    got = aiter_lite.matmul(a, b, variant=variant, out_dtype=torch.float32, **kw)
    assert got.dtype == torch.float32 and rel_error(got, matmul_ref(a, b, **kw)) <= TOL, plan


@pytest.mark.parametrize("kind", ["plain", "epilogue"])
@pytest.mark.parametrize("m", [1, 7, 16])
@pytest.mark.parametrize("nk", [(4095, 1025), (4096, 4096), (512, 16384)], ids=["odd", "square", "long-k"])
@pytest.mark.parametrize("dt", list(DTYPES))
def test_out_fp32_skinny(dt, nk, m, kind):
    """Few rows of A: the skinny kernel (split-K over a cluster for the long K), fp32 stores."""
    n, k = nk
    dtype = DTYPES[dt]
    a, b = _randn(m, k, dtype=dtype), _randn(k, n, dtype=dtype)
    kw = _epilogue(n, 1, m, kind)
    if "residual" in kw:
        kw["residual"] = kw["residual"][0]
    out = _poisoned(m, n)
    plan = matmul_plan(a, b, out, variant="skinny", out_dtype=torch.float32, **kw)
    aiter_lite.matmul(a, b, out, variant="skinny", out_dtype=torch.float32, **kw)
    assert rel_error(out, matmul_ref(a, b, **kw)) <= TOL, plan


@pytest.mark.parametrize("pad", [1, 2])
@pytest.mark.parametrize("kind", ["plain", "epilogue"])
@pytest.mark.parametrize("variant", ["tensor_core", "auto", "tiled"])
def test_out_fp32_unaligned_out_rows(variant, kind, pad):
    """out rows not 16-byte aligned (row stride n + 1: 4-byte, n + 2: 8-byte): narrower or element stores, fp32."""
    m, n, k = 300, 264, 136
    a, b = _randn(m, k, dtype=torch.bfloat16), _randn(k, n, dtype=torch.bfloat16)
    kw = {} if kind == "plain" else dict(bias=_randn(n), activation="silu", residual=_randn(m, n + pad)[:, :n])
    out = _poisoned(m, n + pad)[:, :n]
    aiter_lite.matmul(a, b, out, variant=variant, out_dtype=torch.float32, **kw)
    assert rel_error(out, matmul_ref(a, b, **kw)) <= TOL, matmul_plan(a, b, out, variant=variant,
                                                                      out_dtype=torch.float32, **kw)


@pytest.mark.parametrize("variant", ["tensor_core", "auto", "skinny"])
@pytest.mark.parametrize("dt", list(DTYPES))
def test_out_fp32_residual_is_out(dt, variant):
    m = 12 if variant == "skinny" else 300
    a, b = _randn(m, 200, dtype=DTYPES[dt]), _randn(200, 136, dtype=DTYPES[dt])
    out = _randn(m, 136)
    ref = matmul_ref(a, b, residual=out.clone(), activation="relu", beta=0.75)
    aiter_lite.matmul(a, b, out, residual=out, activation="relu", beta=0.75, variant=variant,
                      out_dtype=torch.float32)
    assert rel_error(out, ref) <= TOL


@needs_sm90
@pytest.mark.parametrize("kind", ["plain", "epilogue"])
@pytest.mark.parametrize("b_layout", ["n", "t"])
@pytest.mark.parametrize("index", [-1] + _epilogue_configs())
def test_out_fp32_wgmma_every_config(index, b_layout, kind):
    """Each config with a kEpilogue kernel (split-K and deferred-store configs included) and the planner's
    choice: M and N tails, a batch with a broadcast B; the plan asserted (no fallback to mma.sync)."""
    batch, m, n, k = 2, 200, 264, 136
    for dt, dtype in DTYPES.items():
        a = _randn(batch, m, k, dtype=dtype)
        b = _randn(k, n, dtype=dtype) if b_layout == "n" else _randn(n, k, dtype=dtype).mT
        kw = _epilogue(n, batch, m, kind)
        out = _poisoned(batch, m, n)
        variant = "auto" if index < 0 else "wgmma"
        plan = matmul_plan(a, b, out, variant=variant, config=index, out_dtype=torch.float32, **kw)
        kernel, cfg = plan.split()
        assert kernel == "wgmma" and (index < 0 or int(cfg) == index), plan
        aiter_lite.matmul(a, b, out, variant=variant, config=index, out_dtype=torch.float32, **kw)
        assert rel_error(out, matmul_ref(a, b, **kw)) <= TOL, f"{plan} {dt} B {b_layout} {kind}"


@needs_sm90
@pytest.mark.parametrize("case", ["epilogue", "residual-is-out", "plain"])
@pytest.mark.parametrize("index", [-1, 15, 21, 29])
def test_out_fp32_wgmma_several_tiles_per_cta(index, case):
    """2000 x 4096 (256 tiles of 128 x 256, an M tail): consumers go from tile to tile; configs 21 and 29
    defer 16-bit stores to the next tile's mainloop, which fp32 tiles must not do."""
    m, n, k = 2000, 4096, 136
    a, b = _randn(m, k, dtype=torch.bfloat16), _randn(k, n, dtype=torch.bfloat16)
    if case == "residual-is-out":
        out = _randn(m, n)
        kw = dict(residual=out, activation="silu", beta=0.5)
        ref = matmul_ref(a, b, residual=out.clone(), activation="silu", beta=0.5)
    else:
        out = _poisoned(m, n)
        kw = {} if case == "plain" else dict(bias=_randn(n), activation="gelu_tanh", residual=_randn(m, n),
                                              alpha=0.75)
        ref = matmul_ref(a, b, **kw)
    variant = "auto" if index < 0 else "wgmma"
    plan = matmul_plan(a, b, out, variant=variant, config=index, out_dtype=torch.float32, **kw)
    assert plan.startswith("wgmma") and (index < 0 or int(plan.split()[1]) == index), plan
    aiter_lite.matmul(a, b, out, variant=variant, config=index, out_dtype=torch.float32, **kw)
    assert rel_error(out, ref) <= TOL, f"{plan} {case}"


@pytest.mark.parametrize("dt", list(DTYPES))
def test_out_fp32_backward(dt):
    """Gradients through an fp32-output matmul of 16-bit inputs: dA, dB in the inputs' dtype, dbias."""
    dtype = DTYPES[dt]
    a = _randn(3, 136, 264, dtype=dtype).requires_grad_(True)
    b = _randn(264, 72, dtype=dtype).requires_grad_(True)
    bias = _randn(72).requires_grad_(True)
    out = aiter_lite.matmul(a, b, bias=bias, activation="gelu", out_dtype=torch.float32)
    assert out.dtype == torch.float32
    leaves64 = [t.detach().double().requires_grad_(True) for t in (a, b, bias)]
    ref = matmul_ref(*leaves64[:2], bias=leaves64[2], activation="gelu")
    grad = torch.randn(ref.shape, device="cuda", dtype=torch.float64)
    out.backward(grad.float())
    ref.backward(grad)
    tol = {"fp16": 1e-2, "bf16": 4e-2}[dt]
    for name, x, y in zip(("a", "b", "bias"), (a, b, bias), leaves64):
        assert x.grad.dtype == x.dtype and rel_error(x.grad, y.grad) <= tol, name
