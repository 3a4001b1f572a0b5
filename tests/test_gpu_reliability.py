"""GPU reliability of every op (issue 7): streams, CUDA graphs, devices, threads. Skipped without CUDA;
the two-GPU tests (marker multigpu) also need a second GPU.

- Side streams: a long producer (torch.cuda._sleep, then the real inputs copied in) on a side stream,
  then our op on that stream: the op must wait for the producer. And the reverse: the default stream
  kept busy while our op runs on a side stream and its result is read back on that stream: the op
  must not be queued behind the default stream (it launches on torch.cuda.current_stream()).
- CUDA graphs: warm up on a side stream, capture, then replay several times with new data copied into
  the static inputs; every replay is checked. causal_conv1d (bias + SiLU), causal_conv1d_fwd(out=),
  causal_conv1d_update (cache_seqlens, pool indices with a padded slot) in fp32/fp16/bf16, matmul in
  fp32/tf32/fp16/bf16 (batched, broadcast b), all three in one graph, and a capture that is the very
  first launch of every module in a fresh process.
- Devices: with current device 0, tensors on cuda:1 launch on cuda:1 (ordered on cuda:1's current
  stream; the profiler sees the kernels on device 1), outputs land on cuda:1, and the current device
  is left as it was; side streams and graphs on cuda:1; one thread per GPU at once.
- Threads: several threads, each with its own stream, call every op at once.
- Index tensors given as strided or expanded views give the right result.
Bad inputs on CUDA tensors and mixed devices (CPU + CUDA, cuda:0 + cuda:1) are in test_bad_inputs.py.

Checks: float64 references on the CPU; elementwise |out - ref| <= tol + tol * |ref| for conv
(1e-5 fp32, 2e-3 fp16, 1.6e-2 bf16), conv_state exact, matmul scale-aware relative Frobenius error
(1e-5 fp32, 1e-3 tf32, 2e-3 fp16, 1e-2 bf16). Outputs given to the ops are poisoned with NaN.
"""
from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
import torch

import aiter_lite
from aiter_lite.ops import causal_conv1d_ref, causal_conv1d_update_ref, matmul_ref

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

TWO_GPUS = torch.cuda.is_available() and torch.cuda.device_count() >= 2
two_gpus = [pytest.mark.multigpu, pytest.mark.skipif(not TWO_GPUS, reason="needs two GPUs")]
DEVICES = ["cuda:0", pytest.param("cuda:1", marks=two_gpus)]

f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
MODE_DTYPES = {"fp32": f32, "tf32": f32, "fp16": f16, "bf16": bf16}
CONV_TOL = {f32: 1e-5, f16: 2e-3, bf16: 1.6e-2}
MM_TOL = {"fp32": 1e-5, "tf32": 1e-3, "fp16": 2e-3, "bf16": 1e-2}
OPS = ("causal_conv1d", "causal_conv1d_fwd", "causal_conv1d_update", "matmul")
# Cycles of torch.cuda._sleep: ~0.25 s at H100/H200 clocks, far longer than any op here.
SLEEP_CYCLES = 500_000_000
REPO = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------------------------
# One op on one device with static input buffers


