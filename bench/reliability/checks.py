"""Checks shared by the reliability scripts (ranks.py, soak.py): every op result against the float64
references of aiter_lite.ops, with the tolerances of the GPU test suite.

conv and update: elementwise |out - ref| <= atol + rtol * |ref| (rtol = atol = 1e-5 fp32, 2e-3 fp16,
1.6e-2 bf16), every element finite (outputs are poisoned with NaN first). conv_state: exact (it only
ever holds copies of inputs). matmul: ||out - ref||_F / max(||ref||_F, || |a| @ |b| ||_F / sqrt(K))
<= 1e-5 fp32, 2e-3 fp16, 1e-2 bf16, 1e-3 tf32 (the second term matters only when the sum cancels).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parent.parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from aiter_lite.ops import causal_conv1d_ref, causal_conv1d_update_ref  # noqa: E402
from aiter_lite.testing import matmul_rel_error  # noqa: E402

CONV_TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
MATMUL_TOL = {"fp32": 1e-5, "fp16": 2e-3, "bf16": 1e-2, "tf32": 1e-3}
DTYPE_NAMES = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}


def elementwise_error(out: torch.Tensor, ref: torch.Tensor, dtype) -> Optional[str]:
    """None if out matches ref (float64) within the dtype's tolerance, else a one-line description."""
    tol = CONV_TOL[dtype]
    if tuple(out.shape) != tuple(ref.shape):
        return f"shape {tuple(out.shape)} != {tuple(ref.shape)}"
    out64 = out.detach().double()
    ref = ref.to(out64.device)
    finite = torch.isfinite(out64)
    if not bool(finite.all()):
        idx = tuple(int(i) for i in (~finite).nonzero()[0])
        return f"non-finite output at {idx} (unwritten?)"
    err = (out64 - ref).abs()
    bad = err > tol + tol * ref.abs()
    if bool(bad.any()):
        idx = tuple(int(i) for i in bad.nonzero()[0])
        return (f"{int(bad.sum())} elements off, first at {idx}: got {float(out64[idx]):.6g}, "
                f"want {float(ref[idx]):.6g}; max abs err {float(err.max()):.3e}")
    return None


def exact_error(got: torch.Tensor, want: torch.Tensor) -> Optional[str]:
    if torch.equal(got.double(), want.double().to(got.device)):
        return None
    bad = (got.double() != want.double().to(got.device)).nonzero()
    return f"{len(bad)} elements differ, first at {tuple(int(i) for i in bad[0])}"


def matmul_error(out: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> float:
    """Scale-aware relative Frobenius error against float64 (inf on non-finite output)."""
    return matmul_rel_error(out, a, b)


def check_conv(out, x, weight, bias, silu: bool) -> Optional[str]:
    ref = causal_conv1d_ref(x, weight, bias, "silu" if silu else None)
    return elementwise_error(out, ref, x.dtype)


def run_update_checked(x, state, weight, bias, silu: bool, cache_seqlens, indices) -> Optional[str]:
    """Run causal_conv1d_update on (x, state) and compare its output and the updated state with the
    float64 reference run on a copy of the state taken before the call."""
    import aiter_lite

    act = "silu" if silu else None
    ref_state = state.clone()
    ref = causal_conv1d_update_ref(x, ref_state, weight, bias, act, cache_seqlens, indices)
    out = aiter_lite.causal_conv1d_update(x, state, weight, bias, act, cache_seqlens, indices)
    err = elementwise_error(out, ref, x.dtype)
    if err:
        return "out: " + err
    err = exact_error(state, ref_state)
    return "conv_state: " + err if err else None
