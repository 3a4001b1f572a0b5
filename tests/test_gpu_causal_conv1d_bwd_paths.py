"""GPU (-m gpu): the backward's kernel paths through the real autograd API (issue 20, session 12): shifted
rows (odd L on [B, D, L], the row's last vector partial), the staged channel-last kernel (partial
channel blocks, padded steps, long rows of many chunks, seq_idx and states) and the direct one (steps off
the 16-byte grid), seq_idx on whole-vector [B, D, L] rows (the rows kernel, issue 20 session 13), each against
the float64 reference, with NaN left in the caching allocator so that an
unwritten gradient element shows; bitwise reproducibility on the new paths."""
import itertools
import os
import subprocess
import sys

import pytest
import torch

import aiter_lite.ops._conv_autograd  # noqa: F401  registers torch.ops.aiter_lite.causal_conv1d_bwd
from aiter_lite.ops import causal_conv1d_ref
from conv_states_cases import (TOLERANCE, check_deterministic_backward, make_states, packed_seq_idx, random_normal,
                               rel_error)
from test_causal_conv1d_grad import grads_vs_reference

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]
DEV = torch.device("cuda")
GRAD_TOL = {torch.float32: 2e-5, torch.float16: 4e-3, torch.bfloat16: 3e-2}
PAIRS = [(torch.float32, torch.float32), (torch.bfloat16, torch.float32), (torch.float16, torch.float16)]