class OpCase:
    """Static input buffers for one op, fresh(): new random values for them, run(): the op on the
    buffers (outputs it is given are poisoned first), check(values, outputs): compare outputs with
    the float64 reference computed on `values` (what the buffers held when the op ran)."""

    def __init__(self, op: str, device, mode: str = "bf16", seed: int = 0):
        self.op, self.device, self.mode = op, torch.device(device), mode
        self.dtype = MODE_DTYPES[mode]
        self.gen = torch.Generator().manual_seed(seed)
        dt = self.dtype
        if op in ("causal_conv1d", "causal_conv1d_fwd"):
            b, d, l, w = 2, 96, 300, 4
            self.specs = [((b, d, l), dt), ((d, w), dt), ((d,), dt)]
            self.out = torch.empty(b, d, l, dtype=dt, device=self.device)
        elif op == "causal_conv1d_update":
            self.batch, dim, w, self.pool, slen = 5, 96, 4, 9, 6
            self.specs = [((self.batch, dim, 2), dt), ((self.pool, dim, slen), dt), ((dim, w), dt), ((dim,), dt),
                          ("seqlens", torch.int32), ("indices", torch.int32)]
        elif op == "matmul":
            self.specs = [((3, 129, 200), dt), ((200, 127), dt)]  # batched a, broadcast b
            self.out = torch.empty(3, 129, 127, dtype=dt, device=self.device)
        else:
            raise ValueError(op)
        self.buffers = [v.to(self.device) for v in self.fresh_cpu()]

    def fresh_cpu(self) -> list[torch.Tensor]:
        vals = []
        for shape, dt in self.specs:
            if shape == "seqlens":
                vals.append(torch.randint(0, 100, (self.batch,), generator=self.gen, dtype=torch.int32))
            elif shape == "indices":
                idx = torch.randperm(self.pool, generator=self.gen)[:self.batch].to(torch.int32)
                idx[1] = -1  # a padded slot
                vals.append(idx)
            else:
                vals.append(torch.randn(*shape, generator=self.gen).to(dt))
        return vals

    def fresh(self) -> list[torch.Tensor]:
        """New values on the device (made on its current stream)."""
        return [v.to(self.device) for v in self.fresh_cpu()]

    def load(self, values) -> None:
        for buf, v in zip(self.buffers, values):
            buf.copy_(v)

    def run(self) -> list[torch.Tensor]:
        bufs = self.buffers
        if self.op == "causal_conv1d":
            return [aiter_lite.causal_conv1d(bufs[0], bufs[1], bufs[2], "silu")]
        if self.op == "causal_conv1d_fwd":
            self.out.fill_(float("nan"))
            aiter_lite.causal_conv1d_fwd(self.out, bufs[0], bufs[1], bufs[2], True)
            return [self.out]
        if self.op == "causal_conv1d_update":
            x, state, w, b, seqlens, indices = bufs
            return [aiter_lite.causal_conv1d_update(x, state, w, b, "silu", seqlens, indices), state]
        self.out.fill_(float("nan"))
        aiter_lite.matmul(bufs[0], bufs[1], self.out, allow_tf32=self.mode == "tf32")
        return [self.out]

    def check(self, values, outputs, what: str = "") -> None:
        values = [v.cpu() for v in values]
        outputs = [o.cpu() for o in outputs]
        what = f"{self.op} {self.mode} on {self.device} {what}"
        if self.op in ("causal_conv1d", "causal_conv1d_fwd"):
            x, w, b = values
            assert_close(outputs[0], causal_conv1d_ref(x, w, b, "silu"), self.dtype, what)
        elif self.op == "causal_conv1d_update":
            x, state, w, b, seqlens, indices = values
            ref_state = state.clone()
            ref = causal_conv1d_update_ref(x, ref_state, w, b, "silu", seqlens, indices)
            assert_close(outputs[0], ref, self.dtype, what + " out")
            assert torch.equal(outputs[1], ref_state), f"{what}: conv_state differs from the reference"
        else:
            a, b = values
            err = matmul_error(outputs[0], a, b)
            assert err <= MM_TOL[self.mode], f"{what}: relative error {err:.3e} > {MM_TOL[self.mode]:.0e}"


def assert_close(out: torch.Tensor, ref: torch.Tensor, dtype, what: str) -> None:
    tol = CONV_TOL[dtype]
    out64 = out.double()
    assert out64.shape == ref.shape, f"{what}: shape {tuple(out64.shape)} != {tuple(ref.shape)}"
    finite = torch.isfinite(out64)
    if not bool(finite.all()):
        idx = tuple(int(i) for i in (~finite).nonzero()[0])
        raise AssertionError(f"{what}: non-finite output at {idx} (not written, or written too late)")
    err = (out64 - ref).abs()
    bad = err > tol + tol * ref.abs()
    if bool(bad.any()):
        idx = tuple(int(i) for i in bad.nonzero()[0])
        raise AssertionError(f"{what}: {int(bad.sum())} elements off, first at {idx}: got {float(out64[idx])}, "
                             f"want {float(ref[idx])}")


