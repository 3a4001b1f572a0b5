"""Random op calls checked against the float64 references: the cases of the soak and of the ranks
(bench/reliability/), and their checks; tests/test_reliability_cases.py runs them on the CPU.

Checks: conv and update elementwise, |out - ref| <= tol + tol * |ref| (tol 1e-5 fp32, 2e-3 fp16,
1.6e-2 bf16), every element finite (outputs are poisoned with NaN first); conv_state exactly (it only
ever holds copies of inputs); matmul by aiter_lite.testing.matmul_rel_error (scale-aware relative
Frobenius error) <= 1e-5 fp32, 2e-3 fp16, 1e-2 bf16, 1e-3 tf32.

A case draws its shapes from a random.Random and its data from a torch.Generator; `biggest` makes it
the largest case of its kind (the soak's warm-up, where the memory peak is reached). Each case
function returns (description, error or None).
"""
from __future__ import annotations

import math
import random
import sys
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import torch  # noqa: E402

import aiter_lite  # noqa: E402
from aiter_lite.ops import causal_conv1d_ref, causal_conv1d_update_ref  # noqa: E402
from aiter_lite.testing import matmul_rel_error  # noqa: E402

CONV_TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
MATMUL_TOL = {"fp32": 1e-5, "fp16": 2e-3, "bf16": 1e-2, "tf32": 1e-3}
MODE_DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
DTYPE_NAMES = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}
DTYPES = tuple(DTYPE_NAMES)
CONV_VARIANTS = ("auto", "naive", "shared", "vectorized")
MM_VARIANTS = ("auto", "naive", "tiled", "tensor_core")
X_LAYOUTS = ("contiguous", "channel_last", "padded", "strided")
GPU_MAX = {"batch": 4, "dim": 192, "seqlen": 1500, "width": 16,                 # conv forward
           "ubatch": 8, "udim": 192, "useqlen": 4, "extra_state": 3, "extra_pool": 4,  # update
           "mnk": 384, "mbatch": 3}                                             # matmul
CPU_MAX = {**GPU_MAX, "dim": 64, "seqlen": 384, "udim": 64, "mnk": 192}  # the float64 references are slow there


# ---- checks -------------------------------------------------------------------------------------


def elementwise_error(out: torch.Tensor, ref: torch.Tensor, dtype) -> Optional[str]:
    """None if out matches ref (float64) within the dtype's tolerance, else a one-line description."""
    if tuple(out.shape) != tuple(ref.shape):
        return f"shape {tuple(out.shape)} != {tuple(ref.shape)}"
    tol, out64, ref = CONV_TOL[dtype], out.detach().double(), ref.to(out.device)
    if not bool(torch.isfinite(out64).all()):
        return f"non-finite output at {tuple(int(i) for i in (~torch.isfinite(out64)).nonzero()[0])} (unwritten?)"
    err = (out64 - ref).abs()
    bad = err > tol + tol * ref.abs()
    if bool(bad.any()):
        idx = tuple(int(i) for i in bad.nonzero()[0])
        return (f"{int(bad.sum())} elements off, first at {idx}: got {float(out64[idx]):.6g}, "
                f"want {float(ref[idx]):.6g}; max abs err {float(err.max()):.3e}")
    return None


def check_conv(out, x, weight, bias, silu: bool) -> Optional[str]:
    return elementwise_error(out, causal_conv1d_ref(x, weight, bias, "silu" if silu else None), x.dtype)


def run_update_checked(x, state, weight, bias, silu: bool, cache_seqlens, indices) -> Optional[str]:
    """causal_conv1d_update on (x, state), its output and updated state against the float64 reference
    run on a copy of the state taken before the call (the state exactly)."""
    act = "silu" if silu else None
    ref_state = state.clone()
    ref = causal_conv1d_update_ref(x, ref_state, weight, bias, act, cache_seqlens, indices)
    out = aiter_lite.causal_conv1d_update(x, state, weight, bias, act, cache_seqlens, indices)
    err = elementwise_error(out, ref, x.dtype)
    if err:
        return "out: " + err
    got, want = state.double(), ref_state.double().to(state.device)
    if torch.equal(got, want):
        return None
    return f"conv_state: {int((got != want).sum())} elements differ"


def check_matmul(out, a, b, mode: str) -> Optional[str]:
    err = matmul_rel_error(out, a, b)
    return None if err <= MATMUL_TOL[mode] else f"relative error {err:.3e} > {MATMUL_TOL[mode]:.0e}"


# ---- random cases -------------------------------------------------------------------------------


