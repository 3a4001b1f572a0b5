"""GPU tests of aiter_lite.matmul's fused epilogue and its gradients against float64: every variant
(naive, SIMT, mma.sync, auto: wgmma on an H100) x dtype x activation, transposed and broadcast
operands, residual aliasing out, poisoned outputs; the wgmma kernels' epilogue in every config that has
one; the backward on CUDA. Skipped without CUDA."""
from __future__ import annotations

import pytest
import torch

import aiter_lite
from aiter_lite.ops.matmul import matmul_plan, matmul_ref
from aiter_lite.testing import rel_error

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

MODES = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
TOL = {"fp32": 1e-5, "tf32": 1e-3, "fp16": 3e-3, "bf16": 1.6e-2}
ACTS = [None, "relu", "gelu", "gelu_tanh", "silu"]


def _randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, device="cuda").to(dtype)


@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("variant", ["naive", "tiled", "tensor_core", "auto"])
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("layout", ["nn", "tt"])
@pytest.mark.parametrize("mnk", [(129, 257, 136), (1000, 520, 264)], ids=["edges", "tiles"])
def test_epilogue_every_path(mnk, layout, mode, variant, act):
    if mode == "fp32" and variant == "tensor_core" or mode == "tf32" and variant in ("naive", "tiled"):
        pytest.skip("no such kernel")
    m, n, k = mnk
    dtype = MODES[mode]
    a = _randn(2, m, k, dtype=dtype) if layout == "nn" else _randn(2, k, m, dtype=dtype).mT
    b = _randn(k, n, dtype=dtype) if layout == "nn" else _randn(n, k, dtype=dtype).mT
    bias = _randn(n, dtype=torch.bfloat16 if mode != "bf16" else torch.float32)
    res = _randn(2, m, n, dtype=dtype)
    out = torch.full((2, m, n), float("nan"), device="cuda", dtype=dtype)
    aiter_lite.matmul(a, b, out, bias=bias, activation=act, residual=res, alpha=0.5, beta=-1.5,
                      allow_tf32=mode == "tf32", variant=variant)
    ref = matmul_ref(a, b, bias=bias, activation=act, residual=res, alpha=0.5, beta=-1.5)
    assert rel_error(out, ref) <= TOL[mode], matmul_plan(a, b, allow_tf32=mode == "tf32", variant=variant)


@pytest.mark.parametrize("mode", ["fp16", "bf16", "tf32"])
def test_residual_is_out(mode):
    a, b = _randn(300, 200, dtype=MODES[mode]), _randn(200, 136, dtype=MODES[mode])
    out = _randn(300, 136, dtype=MODES[mode])
    ref = matmul_ref(a, b, residual=out, activation="relu", beta=1.0)
    aiter_lite.matmul(a, b, out, residual=out, activation="relu", allow_tf32=mode == "tf32")
    assert rel_error(out, ref) <= TOL[mode]


def test_no_epilogue_still_runs_wgmma():
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("Hopper only")
    a, b = _randn(1024, 1024, dtype=torch.bfloat16), _randn(1024, 1024, dtype=torch.bfloat16)
    assert matmul_plan(a, b).startswith("wgmma")


@pytest.mark.parametrize("mode", ["fp32", "tf32", "bf16"])
@pytest.mark.parametrize("case", ["a3-b2", "a2-b3", "at-bt"])
def test_backward_cuda(case, mode):
    dtype = MODES[mode]
    m, n, k, batch = 136, 72, 264, 3
    shapes = {"a3-b2": ((batch, m, k), (k, n)), "a2-b3": ((m, k), (batch, k, n)),
              "at-bt": ((batch, k, m), (n, k))}[case]
    a, b = _randn(*shapes[0], dtype=dtype), _randn(*shapes[1], dtype=dtype)
    if case == "at-bt":
        a, b = a.mT, b.mT
    bias = _randn(n)
    leaves = [t.detach().clone().requires_grad_(True) for t in (a, b, bias)]
    leaves64 = [t.detach().double().requires_grad_(True) for t in (a, b, bias)]
    out = aiter_lite.matmul(*leaves[:2], bias=leaves[2], activation="gelu", allow_tf32=mode == "tf32")
    ref = matmul_ref(*leaves64[:2], bias=leaves64[2], activation="gelu")
    grad = torch.randn(ref.shape, device="cuda", dtype=torch.float64)
    out.backward(grad.to(out.dtype))
    ref.backward(grad)
    for name, x, y in zip(("a", "b", "bias"), leaves, leaves64):
        assert rel_error(x.grad, y.grad) <= 4 * TOL[mode], name


# ---- the fused epilogue inside the Hopper wgmma kernels (kEpilogue) ----------------------------------

needs_sm90 = pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0),
                                reason="needs a compute capability 9.0 GPU")


def _epilogue_configs():
    from aiter_lite.tuning.matmul_configs import configs_for, wgmma_has_kernel

    # The a_rows configs (16 rows of A at most) have their own test (test_gpu_matmul_wgmma.py, test_few_rows_configs).
    return [c.index for c in configs_for("wgmma_16") if wgmma_has_kernel(c, epilogue=True) and not c.a_rows]