def matmul_error(out: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> float:
    ref = matmul_ref(a, b)
    out64 = out.double()
    if out64.shape != ref.shape or not bool(torch.isfinite(out64).all()):
        return float("inf")
    scale = torch.matmul(a.double().abs(), b.double().abs()).norm().item() / math.sqrt(a.shape[-1])
    return (out64 - ref).norm().item() / max(ref.norm().item(), scale)


def case_params():
    return ([pytest.param(op, m, id=f"{op}-{m}") for op in OPS[:3] for m in ("fp32", "fp16", "bf16")]
            + [pytest.param("matmul", m, id=f"matmul-{m}") for m in ("fp32", "tf32", "fp16", "bf16")])


# ---------------------------------------------------------------------------------------------
# Side streams


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
def test_side_stream_op_waits_for_its_producer(op, device):
    """On a side stream: sleep, then copy the real inputs in, then our op. If the op were launched on
    another stream it would read the stale inputs (or race with the copy)."""
    dev = torch.device(device)
    case = OpCase(op, dev, seed=1)
    case.run()  # warm-up: module loaded, kernels loaded
    fresh = case.fresh()
    torch.cuda.synchronize(dev)
    s = torch.cuda.Stream(device=dev)
    with torch.cuda.device(dev), torch.cuda.stream(s):
        torch.cuda._sleep(SLEEP_CYCLES)  # a long producer
        case.load(fresh)
        outs = case.run()
    s.synchronize()
    case.check(fresh, outs, "after a producer on its side stream")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
def test_side_stream_op_does_not_wait_for_the_default_stream(op, device):
    """Default stream busy (sleeping); our op on a side stream, its result copied to the host on that
    stream. If the op were queued on the default stream, the copy would see unwritten outputs."""
    dev = torch.device(device)
    case = OpCase(op, dev, seed=2)
    s = torch.cuda.Stream(device=dev)
    with torch.cuda.device(dev), torch.cuda.stream(s):  # warm-up on s: module, kernels, s's cached blocks
        [o.to("cpu") for o in case.run()]
    fresh = case.fresh()
    case.load(fresh)  # new values: a stale output of the warm-up run cannot pass for the result
    torch.cuda.synchronize(dev)
    with torch.cuda.device(dev):
        torch.cuda._sleep(SLEEP_CYCLES)  # on the default stream of dev
        with torch.cuda.stream(s):
            outs = case.run()
            host = [o.to("cpu") for o in outs]  # synchronous on s: waits for s only
        default_busy = not torch.cuda.default_stream(dev).query()
    case.check(fresh, host, "on a side stream while the default stream is busy")
    assert default_busy, "the default stream finished its sleep first: the test proved nothing (raise SLEEP_CYCLES)"
    torch.cuda.synchronize(dev)


# ---------------------------------------------------------------------------------------------
# CUDA graphs


def capture_stream(dev: torch.device) -> torch.cuda.Stream:
    """A capture stream on dev. torch.cuda.graph's default capture stream is created once, on the device
    current at its first use; capturing cuda:1 work on cuda:0's stream leaves every op on cuda:1
    (torch's and ours) on cuda:1's own current stream, outside the graph."""
    return torch.cuda.Stream(device=dev)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op,mode", case_params())
def test_graph_capture_and_replay(op, mode, device):
    dev = torch.device(device)
    case = OpCase(op, dev, mode, seed=3)
    with torch.cuda.device(dev):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):  # warm-up on a side stream, as torch's docs do before a capture
            for _ in range(2):
                case.run()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=capture_stream(dev)):
            outs = case.run()
        for replay in range(4):
            fresh = case.fresh()
            case.load(fresh)
            g.replay()
            torch.cuda.synchronize(dev)
            case.check(fresh, outs, f"graph replay {replay}")


@pytest.mark.parametrize("device", DEVICES)
def test_graph_with_every_op_in_one_capture(device):
    """conv -> matmul on its output -> decode update, captured together and replayed."""
    dev = torch.device(device)
    gen = torch.Generator().manual_seed(4)

    def rnd(*shape, dtype=bf16):
        return torch.randn(*shape, generator=gen).to(device=dev, dtype=dtype)

    x, w, b = rnd(1, 64, 160), rnd(64, 4), rnd(64)
    proj = rnd(160, 48)
    xs, state, ws = rnd(3, 64), rnd(3, 64, 3), rnd(64, 4)
    with torch.cuda.device(dev):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            y = aiter_lite.causal_conv1d(x, w, b, "silu")
            aiter_lite.matmul(y[0], proj)
            aiter_lite.causal_conv1d_update(xs, state.clone(), ws, None, "silu")
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=capture_stream(dev)):
            y = aiter_lite.causal_conv1d(x, w, b, "silu")
            c = aiter_lite.matmul(y[0], proj)
            u = aiter_lite.causal_conv1d_update(xs, state, ws, None, "silu")
        for replay in range(3):
            new_x, new_xs, new_state = rnd(1, 64, 160), rnd(3, 64), rnd(3, 64, 3)
            x.copy_(new_x)
            xs.copy_(new_xs)
            state.copy_(new_state)
            g.replay()
            torch.cuda.synchronize(dev)
            assert_close(y.cpu(), causal_conv1d_ref(new_x.cpu(), w.cpu(), b.cpu(), "silu"), bf16, f"conv {replay}")
            err = matmul_error(c.cpu(), y[0].cpu(), proj.cpu())
            assert err <= MM_TOL["bf16"], f"matmul on the conv output, replay {replay}: {err:.3e}"
            ref_state = new_state.cpu().clone()
            ref = causal_conv1d_update_ref(new_xs.cpu(), ref_state, ws.cpu(), None, "silu")
            assert_close(u.cpu(), ref, bf16, f"update {replay}")
            assert torch.equal(state.cpu(), ref_state)