class Case:
    def __init__(self, device, rng: random.Random, gen: torch.Generator, biggest: bool = False):
        self.device, self.rng, self.gen, self.biggest = torch.device(device), rng, gen, biggest
        self.max = CPU_MAX if self.device.type == "cpu" else GPU_MAX
        self.desc = ""  # the case, once drawn (reported with an exception)

    def randn(self, *shape, dtype):
        return torch.randn(*shape, generator=self.gen, dtype=torch.float32, device=self.device).to(dtype)

    def pick(self, options):
        return options[0] if self.biggest else self.rng.choice(options)

    def size(self, key: str, lo: int = 1) -> int:
        """Log-uniform in [lo, max[key]] (the max itself for the biggest case)."""
        hi = self.max[key]
        return hi if self.biggest else int(round(math.exp(self.rng.uniform(math.log(lo), math.log(hi + 0.499)))))

    def make_x(self, b, d, l, dtype, layout):
        if layout == "channel_last":
            return self.randn(b, l, d, dtype=dtype).transpose(1, 2)
        if layout == "padded":
            return self.randn(b, d, l + 5, dtype=dtype)[:, :, :l]
        if layout == "strided":
            return self.randn(b, 2 * d + 1, 2 * l + 3, dtype=dtype)[:, 1::2, 2::2]
        return self.randn(b, d, l, dtype=dtype)

    def weight_dtype(self, dtype):  # fp32 weights beside 16-bit x now and then
        return torch.float32 if (dtype != torch.float32 and self.rng.random() < 0.3) else dtype


def conv_case(c: Case, out_form: bool, layout=None, dtype=None):
    dtype, layout = dtype or c.pick(DTYPES), layout or c.pick(X_LAYOUTS)
    width = c.max["width"] if c.biggest else (c.rng.randint(1, 8) if c.rng.random() < 0.85 else c.rng.randint(9, 16))
    x = c.make_x(c.size("batch"), c.size("dim"), c.size("seqlen"), dtype, layout)
    b, d, l = x.shape  # the strided layout gives l + 1
    w_dtype = c.weight_dtype(dtype)
    weight = c.randn(d, width, dtype=w_dtype)
    bias_kind = c.pick(("bias", "none", "empty"))
    bias = {"bias": lambda: c.randn(d, dtype=w_dtype), "none": lambda: None,
            "empty": lambda: torch.empty(0, dtype=w_dtype, device=c.device)}[bias_kind]()
    silu = c.rng.random() < 0.5
    variant = c.pick(CONV_VARIANTS) if c.device.type == "cuda" else "auto"
    c.desc = (f"{'causal_conv1d_fwd' if out_form else 'causal_conv1d'} x={b}x{d}x{l} {layout} {DTYPE_NAMES[dtype]} "
              f"w={width} {DTYPE_NAMES[w_dtype]} bias={bias_kind} silu={silu} variant={variant}")
    if not out_form:
        return c.desc, check_conv(aiter_lite.causal_conv1d(x, weight, bias, "silu" if silu else None, variant=variant),
                                  x, weight, bias, silu)
    out_layout = c.pick(("like_x", "contiguous", "channel_last"))
    out = {"like_x": lambda: torch.empty_like(x), "contiguous": lambda: torch.empty(b, d, l, dtype=dtype, device=c.device),
           "channel_last": lambda: torch.empty(b, l, d, dtype=dtype, device=c.device).transpose(1, 2)}[out_layout]()
    c.desc += f" out={out_layout}"
    if aiter_lite.causal_conv1d_fwd(out.fill_(float("nan")), x, weight, bias, silu, variant=variant) is not out:
        return c.desc, "causal_conv1d_fwd did not return out"
    return c.desc, check_conv(out, x, weight, bias, silu)


def update_case(c: Case, state_layout=None, dtype=None):
    dtype = dtype or c.pick(DTYPES)
    batch, dim = c.size("ubatch"), c.size("udim")
    width = c.max["width"] if c.biggest else (c.rng.randint(1, 8) if c.rng.random() < 0.9 else c.rng.randint(9, 12))
    seqlen = c.max["useqlen"] if c.biggest else c.rng.randint(1, c.max["useqlen"])
    two_d = seqlen == 1 and c.rng.random() < 0.5
    extra = c.max["extra_state"] if c.biggest else c.rng.randint(0, c.max["extra_state"])
    state_len = max(width - 1, 1) + extra
    use_indices = c.biggest or c.rng.random() < 0.5
    pool = batch + ((c.max["extra_pool"] if c.biggest else c.rng.randint(0, c.max["extra_pool"])) if use_indices else 0)
    state_layout = state_layout or c.pick(("contiguous", "channel_last"))
    state = (c.randn(pool, state_len, dim, dtype=dtype).transpose(1, 2) if state_layout == "channel_last"
             else c.randn(pool, dim, state_len, dtype=dtype))
    x = (c.randn(batch, dim, dtype=dtype) if two_d
         else c.make_x(batch, dim, seqlen, dtype, c.pick(("contiguous", "channel_last"))))
    w_dtype = c.weight_dtype(dtype)
    weight = c.randn(dim, width, dtype=w_dtype)
    bias = c.randn(dim, dtype=w_dtype) if c.rng.random() < 0.6 else None
    silu = c.rng.random() < 0.5
    seqlens = None
    if c.biggest or c.rng.random() < 0.5:
        seqlens = torch.randint(-50, 1000, (batch,), generator=c.gen, dtype=torch.int32, device=c.device)
    indices = None
    if use_indices:
        indices = torch.randperm(pool, generator=c.gen, device=c.device)[:batch].to(torch.int32)
        indices[torch.rand(batch, generator=c.gen, device=c.device) < 0.25] = -1  # padded slots
    c.desc = (f"causal_conv1d_update x={tuple(x.shape)} {DTYPE_NAMES[dtype]} w={width} {DTYPE_NAMES[w_dtype]} "
              f"state=({pool},{dim},{state_len}) {state_layout} bias={bias is not None} silu={silu} "
              f"seqlens={seqlens is not None} indices={use_indices}")
    return c.desc, run_update_checked(x, state, weight, bias, silu, seqlens, indices)