@needs_sm90
@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("b_layout", ["n", "t"])
@pytest.mark.parametrize("index", [-1] + _epilogue_configs())
def test_epilogue_wgmma_every_config(index, b_layout, act):
    """Each config with a kEpilogue kernel (and the planner's choice), both B layouts, every activation:
    M and N tails (200 x 264 against 64..256-wide tiles), a batch with a broadcast B, bias in another
    dtype, residual, alpha and beta; NaN-poisoned out; the plan asserted (no fallback to mma.sync)."""
    from aiter_lite.tuning.matmul_configs import default_config

    batch, m, n, k = 2, 200, 264, 136
    for mode in ("fp16", "bf16"):
        dt = MODES[mode]
        a = _randn(batch, m, k, dtype=dt)
        b = _randn(k, n, dtype=dt) if b_layout == "n" else _randn(n, k, dtype=dt).mT
        kw = dict(bias=_randn(n, dtype=torch.float32 if mode == "fp16" else torch.float16), activation=act,
                  residual=_randn(batch, m, n, dtype=dt), alpha=0.5, beta=-1.5)
        out = torch.full((batch, m, n), float("nan"), device="cuda", dtype=dt)
        variant = "auto" if index < 0 else "wgmma"
        plan = matmul_plan(a, b, out, variant=variant, config=index, **kw)
        kernel, cfg = plan.split()
        assert kernel == "wgmma", plan
        if index >= 0:
            assert int(cfg) == index, plan
        else:
            sms = torch.cuda.get_device_properties(0).multi_processor_count
            assert int(cfg) == default_config("wgmma_16", m, n, batch, sms, k=k, epilogue=True), plan
        aiter_lite.matmul(a, b, out, variant=variant, config=index, **kw)
        ref = matmul_ref(a, b, **kw)
        assert rel_error(out, ref) <= TOL[mode], f"{plan} {mode} {act} B {b_layout}"


@needs_sm90
@pytest.mark.parametrize("case", ["bias", "bias-gelu", "residual", "alpha", "residual-is-out", "bias-1000x4096"])
@pytest.mark.parametrize("mode", ["fp16", "bf16"])
def test_epilogue_wgmma_parts(mode, case):
    """Each part of the epilogue alone on the wgmma kernel (config -1): the other parts' null pointers
    and defaults; a residual that is out itself (every element read before the warp stores it); a
    larger product (several tiles per CTA)."""
    dt = MODES[mode]
    m, n, k = (1000, 4096, 520) if case.endswith("4096") else (129, 136, 72)
    a, b = _randn(m, k, dtype=dt), _randn(k, n, dtype=dt)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=dt)
    kw = {"bias": dict(bias=_randn(n)), "bias-gelu": dict(bias=_randn(n), activation="gelu"),
          "residual": dict(residual=_randn(m, n, dtype=dt), beta=0.75), "alpha": dict(alpha=-2.0),
          "bias-1000x4096": dict(bias=_randn(n, dtype=dt), activation="silu")}.get(case)
    if case == "residual-is-out":
        out = _randn(m, n, dtype=dt)
        kw = dict(residual=out, activation="relu")
        ref = matmul_ref(a, b, residual=out.clone(), activation="relu")
    else:
        ref = matmul_ref(a, b, **kw)
    plan = matmul_plan(a, b, out, **kw)
    assert plan.startswith("wgmma"), plan
    aiter_lite.matmul(a, b, out, **kw)
    assert rel_error(out, ref) <= TOL[mode], f"{plan} {case}"


@needs_sm90
def test_epilogue_wgmma_layouts_without_kernel():
    """An M-contiguous A with an epilogue has no wgmma kernel: mma.sync, still correct."""
    a, b = _randn(136, 200, dtype=torch.bfloat16).mT, _randn(136, 72, dtype=torch.bfloat16)
    bias = _randn(72)
    assert matmul_plan(a, b, bias=bias).startswith("tensor_core")
    out = aiter_lite.matmul(a, b, bias=bias, activation="gelu_tanh")
    assert rel_error(out, matmul_ref(a, b, bias=bias, activation="gelu_tanh")) <= TOL["bf16"]


@needs_sm90
@pytest.mark.parametrize("case", ["bias-gelu_tanh-residual", "residual-is-out"])
@pytest.mark.parametrize("index", [-1, 15, 21, 29])
def test_epilogue_wgmma_several_tiles_per_cta(index, case):
    """Several tiles per CTA (2000 x 4096: 256 tiles of 128 x 256 with an M tail), so the persistent
    consumers carry pieces from tile to tile: config 21's and 29's deferred stores of a fused tile drain
    during the next tile's mainloop; a residual that is out itself is read before any of it is stored."""
    dt = torch.bfloat16
    m, n, k = 2000, 4096, 136
    a, b = _randn(m, k, dtype=dt), _randn(k, n, dtype=dt)
    if case == "residual-is-out":
        out = _randn(m, n, dtype=dt)
        kw = dict(residual=out, activation="silu", beta=0.5)
        ref = matmul_ref(a, b, residual=out.clone(), activation="silu", beta=0.5)
    else:
        out = torch.full((m, n), float("nan"), device="cuda", dtype=dt)
        kw = dict(bias=_randn(n), activation="gelu_tanh", residual=_randn(m, n, dtype=dt), alpha=0.75)
        ref = matmul_ref(a, b, **kw)
    variant = "auto" if index < 0 else "wgmma"
    plan = matmul_plan(a, b, out, variant=variant, config=index, **kw)
    assert plan.startswith("wgmma") and (index < 0 or int(plan.split()[1]) == index), plan
    aiter_lite.matmul(a, b, out, variant=variant, config=index, **kw)
    assert rel_error(out, ref) <= TOL["bf16"], f"{plan} {case}"