def poison_allocator(nbytes):
    """Leave NaN in the caching allocator's next blocks of about this size (dx, workspace)."""
    for _ in range(3):
        torch.full((max(nbytes, 4) // 4 + 1,), float("nan"), device=DEV)


def make(layout, b, d, length, dtype):
    if layout == "cl_pad":  # steps of d + 8 channels: the staged kernel with padded rows
        return random_normal((b, length, d + 8), dtype, DEV)[..., :d].transpose(1, 2)
    if layout == "cl_odd":  # steps of d + 1 channels: off the 16-byte grid, the direct kernel
        return random_normal((b, length, d + 1), dtype, DEV)[..., :d].transpose(1, 2)
    if layout == "channel_last":
        return random_normal((b, length, d), dtype, DEV).transpose(1, 2)
    return random_normal((b, d, length), dtype, DEV)


def check(layout, b, d, length, width, x_dtype, w_dtype, features, segments=3, seq_idx=True):
    """features: initial and final states, and seq_idx unless seq_idx=False."""
    tol = max(GRAD_TOL[x_dtype], GRAD_TOL[w_dtype])
    x = make(layout, b, d, length, x_dtype)
    w, bias = random_normal((d, width), w_dtype, DEV), random_normal((d,), w_dtype, DEV)
    poison_allocator(x.numel() * x.element_size())
    if features:
        init = make_states(b, d, width, x_dtype, DEV, "channel_last" if layout != "contiguous" else "contiguous")
        seq = packed_seq_idx(b, length, DEV, segments) if seq_idx else None
        grads_vs_reference(x, w, bias, "silu", initial_states=init, seq_idx=seq, final_states=True, dtype_tol=tol)
    else:
        grads_vs_reference(x, w, bias, "silu", dtype_tol=tol)


@pytest.mark.parametrize("x_dtype,w_dtype", PAIRS)
@pytest.mark.parametrize("width", range(1, 9))
def test_shifted_rows(x_dtype, w_dtype, width):
    """Rows off the 16-byte grid (row-relative vectors since session 19): odd lengths, rows of a vector or two
    (L = 2W + 1), and a call large enough for two vectors a lane on aligned rows (1 x 40 x 30001; shifted rows take
    one, in chunks of 2 or 3 tiles); with the features (states and seq_idx, which shifted rows take since session
    20) and without."""
    torch.manual_seed(width)
    shapes = [(3, 5, 131), (2, 7, 777), (2, 3, 1000), (1, 9, 64), (4, 6, 2 * width + 1), (1, 40, 30001)]
    for (b, d, length), features in itertools.product(shapes, [False, True]):
        check("contiguous", b, d, length, width, x_dtype, w_dtype, features)


@pytest.mark.parametrize("x_dtype,w_dtype", PAIRS)
@pytest.mark.parametrize("width", range(1, 9))
def test_rows_seq_idx(x_dtype, w_dtype, width):
    """seq_idx on contiguous rows of whole 16-byte vectors: many segments (starts on every offset of a
    vector, single-token segments), one and two vectors a lane, with initial and final states."""
    torch.manual_seed(20 + width)
    for (b, d, length), segments in [((2, 24, 1024), 60), ((3, 8, 512), 200), ((2, 16, 4096), 5),
                                     ((1, 2048, 2048), 40)]:
        check("contiguous", b, d, length, width, x_dtype, w_dtype, True, segments)


@pytest.mark.parametrize("x_dtype,w_dtype", PAIRS)
@pytest.mark.parametrize("width", [1, 2, 4, 5, 8])
def test_rows_chunks(x_dtype, w_dtype, width):
    """Aligned rows large enough that the rows kernel's warps walk several tiles each (session 25): 2 x 2048 x 2560
    has 5 tiles a row in 16-bit and 10 in fp32, split 2 + 2 + 1 and 3 + 3 + 3 + 1 at the default chunk count, with
    and without the features (states at both ends of the row, seq_idx)."""
    torch.manual_seed(30 + width)
    for features in (False, True):
        check("contiguous", 2, 2048, 2560, width, x_dtype, w_dtype, features, segments=50)


@pytest.mark.parametrize("width", [6, 8])
def test_rows_chunks_short_last_tile(width):
    """fp32 rows whose last tile holds one vector (4 positions), fewer than the W - 1 positions the final states'
    gradient reaches back: dfinal lands in the tile before it too, which is then no inner tile (session 26: the
    loop's inner tiles skip the row-end checks). 2 x 2048 x 2564 (two vectors a lane, tiles of 256 positions) and
    1 x 8 x 644 (one vector a lane, tiles of 128), with and without the features."""
    torch.manual_seed(40 + width)
    for (b, d, length), features in itertools.product([(2, 2048, 2564), (1, 8, 644)], [False, True]):
        check("contiguous", b, d, length, width, torch.float32, torch.float32, features, segments=5)


@pytest.mark.parametrize("x_dtype,w_dtype", PAIRS)
@pytest.mark.parametrize("width", [1, 2, 3, 4, 5, 8])
def test_shifted_rows_chunks(x_dtype, w_dtype, width):
    """Shifted rows (odd L) whose warps walk several tiles each, as aligned rows do: 2 x 2048 x 2561 has 11 tiles a
    row in 16-bit and 21 in fp32 (one vector a lane), split 3 + 3 + 3 + 2 and 6 + 6 + 6 + 3 at the default chunk
    count. Without the features (16-bit W <= 2: the flat-array form), with the states alone (flat rows then start W - 1
    before the row, for dinit) and with states and seq_idx (row-relative vectors)."""
    torch.manual_seed(40 + width)
    check("contiguous", 2, 2048, 2561, width, x_dtype, w_dtype, False)
    check("contiguous", 2, 2048, 2561, width, x_dtype, w_dtype, True, seq_idx=False)
    check("contiguous", 2, 2048, 2561, width, x_dtype, w_dtype, True, segments=50)


def test_rows_whole_row_chunks():
    """AITER_LITE_BWD_ROWS_CHUNKS=1 (read once per process, so in a child process): every warp of the rows kernel
    walks all the tiles of its row, on the small shapes of test_rows_seq_idx and test_shifted_rows too; those tests,
    test_rows_chunks and test_shifted_rows_chunks pass there."""
    env = dict(os.environ, AITER_LITE_BWD_ROWS_CHUNKS="1")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-m", "gpu", "-p", "no:cacheprovider", __file__,
                          "-k", "test_rows_chunks or test_rows_seq_idx or test_shifted_rows"], env=env,
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and "failed" not in run.stdout


@pytest.mark.parametrize("value", ["0", "abc", "16x"])
def test_rows_chunks_env_is_checked(value):
    """A bad AITER_LITE_BWD_ROWS_CHUNKS fails the backward with an error naming the variable (a child process: the
    value is read once per process). Written in session 25 after its device time was spent: first run next session."""
    code = ("import torch, aiter_lite\n"
            "x = torch.randn(2, 64, 1024, device='cuda', requires_grad=True)\n"
            "w = torch.randn(64, 4, device='cuda')\n"
            "aiter_lite.causal_conv1d(x, w).sum().backward()\n")
    env = dict(os.environ, AITER_LITE_BWD_ROWS_CHUNKS=value)
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode != 0
    assert "AITER_LITE_BWD_ROWS_CHUNKS" in run.stderr, run.stderr[-2000:]


@pytest.mark.parametrize("x_dtype,w_dtype", PAIRS)
@pytest.mark.parametrize("width", [2, 4, 5, 8])
def test_rows_seq_idx_padding_inside_sequences(x_dtype, w_dtype, width):
    """Padding tokens inside sequences on contiguous rows (the rows kernel): short sequences (a new one every 1-6
    tokens) with a fifth of the tokens set to -1, so an id recurs across a padding token within the width in most
    windows (equal ids are one sequence, the reference's rule: a tap skips the padding token and reads on). Such
    windows read the ids themselves."""
    torch.manual_seed(40 + width)
    tol = max(GRAD_TOL[x_dtype], GRAD_TOL[w_dtype])
    for b, d, length in [(2, 24, 1024), (1, 2048, 2048), (2, 24, 1021), (1, 2048, 2047)]:  # odd L: shifted rows
        seq = torch.cumsum((torch.rand(b, length) < 0.3).to(torch.int32), dim=1).to(torch.int32)
        pad = torch.rand(b, length) < 0.2
        pad[:, -1] = False  # a row may not end in padding with final states
        seq = seq.masked_fill(pad, -1).to(DEV)
        x = make("contiguous", b, d, length, x_dtype)
        w, bias = random_normal((d, width), w_dtype, DEV), random_normal((d,), w_dtype, DEV)
        init = make_states(b, d, width, x_dtype, DEV, "contiguous")
        poison_allocator(x.numel() * x.element_size())
        grads_vs_reference(x, w, bias, "silu", initial_states=init, seq_idx=seq, final_states=True, dtype_tol=tol)


@pytest.mark.parametrize("x_dtype,w_dtype", PAIRS)
@pytest.mark.parametrize("width", [2, 4, 8])
@pytest.mark.parametrize("shape", [(2, 24, 1024), (1, 2048, 2048), (1, 2048, 2047)])
def test_rows_seq_idx_not_non_decreasing(shape, x_dtype, w_dtype, width):
    """seq_idx that decreases (ids 0 1 0 ...) reaches the backward kernels when the op's host check cannot run
    (graph capture, torch.compile); the rows kernel's sequence starts cannot express it, so the marks kernel
    flags it and the reduce kernel recomputes the backward by the reference's rule (equal ids are one sequence).
    The registered backward op, which does not check, against the float64 reference."""
    torch.manual_seed(60 + width)
    b, d, length = shape
    tol = max(GRAD_TOL[x_dtype], GRAD_TOL[w_dtype])
    seq = torch.randint(0, 3, (b, length), dtype=torch.int32)
    seq[:, -1] = 1
    seq = seq.to(DEV)
    x = make("contiguous", b, d, length, x_dtype)
    w, bias = random_normal((d, width), w_dtype, DEV), random_normal((d,), w_dtype, DEV)
    init = make_states(b, d, width, x_dtype, DEV, "contiguous")
    dout = random_normal((b, d, length), x_dtype, DEV)
    dfinal = random_normal((b, d, width - 1), x_dtype, DEV)
    poison_allocator(x.numel() * x.element_size())
    dx, dw, db, dinit = torch.ops.aiter_lite.causal_conv1d_bwd(x, w, bias, dout, init, seq, dfinal, True, True, True,
                                                                True, True, False)
    ref_in = [t.detach().double().requires_grad_() for t in (x, w, bias, init)]
    out, fin = causal_conv1d_ref(*ref_in[:3], "silu", initial_states=ref_in[3], return_final_states=True,
                                 seq_idx=seq)
    ref = torch.autograd.grad((out * dout.double()).sum() + (fin * dfinal.double()).sum(), ref_in)
    for name, ours, theirs in zip(["x", "weight", "bias", "initial_states"], (dx, dw, db, dinit), ref):
        assert rel_error(ours, theirs) <= tol, (name, rel_error(ours, theirs))


@pytest.mark.parametrize("layout", ["channel_last", "cl_pad", "cl_odd"])
@pytest.mark.parametrize("x_dtype,w_dtype", PAIRS)
@pytest.mark.parametrize("width", range(1, 9))
def test_channel_last_paths(layout, x_dtype, w_dtype, width):
    torch.manual_seed(10 + width)
    for (b, d, length), features in itertools.product([(2, 72, 300), (2, 40, 129), (1, 48, 3000)], [False, True]):
        check(layout, b, d, length, width, x_dtype, w_dtype, features)


@pytest.mark.parametrize("shape,layout", [((3, 1536, 777), "contiguous"), ((4, 256, 1001), "contiguous"),
                                          ((2, 1024, 1000), "channel_last"), ((2, 1000, 999), "cl_odd"),
                                          ((2, 512, 4096), "contiguous")])
def test_new_paths_bitwise_reproducible(shape, layout):
    x = make(layout, *shape, torch.bfloat16).requires_grad_()
    seq = packed_seq_idx(shape[0], shape[2], DEV, 30) if shape[2] % 8 == 0 else None
    w = random_normal((shape[1], 3), torch.float32, DEV).requires_grad_()
    b = random_normal((shape[1],), torch.float32, DEV).requires_grad_()
    dout = random_normal(tuple(x.shape), torch.bfloat16, DEV)
    check_deterministic_backward(x, w, b, dout, runs=3, tol=TOLERANCE[torch.bfloat16], seq_idx=seq)


@pytest.mark.parametrize("features", [False, True])
@pytest.mark.parametrize("x_layout", ["contiguous", "channel_last"])
@pytest.mark.parametrize("x_dtype,w_dtype", PAIRS)
@pytest.mark.parametrize("width", [2, 4, 7])
@pytest.mark.parametrize("shape", [(2, 64, 1000), (1, 40, 777), (3, 200, 4096), (2, 66, 130), (1, 130, 67)])
def test_dout_in_the_other_layout(shape, width, x_dtype, w_dtype, x_layout, features):
    """dout in the other fast layout than x (a gradient arriving transposed): the backward stages dout in x's
    layout in its workspace (a tiled transpose; 16-bit elements two at a time where rows and strides are even) and
    runs the rows or channel-last kernel instead of the tile kernel. Gradients of x, weight, bias and the initial
    states against the float64 reference, with and without seq_idx and states; odd L (the element path, or a last
    pair cut in half), tiles cut at both ends (D = 66, 130); NaN-poisoned allocator."""
    torch.manual_seed(width)
    b, d, length = shape
    tol = max(GRAD_TOL[x_dtype], GRAD_TOL[w_dtype])
    x = make(x_layout, b, d, length, x_dtype)
    w, bias = random_normal((d, width), w_dtype, DEV), random_normal((d,), w_dtype, DEV)
    dout = make("channel_last" if x_layout == "contiguous" else "contiguous", b, d, length, x_dtype)
    kw = {}
    if features:
        kw = dict(initial_states=make_states(b, d, width, x_dtype, DEV, x_layout),
                  seq_idx=packed_seq_idx(b, length, DEV, 3))
    poison_allocator(x.numel() * x.element_size())
    grads_vs_reference(x, w, bias, "silu", dtype_tol=tol, dout=dout, **kw)