def _operand(c: Case, rows, cols, dtype, layout, batch):
    lead = () if batch is None else (batch,)
    if layout == "t":
        return c.randn(*lead, cols, rows, dtype=dtype).transpose(-1, -2)
    if layout == "pad":
        return c.randn(*lead, rows, cols + 3, dtype=dtype)[..., :cols]
    if layout == "step":  # no unit stride: the GPU path copies it
        return c.randn(*lead, rows, 2 * cols, dtype=dtype)[..., ::2]
    return c.randn(*lead, rows, cols, dtype=dtype)


def matmul_modes(device) -> tuple:
    return ("fp32", "tf32", "fp16", "bf16") if torch.device(device).type == "cuda" else ("fp32", "fp16", "bf16")


def matmul_case(c: Case, mode=None, layout=None):
    mode = mode or c.pick(matmul_modes(c.device))
    dtype, tf32 = MODE_DTYPES[mode], mode == "tf32"
    m, n, k = (c.size("mnk") for _ in range(3))
    batch_kind = c.pick(("3d-3d", "2d", "3d-2d", "2d-3d"))
    batch = c.max["mbatch"] if c.biggest else c.rng.randint(1, c.max["mbatch"])
    la, lb = layout or c.pick(("n", "t", "pad", "step")), layout or c.pick(("n", "t", "pad", "step"))
    a = _operand(c, m, k, dtype, la, None if batch_kind in ("2d", "2d-3d") else batch)
    b = _operand(c, k, n, dtype, lb, None if batch_kind in ("2d", "3d-2d") else batch)
    variant = "auto"
    if c.device.type == "cuda":
        variant = c.pick({"fp32": ("auto", "naive", "tiled"), "tf32": ("auto", "tensor_core")}.get(mode, MM_VARIANTS))
    use_out = c.biggest or c.rng.random() < 0.5
    c.desc = f"matmul a={tuple(a.shape)} {la} b={tuple(b.shape)} {lb} {mode} variant={variant} out={use_out}"
    if use_out:
        shape = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (m, n)
        out = torch.full(shape, float("nan"), dtype=dtype, device=c.device)
        if aiter_lite.matmul(a, b, out, allow_tf32=tf32, variant=variant) is not out:
            return c.desc, "matmul did not return out"
    else:
        out = aiter_lite.matmul(a, b, allow_tf32=tf32, variant=variant)
    return c.desc, check_matmul(out, a, b, mode)


OPS = {
    "causal_conv1d": lambda c: conv_case(c, out_form=False),
    "causal_conv1d_fwd": lambda c: conv_case(c, out_form=True),
    "causal_conv1d_update": update_case,
    "matmul": matmul_case,
}


def largest_cases(device):
    """(op, case function) for the largest case of every op x dtype x layout."""
    for dtype in DTYPES:
        for layout in X_LAYOUTS:
            yield "causal_conv1d_fwd", lambda c, l=layout, d=dtype: conv_case(c, True, l, d)
            yield "causal_conv1d", lambda c, l=layout, d=dtype: conv_case(c, False, l, d)
        for sl in ("contiguous", "channel_last"):
            yield "causal_conv1d_update", lambda c, s=sl, d=dtype: update_case(c, s, d)
    for mode in matmul_modes(device):
        for layout in ("n", "t", "pad", "step"):
            yield "matmul", lambda c, m=mode, l=layout: matmul_case(c, m, l)


def run_case(fn, device, seed: int, biggest: bool = False):
    """(description, error or None) of one case; an exception (a CUDA error, say) is an error too."""
    c = Case(device, random.Random(seed), torch.Generator(device=device).manual_seed(seed), biggest)
    try:
        return fn(c)
    except Exception as e:  # noqa: BLE001 - reported like a mismatch, with the case that raised it
        return c.desc or getattr(fn, "__name__", "case"), f"{type(e).__name__}: {e}"