def test_graph_capture_is_the_first_launch_in_a_fresh_process():
    """No warm-up: each module is loaded and each kernel launched for the first time inside the
    capture (a fresh process, so nothing of ours ran before). Then replay and check."""
    script = textwrap.dedent("""
        import math, torch, aiter_lite
        from aiter_lite.ops import causal_conv1d_ref, causal_conv1d_update_ref, matmul_ref
        torch.manual_seed(5)
        dev = torch.device("cuda")
        x, w, b = (torch.randn(*s).to(dev, torch.bfloat16) for s in ((2, 96, 300), (96, 4), (96,)))
        xs, st = torch.randn(4, 96).to(dev, torch.float16), torch.randn(4, 96, 5).to(dev, torch.float16)
        wu = torch.randn(96, 4).to(dev, torch.float16)
        a, bm = torch.randn(256, 192).to(dev, torch.float16), torch.randn(192, 320).to(dev, torch.float16)
        af, bf = torch.randn(100, 70, device=dev), torch.randn(70, 90, device=dev)
        st0 = st.clone()
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = aiter_lite.causal_conv1d(x, w, b, "silu")
            u = aiter_lite.causal_conv1d_update(xs, st, wu, None, "silu")
            c = aiter_lite.matmul(a, bm)
            cf = aiter_lite.matmul(af, bf, allow_tf32=False)
        g.replay()
        torch.cuda.synchronize()
        def rel(o, r):
            return (o.double().cpu() - r.cpu()).norm().item() / r.norm().item()
        errs = {"conv": rel(y, causal_conv1d_ref(x, w, b, "silu")),
                "matmul fp16": rel(c, matmul_ref(a, bm)), "matmul fp32": rel(cf, matmul_ref(af, bf))}
        ref_state = st0.clone()
        errs["update"] = rel(u, causal_conv1d_update_ref(xs, ref_state, wu, None, "silu"))
        assert torch.equal(st, ref_state), "conv_state differs"
        limits = {"conv": 1e-2, "update": 2e-3, "matmul fp16": 2e-3, "matmul fp32": 1e-5}
        bad = {k: v for k, v in errs.items() if not v <= limits[k]}
        assert not bad, bad
        print("FIRST_LAUNCH_CAPTURE_OK", errs)
    """)
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0 and "FIRST_LAUNCH_CAPTURE_OK" in proc.stdout, (
        f"rc={proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}")


# ---------------------------------------------------------------------------------------------
# Devices


@pytest.mark.multigpu
@pytest.mark.skipif(not TWO_GPUS, reason="needs two GPUs")
@pytest.mark.parametrize("op", OPS)
def test_cuda1_tensors_launch_on_cuda1_from_device0(op):
    """Current device 0, tensors on cuda:1: the op must run on cuda:1's current stream (it is kept
    busy, then given the real inputs: launched anywhere else, the op reads stale inputs or faults),
    put new outputs on cuda:1, and leave the current device at 0."""
    torch.cuda.set_device(0)
    d1 = torch.device("cuda", 1)
    case = OpCase(op, d1, seed=6)
    case.run()  # warm-up
    fresh = case.fresh()
    torch.cuda.synchronize(d1)
    with torch.cuda.device(1):
        torch.cuda._sleep(SLEEP_CYCLES)  # cuda:1's current stream is busy...
        case.load(fresh)  # ...then gets the real inputs
    assert torch.cuda.current_device() == 0
    outs = case.run()
    assert torch.cuda.current_device() == 0, "the op changed the current device"
    assert all(o.device == d1 for o in outs), [o.device for o in outs]
    torch.cuda.synchronize(d1)
    case.check(fresh, outs, "called with current device 0")


@pytest.mark.multigpu
@pytest.mark.skipif(not TWO_GPUS, reason="needs two GPUs")
def test_cuda1_kernels_show_on_device1_in_the_profiler():
    torch.cuda.set_device(0)
    cases = [OpCase(op, "cuda:1", seed=7) for op in OPS]
    for c in cases:
        c.run()
    torch.cuda.synchronize(1)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                            torch.profiler.ProfilerActivity.CUDA]) as prof:
        for c in cases:
            c.run()
        torch.cuda.synchronize(1)
    kernels = [e for e in prof.events()
               if e.device_type == torch.autograd.DeviceType.CUDA and "aiter_lite" in e.name]
    if not kernels:
        pytest.skip("the profiler recorded no kernels of ours (CUPTI unavailable?)")
    assert {e.device_index for e in kernels} == {1}, [(e.name[:60], e.device_index) for e in kernels]
    assert torch.cuda.current_device() == 0


