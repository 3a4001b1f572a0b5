"""GPU tests of the skinny matmul kernel (A with at most 16 rows, csrc/kernels/matmul_skinny.cuh)
against float64: every M from 1 to 16 that picks a different row bound, N and K with tails, B
N-contiguous and K-contiguous (w.t()), rows not 16-byte aligned, offset pointers, transposed A,
batched and broadcast operands, every dtype (tf32 is computed in fp32, so it is held to fp32's
bound), the epilogue, strided and poisoned outputs, K split over a cluster and K longer than the
staged chunk, and repeatability. Skipped without CUDA."""
from __future__ import annotations

import math

import pytest
import torch

import aiter_lite
from aiter_lite.ops.matmul import matmul_plan, matmul_ref

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

MODES = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
# fp32 accumulation everywhere; the bound is the output's rounding (tf32 inputs are not rounded).
TOL = {"fp32": 1e-5, "tf32": 1e-5, "fp16": 2e-3, "bf16": 1e-2}


def _randn(*shape, dtype, gen):
    return torch.randn(*shape, device="cuda", generator=gen, dtype=torch.float32).to(dtype)


def _operand(rows, cols, dtype, layout, gen, batch=None):
    """n: contiguous; t: transposed view; pad: rows padded by 3 (not 16-byte aligned); tpad: a
    transposed padded view; cut / tcut: rows 16-byte aligned, cut to any length (plain / transposed);
    off: one element into its storage (misaligned pointer); bcast: batch stride 0."""
    lead = () if batch is None else (batch,)
    if layout == "n":
        return _randn(*lead, rows, cols, dtype=dtype, gen=gen)
    if layout == "t":
        return _randn(*lead, cols, rows, dtype=dtype, gen=gen).transpose(-1, -2)
    if layout == "pad":
        return _randn(*lead, rows, cols + 3, dtype=dtype, gen=gen)[..., :cols]
    if layout == "tpad":
        return _randn(*lead, cols, rows + 3, dtype=dtype, gen=gen)[..., :rows].transpose(-1, -2)
    if layout == "cut":  # rows 16-byte aligned, the last 16 bytes of each row partly outside the view
        return _randn(*lead, rows, -(-cols // 8) * 8 + 8, dtype=dtype, gen=gen)[..., :cols]
    if layout == "tcut":
        return _randn(*lead, cols, -(-rows // 8) * 8 + 8, dtype=dtype, gen=gen)[..., :rows].transpose(-1, -2)
    if layout == "off":
        return _randn(math.prod(lead) * rows * cols + 1, dtype=dtype, gen=gen)[1:].view(*lead, rows, cols)
    if layout == "bcast":
        return _randn(rows, cols, dtype=dtype, gen=gen).expand(batch, rows, cols)
    raise ValueError(layout)


def _poisoned(a, b, dtype):
    shape = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    return torch.full(shape, float("nan"), device="cuda", dtype=dtype)


def _check(out, ref, a, b, mode, what):
    """Relative Frobenius error against the float64 reference, with |a| @ |b| / sqrt(K) as the floor of
    the scale (a single output of cancelling terms is judged by the size of its terms)."""
    out64 = out.double()
    assert torch.isfinite(out64).all(), f"{what}: non-finite outputs (an unwritten NaN poison?)"
    scale = torch.matmul(a.double().abs(), b.double().abs()).norm().item() / math.sqrt(max(1, a.shape[-1]))
    err = (out64 - ref).norm().item() / max(ref.norm().item(), scale, 1e-30)
    assert err <= TOL[mode], f"{what}: relative error {err:.3e} > {TOL[mode]:.0e}"


def _run(a, b, mode, out=None, **epi):
    """variant="skinny" (the kernel itself, whatever auto would pick) into a NaN-poisoned out."""
    if out is None:
        out = _poisoned(a, b, a.dtype)
    plan = matmul_plan(a, b, allow_tf32=mode == "tf32", variant="skinny")
    assert plan.split()[0] == "skinny", f"expected the skinny kernel, the dispatch plans {plan!r}"
    res = aiter_lite.matmul(a, b, out, allow_tf32=mode == "tf32", variant="skinny", **epi)
    assert res.data_ptr() == out.data_ptr()
    torch.cuda.synchronize()
    return out


@pytest.fixture
def gen():
    g = torch.Generator(device="cuda")
    g.manual_seed(2111)
    return g


# M picks the row bound (1, 4, 8, 16): every bound with its largest and an inner M.
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("b_layout", ["n", "t", "pad", "tpad", "off", "cut", "tcut"])
@pytest.mark.parametrize("m", [1, 3, 4, 7, 8, 9, 16])
@pytest.mark.parametrize("nk", [(1, 1), (7, 129), (257, 1025), (1000, 4095), (4097, 33), (130, 5000)],
                         ids=lambda s: "x".join(map(str, s)))
def test_shapes_and_b_layouts(nk, m, b_layout, mode, gen):
    n, k = nk
    dtype = MODES[mode]
    a = _operand(m, k, dtype, "n", gen)
    b = _operand(k, n, dtype, b_layout, gen)
    out = _run(a, b, mode)
    _check(out, matmul_ref(a, b), a, b, mode, f"{m}x{n}x{k} {mode} B {b_layout}")


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("a_layout", ["t", "pad", "off"])
@pytest.mark.parametrize("b_layout", ["n", "t"])
def test_a_layouts(a_layout, b_layout, mode, gen):
    m, n, k = 5, 300, 700
    a = _operand(m, k, MODES[mode], a_layout, gen)
    b = _operand(k, n, MODES[mode], b_layout, gen)
    out = _run(a, b, mode)
    _check(out, matmul_ref(a, b), a, b, mode, f"A {a_layout} B {b_layout} {mode}")


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("case", ["a3-b2", "a2-b3", "a3-b3", "a3t-b3t", "a3-bcast", "bcast-b3pad"])
def test_batched(case, mode, gen):
    m, n, k, batch = 7, 129, 517, 3
    dtype = MODES[mode]
    a_l, b_l = {"a3-b2": ("n", None), "a2-b3": (None, "n"), "a3-b3": ("n", "n"), "a3t-b3t": ("t", "t"),
                "a3-bcast": ("n", "bcast"), "bcast-b3pad": ("bcast", "pad")}[case]
    a = _operand(m, k, dtype, a_l or "n", gen, None if a_l is None else batch)
    b = _operand(k, n, dtype, b_l or "n", gen, None if b_l is None else batch)
    out = _run(a, b, mode)
    _check(out, matmul_ref(a, b), a, b, mode, f"{case} {mode}")


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("shape", [(16, 64, 16384), (4, 256, 8192), (1, 40000, 3000), (16, 50000, 4096)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("b_layout", ["n", "t"])
def test_long_k_and_wide_n(b_layout, shape, mode, gen):
    """Few column blocks and a long K (split over a cluster on sm_90, each block's K longer than one
    staged chunk of A), and many column blocks (no split, several chunks)."""
    m, n, k = shape
    a = _operand(m, k, MODES[mode], "n", gen)
    b = _operand(k, n, MODES[mode], b_layout, gen)
    out = _run(a, b, mode)
    _check(out, matmul_ref(a, b), a, b, mode, f"{shape} {mode} B {b_layout}")


ACTS = [None, "relu", "gelu", "gelu_tanh", "silu"]
EPI_TOL = {"fp32": 1e-5, "tf32": 1e-5, "fp16": 3e-3, "bf16": 1.6e-2}


@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("b_layout", ["n", "t", "pad"])
def test_epilogue(b_layout, mode, act, gen):
    from aiter_lite.testing import rel_error

    m, n, k, batch = 9, 263, 1031, 2
    dtype = MODES[mode]
    a = _operand(m, k, dtype, "n", gen, batch)
    b = _operand(k, n, dtype, b_layout, gen)
    bias = _randn(n, dtype=torch.bfloat16 if mode != "bf16" else torch.float32, gen=gen)
    res = _randn(batch, m, n, dtype=dtype, gen=gen)
    out = _poisoned(a, b, dtype)
    _run(a, b, mode, out, bias=bias, activation=act, residual=res, alpha=0.5, beta=-1.5)
    ref = matmul_ref(a, b, bias=bias, activation=act, residual=res, alpha=0.5, beta=-1.5)
    assert rel_error(out, ref) <= EPI_TOL[mode], f"{mode} {act} B {b_layout}"


@pytest.mark.parametrize("mode", ["fp32", "bf16"])
def test_residual_is_out_and_strided_out(mode, gen):
    from aiter_lite.testing import rel_error

    dtype = MODES[mode]
    a, b = _operand(12, 3000, dtype, "n", gen), _operand(3000, 200, dtype, "t", gen)
    out = _randn(12, 200, dtype=dtype, gen=gen)
    ref = matmul_ref(a, b, residual=out, activation="silu", beta=0.75)
    _run(a, b, mode, out, residual=out, activation="silu", beta=0.75)
    assert rel_error(out, ref) <= EPI_TOL[mode]
    # A transposed output (column stride != 1), poisoned.
    out_t = torch.full((200, 12), float("nan"), device="cuda", dtype=dtype).t()
    _run(a, b, mode, out_t)
    _check(out_t, matmul_ref(a, b), a, b, mode, "transposed out")


@pytest.mark.parametrize("b_layout", ["n", "t"])
def test_repeatable(b_layout, gen):
    """Same inputs, same bits: the split-K sums have a fixed order."""
    a = _operand(16, 8192, torch.bfloat16, "n", gen)
    b = _operand(8192, 96, torch.bfloat16, b_layout, gen)
    first = _run(a, b, "bf16").clone()
    for _ in range(3):
        assert torch.equal(_run(a, b, "bf16"), first)


def test_autograd_through_skinny(gen):
    """A Linear-like layer on a few tokens: the forward runs skinny; its gradients match float64."""
    x = _operand(3, 640, torch.float32, "n", gen).requires_grad_(True)
    w = _operand(200, 640, torch.float32, "n", gen).requires_grad_(True)
    bias = _randn(200, dtype=torch.float32, gen=gen).requires_grad_(True)
    out = aiter_lite.matmul(x, w.t(), bias=bias, activation="gelu")
    x64, w64, b64 = (t.detach().double().requires_grad_(True) for t in (x, w, bias))
    ref = matmul_ref(x64, w64.t(), bias=b64, activation="gelu")
    g = torch.randn(ref.shape, device="cuda", dtype=torch.float64, generator=gen)
    out.backward(g.float())
    ref.backward(g)
    for got, want in ((x.grad, x64.grad), (w.grad, w64.grad), (bias.grad, b64.grad)):
        assert (got.double() - want).norm() <= 1e-5 * want.norm()


def test_compact_sweep(gen):
    """One test over every kernel instantiation's kind (dtype x row bound x B layout), a cluster split
    with several staged chunks, batched and broadcast operands and the epilogue: the target of
    compute-sanitizer (bench/lab/matmul_skinny.sh runs it under memcheck)."""
    from aiter_lite.testing import rel_error

    for mode in ("fp32", "fp16", "bf16"):
        dtype = MODES[mode]
        for b_layout in ("n", "t", "pad", "tpad", "cut", "tcut", "off"):
            for m in (1, 4, 7, 16):
                for n, k in ((257, 1025), (64, 9000)):
                    a = _operand(m, k, dtype, "pad" if m == 7 else "n", gen)
                    b = _operand(k, n, dtype, b_layout, gen)
                    out = _run(a, b, mode)
                    _check(out, matmul_ref(a, b), a, b, mode, f"{m}x{n}x{k} {mode} B {b_layout}")
        a = _operand(5, 333, dtype, "n", gen, 3)
        b = _operand(333, 77, dtype, "bcast", gen, 3)
        bias = _randn(77, dtype=torch.float32, gen=gen)
        res = _randn(3, 5, 77, dtype=dtype, gen=gen)
        out = _poisoned(a, b, dtype)
        _run(a, b, mode, out, bias=bias, activation="gelu_tanh", residual=res, alpha=2.0, beta=0.5)
        ref = matmul_ref(a, b, bias=bias, activation="gelu_tanh", residual=res, alpha=2.0, beta=0.5)
        assert rel_error(out, ref) <= EPI_TOL[mode], f"{mode} batched epilogue"


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("b_layout", ["n", "t", "pad"])
def test_auto_picks_skinny(b_layout, mode, gen):
    """variant auto with A of at most 16 rows: the skinny kernel for fp32 (strict and tf32), and for
    fp16/bf16 where the tensor cores cannot load the layout (B rows not 16-byte aligned); aligned
    fp16/bf16 keep the tensor-core kernels. 17 rows never take it; variant "skinny" then runs as auto."""
    dtype = MODES[mode]
    a = _operand(16, 1000, dtype, "n", gen)
    b = _operand(1000, 520, dtype, b_layout, gen)
    tf32 = mode == "tf32"
    kernel = matmul_plan(a, b, allow_tf32=tf32).split()[0]
    if dtype == torch.float32 or b_layout == "pad":
        assert kernel == "skinny"
    else:
        assert kernel in ("wgmma", "tensor_core")
    out = aiter_lite.matmul(a, b, allow_tf32=tf32)
    _check(out, matmul_ref(a, b), a, b, mode, f"auto {mode} B {b_layout} ({kernel})")
    a17 = _operand(17, 1000, dtype, "n", gen)
    for variant in ("auto", "skinny"):
        assert matmul_plan(a17, b, allow_tf32=tf32, variant=variant).split()[0] != "skinny"
    with pytest.raises(ValueError, match="config"):
        aiter_lite.matmul(a, b, allow_tf32=tf32, variant="skinny", config=0)
