"""GPU (-m gpu): widths 5..8 run one 8-tap kernel per family with the filter right-aligned (kWideWidth in
causal_conv1d_common.cuh): the 8 - width leading taps are skipped, never multiplied by zero. A tap multiplied
instead of skipped turns an inf into NaN where the filter never reaches; these tests put infs where only a skipped
tap could carry them and compare the finite pattern and the finite values with a tap-by-tap float64 reference:
- the forward with initial states and final states (every layout: the rows, dense, channel-last and per-output
  kernels), and the decode update;
- the backward's dx and dinitial_states with inf in dout, on every backward path (rows, shifted rows, channel-last
  staged and direct, the tile kernel).
The forward's plain kernels have their own such test (test_gpu_causal_conv1d.py,
test_forward_wide_kernel_skips_taps_outside_the_filter)."""
import pytest
import torch

import aiter_lite
from conv_states_cases import random_normal, tap_by_tap_reference
from test_gpu_causal_conv1d_bwd_paths import make

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]
DEV = torch.device("cuda")
TOL = {torch.float32: 1e-4, torch.float16: 5e-3, torch.bfloat16: 4e-2}
# layout of make(), (batch, dim, length): the kernel each one reaches
PATHS = {
    "rows": ("contiguous", (2, 24, 1024)),
    "shifted_rows": ("contiguous", (2, 9, 777)),
    "channel_last_staged": ("channel_last", (2, 72, 300)),
    "channel_last_direct": ("cl_odd", (2, 40, 129)),
    "rows_2_vectors": ("contiguous", (4, 256, 8192)),  # large enough for 2 vectors a lane
    "shifted_rows_2_vectors": ("contiguous", (1, 40, 30001)),
}


def assert_same_finite(got, want, tol, what):
    finite = torch.isfinite(want)
    assert torch.equal(torch.isfinite(got), finite), f"{what}: non-finite where the filter does not reach " \
        f"({int((torch.isfinite(got) != finite).sum())} elements)"
    g, r = torch.where(finite, got.double(), 0.0), torch.where(finite, want, 0.0)
    err = float((g - r).abs().max()) / max(float(r.abs().max()), 1.0)
    assert err <= tol, f"{what}: relative error {err:.2e}"


def spaced_infs(t, every=23):
    """inf (alternating sign) at every `every`-th step of the last dim: far enough apart that no window of 8
    holds two, so a reached output is +-inf, never NaN."""
    sign = torch.ones(t.shape[-1], device=t.device)
    sign[1::2] = -1
    t[..., ::every] = (sign[::every] * float("inf")).to(t.dtype)
    return t


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("path", [*PATHS, "padded"])
@pytest.mark.parametrize("width", [5, 6, 7, 8])
def test_forward_with_states_skips_taps(path, width, dtype):
    torch.manual_seed(width)
    layout, (b, d, length) = PATHS.get(path, ("padded", (3, 10, 200)))
    x = random_normal((b, d, length + 3), dtype, DEV)[..., :length] if layout == "padded" else \
        make(layout, b, d, length, dtype)
    with torch.no_grad():
        x[..., 5::31] = float("inf")
    w, bias = random_normal((d, width), torch.float32, DEV), random_normal((d,), torch.float32, DEV)
    init = random_normal((b, d, width - 1), dtype, DEV)
    init[:, ::3, 0] = float("inf")  # the state's oldest entry: only the first output's first tap reaches it
    out, final = aiter_lite.causal_conv1d_fn(x, w, bias, initial_states=init, return_final_states=True,
                                             activation="silu")
    ref = tap_by_tap_reference(x, w, bias, init, silu=True)
    assert_same_finite(out, ref, TOL[dtype], f"{path} W={width} out")
    want_final = torch.cat([init, x], dim=-1)[..., -(width - 1):]
    assert torch.equal(final, want_final), f"{path} W={width} final states"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("width", [5, 6, 7, 8])
def test_update_skips_taps(width, dtype):
    torch.manual_seed(width)
    batch, dim, steps = 3, 40, 4
    state = random_normal((batch, dim, width - 1), dtype, DEV)
    state[:, ::2, 0] = float("inf")  # rolls out after the first token: no later output may see it
    x = random_normal((batch, dim, steps), dtype, DEV)
    w, bias = random_normal((dim, width), torch.float32, DEV), random_normal((dim,), torch.float32, DEV)
    ref = tap_by_tap_reference(x, w, bias, state, silu=True)
    out = aiter_lite.causal_conv1d_update(x, state.clone(), w, bias, "silu")
    assert_same_finite(out, ref, TOL[dtype], f"update W={width}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("path", [*PATHS, "padded"])
@pytest.mark.parametrize("width", [5, 6, 7, 8])
def test_backward_skips_taps(path, width, dtype):
    """inf in dout: dx and dinit are non-finite exactly where a real tap carries it (dweight and dbias sum over
    every position and are non-finite anyway: not compared)."""
    torch.manual_seed(10 + width)
    layout, (b, d, length) = PATHS.get(path, ("padded", (3, 10, 200)))
    x = random_normal((b, d, length + 3), dtype, DEV)[..., :length] if layout == "padded" else \
        make(layout, b, d, length, dtype)
    w, bias = random_normal((d, width), torch.float32, DEV), random_normal((d,), torch.float32, DEV)
    init = random_normal((b, d, width - 1), dtype, DEV)
    dout = spaced_infs(random_normal((b, d, length), dtype, DEV))
    x.requires_grad_(True)
    init.requires_grad_(True)
    y = aiter_lite.causal_conv1d_fn(x, w, bias, initial_states=init, activation="silu")
    dx, dinit = torch.autograd.grad(y, (x, init), dout)
    x64 = x.detach().double().requires_grad_(True)
    init64 = init.detach().double().requires_grad_(True)
    ref = tap_by_tap_reference(x64, w, bias, init64, silu=True)
    rdx, rdinit = torch.autograd.grad(ref, (x64, init64), dout.double())
    assert_same_finite(dx, rdx, TOL[dtype], f"{path} W={width} dx")
    assert_same_finite(dinit, rdinit, TOL[dtype], f"{path} W={width} dinit")


@pytest.mark.parametrize("extra", [0, 4])
@pytest.mark.parametrize("width", [5, 6, 7, 8])
def test_update_many_items_long_state(width, extra):
    """The update's step kernel with 4 items a thread (one token, batch x dim >= 2^18, state [B, D, S] not
    channel-last) and states longer than the window (S = W - 1 + extra): entries before the window hold inf and
    must only move down, never reach an output."""
    from aiter_lite.ops.causal_conv1d_ref import causal_conv1d_update_ref
    torch.manual_seed(width + extra)
    batch, dim, dtype = 64, 4096, torch.bfloat16
    state = random_normal((batch, dim, width - 1 + extra), dtype, DEV)
    if extra:
        state[:, ::3, 0] = float("inf")
    x = random_normal((batch, dim), dtype, DEV)
    w, bias = random_normal((dim, width), torch.float32, DEV), random_normal((dim,), torch.float32, DEV)
    want_state = state.clone()
    ref = causal_conv1d_update_ref(x, want_state, w, bias, "silu")
    out = aiter_lite.causal_conv1d_update(x, state, w, bias, "silu")
    assert_same_finite(out, ref, TOL[dtype], f"update W={width} S={state.shape[-1]}")
    assert torch.equal(state, want_state), "state after the step"