@pytest.mark.multigpu
@pytest.mark.skipif(not TWO_GPUS, reason="needs two GPUs")
def test_every_matmul_variant_on_both_gpus():
    """Every variant on cuda:1, then on cuda:0, called with current device 0: per-device launch setup
    (the dynamic shared-memory limit of the big-tile kernels, cached device attributes) must be done
    for each device."""
    gen = torch.Generator().manual_seed(8)
    for dev in ("cuda:1", "cuda:0"):
        for mode, variants in (("fp32", ("naive", "tiled")), ("tf32", ("tensor_core",)),
                               ("fp16", ("naive", "tiled", "tensor_core", "auto")),
                               ("bf16", ("naive", "tiled", "tensor_core", "auto"))):
            for variant in variants:
                for m, n, k in ((257, 383, 1000), (512, 768, 256)):
                    a = torch.randn(m, k, generator=gen).to(dev, MODE_DTYPES[mode])
                    b = torch.randn(k, n, generator=gen).to(dev, MODE_DTYPES[mode])
                    out = aiter_lite.matmul(a, b, allow_tf32=mode == "tf32", variant=variant)
                    assert out.device == torch.device(dev)
                    err = matmul_error(out.cpu(), a.cpu(), b.cpu())
                    assert err <= MM_TOL[mode], f"{dev} {mode} {variant} {m}x{n}x{k}: {err:.3e}"


@pytest.mark.multigpu
@pytest.mark.skipif(not TWO_GPUS, reason="needs two GPUs")
def test_one_thread_per_gpu_at_once():
    errors = _run_threads([(f"cuda:{i}", op) for i in (0, 1) for op in OPS], iters=8)
    assert not errors, errors


# ---------------------------------------------------------------------------------------------
# Threads


def _run_threads(jobs, iters: int) -> list[str]:
    """One thread per (device, op), each with its own stream, `iters` checked calls each."""
    errors: list[str] = []
    cases = [OpCase(op, device, seed=100 + n) for n, (device, op) in enumerate(jobs)]
    torch.cuda.synchronize()
    barrier = threading.Barrier(len(jobs))

    def work(n, device, op):
        try:
            dev = torch.device(device)
            torch.cuda.set_device(dev)
            s = torch.cuda.Stream(device=dev)
            case = cases[n]
            barrier.wait(timeout=120)
            with torch.cuda.stream(s):
                for i in range(iters):
                    fresh = case.fresh()
                    case.load(fresh)
                    outs = case.run()
                    s.synchronize()
                    case.check(fresh, outs, f"thread {n} iteration {i}")
        except Exception as e:  # reported by the test
            errors.append(f"{device} {op}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=work, args=(n, d, op)) for n, (d, op) in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    return errors


def test_threads_with_their_own_streams():
    errors = _run_threads([("cuda:0", op) for op in OPS for _ in range(2)], iters=6)
    assert not errors, errors


# ---------------------------------------------------------------------------------------------
# Index tensors that are views


@pytest.mark.parametrize("view", ["strided", "expanded"])
def test_update_index_tensors_that_are_views(view):
    """The kernels read cache_seqlens / conv_state_indices with unit stride; views must be copied."""
    dev = torch.device("cuda")
    gen = torch.Generator().manual_seed(9)
    batch, dim, width, pool = 4, 64, 4, 6
    x = torch.randn(batch, dim, generator=gen).to(dev, bf16)
    state = torch.randn(pool, dim, width + 1, generator=gen).to(dev, bf16)
    weight = torch.randn(dim, width, generator=gen).to(dev, bf16)
    if view == "strided":
        indices = torch.tensor([5, 0, 3, 0, -1, 0, 2, 0], dtype=torch.int32, device=dev)[::2]
        seqlens = torch.tensor([7, 0, 1, 0, 2, 0, 9, 0], dtype=torch.int32, device=dev)[::2]
    else:
        indices = torch.tensor([5, 3, -1, 2], dtype=torch.int32, device=dev)
        seqlens = torch.tensor([3], dtype=torch.int32, device=dev).expand(batch)
    ref_state = state.cpu()
    ref = causal_conv1d_update_ref(x.cpu(), ref_state, weight.cpu(), None, "silu", seqlens.cpu(), indices.cpu())
    out = aiter_lite.causal_conv1d_update(x, state, weight, None, "silu", seqlens, indices)
    torch.cuda.synchronize()
    assert_close(out.cpu(), ref, bf16, view)
    assert torch.equal(state.cpu(), ref_state)
