"""The bad-input matrix: each case raises TypeError/ValueError whose message names the argument.
Nothing is launched for any of them (checks run before the module is even loaded).

Every case runs on CPU tensors and, on a GPU machine (`-m gpu`), on CUDA tensors too; there each bad
call must be followed by a valid call that succeeds and a torch.cuda.synchronize() that raises
nothing (no sticky CUDA error). test_mixed_devices puts one argument on another device (meta next
to the CPU everywhere; CPU next to CUDA and cuda:1 next to cuda:0 where there are GPUs)."""
import pytest
import torch

import aiter_lite

f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
W, B_, L = 8, 2, 16
N_ = B_ * W * L  # elements of a conv x

HAS_CUDA = torch.cuda.is_available()
TWO_GPUS = HAS_CUDA and torch.cuda.device_count() >= 2
_gpu = [pytest.mark.gpu, pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")]
_two_gpus = [pytest.mark.gpu, pytest.mark.multigpu, pytest.mark.skipif(not TWO_GPUS, reason="needs two GPUs")]
DEVICES = ["cpu", pytest.param("cuda", marks=_gpu)]


class Inputs:
    """Valid tensors on one device, and X() for new random ones there."""

    def __init__(self, device):
        self.device = torch.device(device)
        self.x, self.w, self.bias = self.X(B_, W, L), self.X(W, 4), self.X(W)
        self.state = self.X(B_, W, 3)
        self.a, self.b = self.X(5, 6), self.X(6, 7)

    def X(self, *shape, dtype=f32):
        return torch.randn(*shape).to(device=self.device, dtype=dtype)


_INPUTS = {}


def inputs(device) -> Inputs:
    if device not in _INPUTS:
        _INPUTS[device] = Inputs(device)
    return _INPUTS[device]


CASES = [
    # (id, callable, exception type, argument named in the message)
    ("conv x not a tensor", lambda e: aiter_lite.causal_conv1d([1, 2], e.w), TypeError, "x"),
    ("conv x 2-D", lambda e: aiter_lite.causal_conv1d(e.X(W, L), e.w), ValueError, "x"),
    ("conv x int dtype", lambda e: aiter_lite.causal_conv1d(torch.ones(B_, W, L, dtype=torch.int32, device=e.device),
                                                            e.w), TypeError, "x"),
    ("conv x float64", lambda e: aiter_lite.causal_conv1d(e.X(B_, W, L, dtype=torch.float64), e.w), TypeError, "x"),
    ("conv weight 1-D", lambda e: aiter_lite.causal_conv1d(e.x, e.X(W)), ValueError, "weight"),
    ("conv weight wrong dim", lambda e: aiter_lite.causal_conv1d(e.x, e.X(W + 1, 4)), ValueError, "weight"),
    ("conv weight width 0", lambda e: aiter_lite.causal_conv1d(e.x, e.X(W, 0)), ValueError, "weight"),
    ("conv weight not tensor", lambda e: aiter_lite.causal_conv1d(e.x, 3.0), TypeError, "weight"),
    ("conv bias wrong shape", lambda e: aiter_lite.causal_conv1d(e.x, e.w, e.X(W + 2)), ValueError, "bias"),
    ("conv bias dtype mix", lambda e: aiter_lite.causal_conv1d(e.x, e.w, e.X(W, dtype=f16)), TypeError, "bias"),
    ("conv bad activation", lambda e: aiter_lite.causal_conv1d(e.x, e.w, None, "relu"), ValueError, "activation"),
    ("conv bad variant", lambda e: aiter_lite.causal_conv1d(e.x, e.w, variant="fast"), ValueError, "variant"),
    ("conv_fwd out wrong shape", lambda e: aiter_lite.causal_conv1d_fwd(e.X(B_, W, L + 1), e.x, e.w), ValueError,
     "out"),
    ("conv_fwd out wrong dtype", lambda e: aiter_lite.causal_conv1d_fwd(e.X(B_, W, L, dtype=bf16), e.x, e.w), TypeError,
     "out"),
    ("conv_fwd out aliases x", lambda e: aiter_lite.causal_conv1d_fwd(e.x, e.x, e.w), ValueError, "out"),
    ("conv_fwd out overlaps x", lambda e: (lambda big: aiter_lite.causal_conv1d_fwd(big[:, :, 1:], big[:, :, :-1],
                                                                                  e.w))(e.X(B_, W, L + 1)),
     ValueError, "out"),
    # Dense (contiguous) overlaps: caught by the one-pass path's byte-range test, named by the full check.
    ("conv_fwd out overlaps x (dense)", lambda e: (lambda buf: aiter_lite.causal_conv1d_fwd(
        buf[N_ // 2:N_ // 2 + N_].view(B_, W, L), buf[:N_].view(B_, W, L), e.w))(e.X(2 * N_)), ValueError, "out"),
    ("conv_fwd out overlaps weight (dense)", lambda e: (lambda buf: aiter_lite.causal_conv1d_fwd(
        buf[:N_].view(B_, W, L), e.x, buf[N_ - 4:N_ - 4 + 4 * W].view(W, 4)))(e.X(2 * N_)), ValueError, "out"),
    ("conv_fwd out overlaps bias (dense)", lambda e: (lambda buf: aiter_lite.causal_conv1d_fwd(
        buf[:N_].view(B_, W, L), e.x, e.w, buf[N_ - 2:N_ - 2 + W]))(e.X(2 * N_)), ValueError, "out"),
    ("conv_fwd out expanded", lambda e: aiter_lite.causal_conv1d_fwd(e.X(1, W, L).expand(B_, W, L), e.x, e.w),
     ValueError, "out"),
    ("conv_fwd use_silu not bool", lambda e: aiter_lite.causal_conv1d_fwd(e.X(B_, W, L), e.x, e.w, None, "yes"),
     TypeError, "use_silu"),
    ("update state dtype", lambda e: aiter_lite.causal_conv1d_update(e.X(B_, W), e.X(B_, W, 3, dtype=f16), e.w),
     TypeError, "conv_state"),
    ("update state too short", lambda e: aiter_lite.causal_conv1d_update(e.X(B_, W), e.X(B_, W, 2), e.w), ValueError,
     "conv_state"),
    ("update state batch", lambda e: aiter_lite.causal_conv1d_update(e.X(B_, W), e.X(B_ + 1, W, 3), e.w), ValueError,
     "conv_state"),
    ("update state dim", lambda e: aiter_lite.causal_conv1d_update(e.X(B_, W), e.X(B_, W + 1, 3), e.w), ValueError,
     "conv_state"),
    ("update x 4-D", lambda e: aiter_lite.causal_conv1d_update(e.X(B_, W, 1, 1), e.state, e.w), ValueError, "x"),
    ("update seqlens dtype", lambda e: aiter_lite.causal_conv1d_update(
        e.X(B_, W), e.state, e.w, cache_seqlens=torch.zeros(B_, dtype=torch.int64, device=e.device)),
     TypeError, "cache_seqlens"),
    ("update seqlens shape", lambda e: aiter_lite.causal_conv1d_update(
        e.X(B_, W), e.state, e.w, cache_seqlens=torch.zeros(B_ + 1, dtype=torch.int32, device=e.device)),
     ValueError, "cache_seqlens"),
    ("update indices dtype", lambda e: aiter_lite.causal_conv1d_update(
        e.X(B_, W), e.state, e.w, conv_state_indices=torch.zeros(B_, device=e.device)),
     TypeError, "conv_state_indices"),
    ("update indices out of range", lambda e: aiter_lite.causal_conv1d_update(
        e.X(B_, W), e.state, e.w, conv_state_indices=torch.tensor([0, 9], dtype=torch.int32, device=e.device)),
     ValueError, "conv_state_indices"),
    ("update state aliases x", lambda e: (lambda s: aiter_lite.causal_conv1d_update(s[:, :, :1], s, e.w))(
        e.X(B_, W, 3)), ValueError, "conv_state"),
    # States, packed sequences, serving prefill (issue 19)
    ("conv initial_states dtype", lambda e: aiter_lite.causal_conv1d(e.x, e.w, initial_states=e.X(B_, W, 3, dtype=f16)),
     TypeError, "initial_states"),
    ("conv initial_states shape", lambda e: aiter_lite.causal_conv1d(e.x, e.w, initial_states=e.X(B_, W, 4)),
     ValueError, "initial_states"),
    ("conv initial_states not tensor", lambda e: aiter_lite.causal_conv1d(e.x, e.w, initial_states=[0.0]),
     TypeError, "initial_states"),
    ("conv final_states_out shape", lambda e: aiter_lite.causal_conv1d(
        e.x, e.w, return_final_states=True, final_states_out=e.X(B_, W, 2)), ValueError, "final_states_out"),
    ("conv final_states_out dtype", lambda e: aiter_lite.causal_conv1d(
        e.x, e.w, return_final_states=True, final_states_out=e.X(B_, W, 3, dtype=bf16)), TypeError,
     "final_states_out"),
    ("conv final_states_out overlaps x", lambda e: (lambda buf: aiter_lite.causal_conv1d(
        buf[:, :, :L], e.w, return_final_states=True, final_states_out=buf[:, :, L - 3:]))(e.X(B_, W, L + 3)),
     ValueError, "final_states_out"),
    ("conv return_final_states not bool", lambda e: aiter_lite.causal_conv1d(e.x, e.w, return_final_states="yes"),
     TypeError, "return_final_states"),
    ("conv seq_idx int64", lambda e: aiter_lite.causal_conv1d(
        e.x, e.w, seq_idx=torch.zeros(B_, L, dtype=torch.int64, device=e.device)), TypeError, "seq_idx"),
    ("conv seq_idx shape", lambda e: aiter_lite.causal_conv1d(
        e.x, e.w, seq_idx=torch.zeros(B_, L + 1, dtype=torch.int32, device=e.device)), ValueError, "seq_idx"),
    ("conv seq_idx decreasing", lambda e: aiter_lite.causal_conv1d(
        e.x, e.w, seq_idx=torch.arange(L, 0, -1, dtype=torch.int32, device=e.device).expand(B_, L)), ValueError,
     "seq_idx"),
    ("conv_fn bad activation", lambda e: aiter_lite.causal_conv1d_fn(e.x, e.w, activation="gelu"), ValueError,
     "activation"),
    ("varlen_states x 3-D", lambda e: aiter_lite.causal_conv1d_varlen_states(
        e.x, torch.tensor([0, 2], dtype=torch.int32, device=e.device), 3), ValueError, "x"),
    ("varlen_states cu_seqlens float", lambda e: aiter_lite.causal_conv1d_varlen_states(
        e.X(L, W), torch.tensor([0.0, 2.0], device=e.device), 3), TypeError, "cu_seqlens"),
    ("varlen_states cu_seqlens decreasing", lambda e: aiter_lite.causal_conv1d_varlen_states(
        e.X(L, W), torch.tensor([0, 5, 2], dtype=torch.int32, device=e.device), 3), ValueError, "cu_seqlens"),
    ("varlen_states cu_seqlens past x", lambda e: aiter_lite.causal_conv1d_varlen_states(
        e.X(L, W), torch.tensor([0, L + 1], dtype=torch.int32, device=e.device), 3), ValueError, "cu_seqlens"),
    ("varlen_states state_len negative", lambda e: aiter_lite.causal_conv1d_varlen_states(
        e.X(L, W), torch.tensor([0, 2], dtype=torch.int32, device=e.device), -1), TypeError, "state_len"),
    ("varlen query_start_loc int64", lambda e: aiter_lite.causal_conv1d_varlen(
        e.X(W, L), e.w, query_start_loc=torch.tensor([0, L], device=e.device)), TypeError, "query_start_loc"),
    ("varlen query_start_loc decreasing", lambda e: aiter_lite.causal_conv1d_varlen(
        e.X(W, L), e.w, query_start_loc=torch.tensor([0, 9, 4], dtype=torch.int32, device=e.device)), ValueError,
     "query_start_loc"),
    ("varlen query_start_loc with 3-D x", lambda e: aiter_lite.causal_conv1d_varlen(
        e.x, e.w, query_start_loc=torch.tensor([0, L], dtype=torch.int32, device=e.device)), ValueError,
     "query_start_loc"),
    ("varlen conv_states dtype", lambda e: aiter_lite.causal_conv1d_varlen(
        e.X(W, L), e.w, None, e.X(4, W, 3, dtype=bf16)), TypeError, "conv_states"),
    ("varlen conv_states too short", lambda e: aiter_lite.causal_conv1d_varlen(e.X(W, L), e.w, None, e.X(4, W, 2)),
     ValueError, "conv_states"),
    ("varlen cache_indices past the pool", lambda e: aiter_lite.causal_conv1d_varlen(
        e.X(W, L), e.w, None, e.X(4, W, 3), torch.tensor([0, 5, L], dtype=torch.int32, device=e.device),
        torch.tensor([1, 4], dtype=torch.int32, device=e.device)), ValueError, "cache_indices"),
    ("varlen cache_indices int64", lambda e: aiter_lite.causal_conv1d_varlen(
        e.X(W, L), e.w, None, e.X(4, W, 3), torch.tensor([0, L], dtype=torch.int32, device=e.device),
        torch.tensor([1], device=e.device)), TypeError, "cache_indices"),
    ("varlen has_initial_state not bool", lambda e: aiter_lite.causal_conv1d_varlen(
        e.X(W, L), e.w, None, e.X(4, W, 3), torch.tensor([0, L], dtype=torch.int32, device=e.device), None,
        torch.ones(1, dtype=torch.int32, device=e.device)), TypeError, "has_initial_state"),
    ("varlen has_initial_state shape", lambda e: aiter_lite.causal_conv1d_varlen(
        e.X(W, L), e.w, None, e.X(4, W, 3), torch.tensor([0, L], dtype=torch.int32, device=e.device), None,
        torch.ones(2, dtype=torch.bool, device=e.device)), ValueError, "has_initial_state"),
    ("varlen has_initial_state without pool", lambda e: aiter_lite.causal_conv1d_varlen(
        e.X(W, L), e.w, None, None, None, None, torch.ones(1, dtype=torch.bool, device=e.device)), ValueError,
     "has_initial_state"),
    ("varlen pool too small", lambda e: aiter_lite.causal_conv1d_varlen(
        e.X(W, L), e.w, None, e.X(1, W, 3), torch.tensor([0, 3, L], dtype=torch.int32, device=e.device)),
     ValueError, "conv_states"),
    ("varlen conv_states aliases x", lambda e: (lambda buf: aiter_lite.causal_conv1d_varlen(
        buf[0, :, :L], e.w, None, buf[:, :, L - 3:]))(e.X(1, W, L + 3)), ValueError, "conv_states"),
    ("varlen pad_slot_id not int", lambda e: aiter_lite.causal_conv1d_varlen(e.X(W, L), e.w, pad_slot_id=1.5),
     TypeError, "pad_slot_id"),
    ("matmul a not tensor", lambda e: aiter_lite.matmul("a", e.b), TypeError, "a"),
    ("matmul a 1-D with out=", lambda e: aiter_lite.matmul(e.X(6), e.b, e.X(7)), ValueError, "a"),
    ("matmul b 4-D with out=", lambda e: aiter_lite.matmul(e.a, e.X(1, 1, 6, 7), e.X(1, 1, 5, 7)), ValueError, "b"),
    ("matmul a 0-D", lambda e: aiter_lite.matmul(e.X(1)[0], e.b), ValueError, "a"),
    ("matmul batch dims", lambda e: aiter_lite.matmul(e.X(2, 3, 5, 6), e.X(4, 6, 7)), ValueError, "batch dims"),
    ("matmul K mismatch", lambda e: aiter_lite.matmul(e.a, e.X(5, 7)), ValueError, "K dim"),
    ("matmul dtype mix", lambda e: aiter_lite.matmul(e.a, e.X(6, 7, dtype=f16)), TypeError, "b has dtype"),
    ("matmul int dtype", lambda e: aiter_lite.matmul(e.a.int(), e.b.int()), TypeError, "a"),
    ("matmul batch mismatch", lambda e: aiter_lite.matmul(e.X(2, 5, 6), e.X(3, 6, 7)), ValueError, "batch"),
    ("matmul out shape", lambda e: aiter_lite.matmul(e.a, e.b, e.X(5, 8)), ValueError, "out"),
    ("matmul out dtype", lambda e: aiter_lite.matmul(e.a, e.b, e.X(5, 7, dtype=bf16)), TypeError, "out"),
    ("matmul out aliases a", lambda e: (lambda sq: aiter_lite.matmul(sq, sq[:, :6].contiguous(), sq))(e.X(6, 6)),
     ValueError, "out"),
    ("matmul allow_tf32 type", lambda e: aiter_lite.matmul(e.a, e.b, allow_tf32="yes"), TypeError, "allow_tf32"),
    ("matmul bad variant", lambda e: aiter_lite.matmul(e.a, e.b, variant="fastest"), ValueError, "variant"),
    ("matmul bad config", lambda e: aiter_lite.matmul(e.a, e.b, config=-5), ValueError, "config"),
    ("matmul meta device", lambda e: aiter_lite.matmul(e.a.to("meta"), e.b.to("meta")), ValueError, "device"),
]

# On the GPU an index past the pool is treated as a padded slot (checking needs a device sync), see
# docs/ops.md and tests/test_gpu_causal_conv1d.py::test_update_index_past_the_pool_is_padding.
CPU_ONLY = {"update indices out of range"}


def valid_call_after(device) -> None:
    """A valid call right after a bad one succeeds, and no CUDA error is left behind."""
    e = inputs(device)
    out = aiter_lite.causal_conv1d(e.x, e.w, e.bias, "silu")
    c = aiter_lite.matmul(e.a, e.b)
    if e.device.type == "cuda":
        torch.cuda.synchronize()
    assert torch.isfinite(out).all() and torch.isfinite(c).all()


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("device", DEVICES)
def test_bad_input(device, case):
    name_, call, exc, name = case
    if device != "cpu" and name_ in CPU_ONLY:
        pytest.skip("CPU-only check")
    with pytest.raises(exc) as info:
        call(inputs(device))
    assert name in str(info.value), str(info.value)
    if device != "cpu":
        valid_call_after(device)


def test_matrix_is_large_enough():
    assert len(CASES) >= 25


@pytest.mark.parametrize("device", DEVICES)
def test_bad_input_leaves_no_state_behind(device):
    # A valid call right after the bad ones works.
    valid_call_after(device)


# ---------------------------------------------------------------------------------------------
# Mixed devices: one argument on another device than the rest. The message names the argument.

def _mixed_cases():
    """(id, call(main Inputs, other Inputs), argument named in the message)."""
    return [
        ("conv weight", lambda m, o: aiter_lite.causal_conv1d(m.x, o.w, m.bias, "silu"), "weight"),
        ("conv bias", lambda m, o: aiter_lite.causal_conv1d(m.x, m.w, o.bias, "silu"), "bias"),
        ("conv x", lambda m, o: aiter_lite.causal_conv1d(o.x, m.w, m.bias), "weight"),
        ("conv_fwd out", lambda m, o: aiter_lite.causal_conv1d_fwd(o.X(B_, W, L), m.x, m.w, m.bias), "out"),
        ("update conv_state", lambda m, o: aiter_lite.causal_conv1d_update(m.X(B_, W), o.state, m.w), "conv_state"),
        ("update weight", lambda m, o: aiter_lite.causal_conv1d_update(m.X(B_, W), m.state, o.w), "weight"),
        ("update bias", lambda m, o: aiter_lite.causal_conv1d_update(m.X(B_, W), m.state, m.w, o.bias), "bias"),
        ("update cache_seqlens", lambda m, o: aiter_lite.causal_conv1d_update(
            m.X(B_, W), m.state, m.w, cache_seqlens=torch.zeros(B_, dtype=torch.int32, device=o.device)),
         "cache_seqlens"),
        ("update conv_state_indices", lambda m, o: aiter_lite.causal_conv1d_update(
            m.X(B_, W), m.state, m.w, conv_state_indices=torch.zeros(B_, dtype=torch.int32, device=o.device)),
         "conv_state_indices"),
        ("conv initial_states", lambda m, o: aiter_lite.causal_conv1d(m.x, m.w, initial_states=o.state),
         "initial_states"),
        ("conv seq_idx", lambda m, o: aiter_lite.causal_conv1d(
            m.x, m.w, seq_idx=torch.zeros(B_, L, dtype=torch.int32, device=o.device)), "seq_idx"),
        ("varlen conv_states", lambda m, o: aiter_lite.causal_conv1d_varlen(m.X(W, L), m.w, None, o.state),
         "conv_states"),
        ("varlen query_start_loc", lambda m, o: aiter_lite.causal_conv1d_varlen(
            m.X(W, L), m.w, query_start_loc=torch.tensor([0, L], dtype=torch.int32, device=o.device)),
         "query_start_loc"),
        ("varlen_states cu_seqlens", lambda m, o: aiter_lite.causal_conv1d_varlen_states(
            m.X(L, W), torch.tensor([0, L], dtype=torch.int32, device=o.device), 3), "cu_seqlens"),
        ("matmul b", lambda m, o: aiter_lite.matmul(m.a, o.b), "b"),
        ("matmul a", lambda m, o: aiter_lite.matmul(o.a, m.b), "b"),
        ("matmul out", lambda m, o: aiter_lite.matmul(m.a, m.b, o.X(5, 7)), "out"),
    ]


MIXED = _mixed_cases()
PAIRS = [
    pytest.param("cpu", "meta", id="cpu+meta"),
    pytest.param("cuda", "cpu", id="cuda+cpu", marks=_gpu),
    pytest.param("cpu", "cuda", id="cpu+cuda", marks=_gpu),
    pytest.param("cuda:0", "cuda:1", id="cuda0+cuda1", marks=_two_gpus),
]


@pytest.mark.parametrize("case", MIXED, ids=[c[0] for c in MIXED])
@pytest.mark.parametrize("main,other", PAIRS)
def test_mixed_devices(main, other, case):
    _, call, name = case
    with pytest.raises(ValueError) as info:
        call(inputs(main), inputs(other))
    msg = str(info.value)
    assert msg.startswith(name) and "same device" in msg, msg
    for dev in {main, other} - {"cpu", "meta"}:
        valid_call_after(dev)
