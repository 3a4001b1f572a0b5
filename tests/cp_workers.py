"""Helpers of the CP tests (tests/test_distributed_cp.py, tests/test_gpu_distributed_cp.py): the float64
reference over the unsplit input (a pure-torch conv with the op's contract), and the per-rank workers
run in local processes (gloo on the CPU, NCCL on GPUs), each rank running the real op."""
from __future__ import annotations

import multiprocessing
import os
import queue
import random
import socket
import time
import traceback
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.fx.experimental.symbolic_shapes  # noqa: F401  (backward() imports it: preloaded once, see the tests)
import torch.nn.functional as F

import aiter_lite
import aiter_lite.distributed  # noqa: F401


def standin_conv(x, weight, bias=None, activation=None, *, initial_states=None, seq_idx=None):
    """The reference: causal_conv1d with the contract of csrc/include/causal_conv1d_params.h, differentiable through
    torch: initial_states [B, D, W-1] is the window before t=0 and continues the row's first segment only;
    a window never reads across a change of seq_idx. Accumulates in fp32 (fp64 for fp64 input)."""
    batch, dim, length = x.shape
    width = weight.shape[1]
    acc = torch.float64 if x.dtype == torch.float64 else torch.float32
    if initial_states is None:
        initial_states = x.new_zeros(batch, dim, width - 1)
    windows = torch.cat([initial_states.to(x.dtype), x], -1).to(acc).unfold(-1, width, 1)  # [B, D, L, W]
    if seq_idx is not None:
        ids = seq_idx.long()
        before = ids[:, :1].expand(batch, width - 1)  # positions < 0 belong to the first segment
        mask = torch.cat([before, ids], -1).unfold(-1, width, 1) == ids.unsqueeze(-1)  # [B, L, W]
        windows = windows * mask.unsqueeze(1)
    out = (windows * weight.to(acc)[None, :, None, :]).sum(-1)
    if bias is not None:
        out = out + bias.to(acc)[None, :, None]
    if activation in ("silu", "swish"):
        out = F.silu(out)
    return out.to(x.dtype)


def global_seq_idx(cu_seqlens, total):
    cu = torch.tensor(cu_seqlens)
    return (torch.searchsorted(cu, torch.arange(total), right=True) - 1).to(torch.int32).unsqueeze(0)


def local_slices(layout, lens, rank):
    """[(global_start, length)] of rank's parts, in local order."""
    if layout == "contiguous":
        return [(sum(lens[:rank]), lens[rank])]
    world, half = len(lens), lens[0] // 2
    return [(rank * half, half), ((2 * world - 1 - rank) * half, half)]


def take(t, slices):
    return torch.cat([t[..., a:a + n] for a, n in slices], -1)


def random_case(rng: random.Random, world: int, index: int) -> dict:
    """One configuration, the same on every rank (same seed)."""
    layout = rng.choice(["contiguous", "zigzag"])
    packed = rng.random() < 0.5
    width = rng.choice([1, 2, 3, 4, 4, 5, 7])
    dim = rng.choice([3, 8])
    batch = 1 if packed else rng.choice([1, 2, 3])
    if layout == "zigzag":
        half = rng.choice([1, 2, 3, 5])
        lens = [2 * half] * world
    else:  # unequal, with 1-token chunks and chunks shorter than the halo
        lens = [rng.choice([1, 1, 2, width - 1, width + 3, 9]) for _ in range(world)]
        lens = [max(n, 1) for n in lens]
    total = sum(lens)
    cu = None
    if packed:
        cuts = sorted(rng.sample(range(1, total), k=min(total - 1, rng.choice([0, 1, 2, 4]))))
        if rng.random() < 0.3 and total > 2:
            cuts.append(cuts[-1] if cuts else 1)  # an empty sequence
            cuts.sort()
        cu = [0] + cuts + [total]
        if rng.random() < 0.3 and layout == "contiguous" and total % world == 0 and len(set(lens)) == 1:
            lens = None  # the equal split by default
    return dict(index=index, layout=layout, packed=packed, width=width, dim=dim, batch=batch, lens=lens,
                cu=cu, total=total, channel_last=rng.random() < 0.5, bias=rng.random() < 0.7,
                activation=rng.choice([None, "silu"]), dtype=torch.float32)


def run_case(case: dict, rank: int, world: int, group=None) -> None:
    from aiter_lite.distributed import build_cp_context, causal_conv1d_cp

    gen = torch.Generator().manual_seed(1000 + case["index"])
    total, dim, batch, width = case["total"], case["dim"], case["batch"], case["width"]
    x = torch.randn(batch, dim, total, generator=gen, dtype=torch.float64)
    w = torch.randn(dim, width, generator=gen, dtype=torch.float64) * 0.5
    b = torch.randn(dim, generator=gen, dtype=torch.float64) if case["bias"] else None
    dout = torch.randn(batch, dim, total, generator=gen, dtype=torch.float64)
    seq_idx = None if case["cu"] is None else global_seq_idx(case["cu"], total)

    xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
    br = None if b is None else b.clone().requires_grad_()
    ref = standin_conv(xr, wr, br, case["activation"], seq_idx=seq_idx)
    ref.backward(dout)

    lens = case["lens"] if case["lens"] is not None else [total // world] * world
    slices = local_slices(case["layout"], lens, rank)
    dtype = case["dtype"]
    x_local = take(x, slices).to(DEVICE, dtype)
    if case["channel_last"]:
        x_local = x_local.transpose(1, 2).contiguous().transpose(1, 2)
    x_local.requires_grad_()
    wl = w.to(DEVICE, torch.float32).requires_grad_()
    bl = None if b is None else b.to(DEVICE, torch.float32).requires_grad_()
    ctx = build_cp_context(width, group, cu_seqlens=case["cu"], local_len=None if case["lens"] is None
                           else lens[rank], layout=case["layout"])
    out = causal_conv1d_cp(x_local, wl, bl, case["activation"], cp_context=ctx)
    out.backward(take(dout, slices).to(DEVICE, dtype))
    dw = wl.grad.clone()
    dist.all_reduce(dw, group=group)
    tol = {torch.float32: 1e-5, torch.float16: 4e-3}.get(dtype, 2e-2)
    where = f"case {case} rank {rank}"
    check_close("out", out, take(ref.detach(), slices), tol, where)
    check_close("dx", x_local.grad, take(xr.grad, slices), tol, where)
    check_close("dweight", dw, wr.grad, tol, where)
    if bl is not None:
        db = bl.grad.clone()
        dist.all_reduce(db, group=group)
        check_close("dbias", db, br.grad, tol, where)


def check_close(name, got, want, tol, where):
    """|got - want| <= tol * (1 + |want|) everywhere, NaN fails (torch.testing imports torch.distributed.tensor:
    seconds per spawned process)."""
    got = got.double().cpu()
    if got.shape != want.shape:
        raise AssertionError(f"{name}: shape {tuple(got.shape)} != {tuple(want.shape)} ({where})")
    err = ((got - want).abs() / (1 + want.abs())).nan_to_num(float("inf"))
    if err.numel() and err.max() > tol:
        i = int(err.flatten().argmax())
        raise AssertionError(f"{name}: relative error {float(err.max()):.3g} > {tol} at flat index {i} "
                             f"(got {float(got.flatten()[i])}, want {float(want.flatten()[i])}) ({where})")


# Imported once by the forkserver, so each CPU test starts its ranks in well under a second (a spawned
# process re-imports torch: seconds each on CI's two cores).
FORKSERVER_PRELOAD = ["torch", "torch.distributed", "torch.fx.experimental.symbolic_shapes"]


def run_ranks(world: int, job: str, arg=None, timeout: float = 60.0, backend: str = "gloo") -> dict:
    """Runs JOBS[job] on `world` local ranks; returns {rank: (None or the error text, what the job returned)}.
    gloo ranks come from a forkserver; NCCL ranks are spawned (never fork a process that may have used CUDA).
    Raises TimeoutError naming the ranks that had not reported by the deadline (a hang); every rank is
    stopped on the way out."""
    if backend == "gloo":
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(FORKSERVER_PRELOAD)
    else:
        ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=worker, args=(r, world, port, job, arg, results, backend), daemon=True)
             for r in range(world)]
    for p in procs:
        p.start()
    out, deadline = {}, time.monotonic() + timeout
    try:
        while len(out) < world:
            try:
                rank, err, value = results.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                missing = sorted(set(range(world)) - set(out))
                raise TimeoutError(f"ranks {missing} did not finish {job!r} within {timeout} s (a hang); "
                                   f"the others reported {out}") from None
            out[rank] = (err, value)
    finally:
        for p in procs:
            p.join(5)
            if p.is_alive():
                p.kill()
                p.join()
    return out


def assert_all_passed(results: dict) -> None:
    failed = {r: e for r, (e, _) in results.items() if e is not None}
    assert not failed, "\n".join(f"rank {r}: {e}" for r, e in sorted(failed.items()))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


DEVICE = torch.device("cpu")  # where the ranks' tensors live: cuda:<rank> under NCCL


def init_group(rank: int, world: int, port: int, backend: str = "gloo", timeout_s: float = 30) -> None:
    """gloo: CPU tensors; nccl: one GPU per rank."""
    global DEVICE
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)
    if backend == "nccl":
        torch.cuda.set_device(rank)
        DEVICE = torch.device("cuda", rank)
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=timeout_s))


def worker(rank: int, world: int, port: int, job: str, arg, results, backend: str = "gloo") -> None:
    """Entry of each spawned process: runs JOBS[job](rank, world, arg) and reports
    (rank, error text or None, what the job returned)."""
    try:
        init_group(rank, world, port, backend)
        value = JOBS[job](rank, world, arg)
        results.put((rank, None, value))
    except BaseException as e:  # noqa: BLE001 - reported to the parent with its traceback
        results.put((rank, f"{type(e).__name__}: {e}\n{traceback.format_exc()}", None))
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def job_random_cases(rank, world, n_cases):
    rng = random.Random(world * 7919)
    for i in range(n_cases):
        run_case(random_case(rng, world, i), rank, world)


def job_fixed_cases(rank, world, cases):
    for case in cases:
        run_case(case, rank, world)


def mismatch_args(kind: str, rank: int, world: int) -> dict:
    """build_cp_context arguments that disagree across ranks (or are wrong on one rank only)."""
    fixed = dict(width=4, local_len=6)
    if kind == "width":
        return dict(fixed, width=4 if rank else 3)
    if kind == "cu_seqlens":
        return dict(width=4, cu_seqlens=torch.tensor([0, 5 + rank, 6 * world]))
    if kind == "decreasing":
        return dict(width=4, cu_seqlens=[0, 7, 5, 6 * world] if rank == world - 1 else [0, 5, 7, 6 * world])
    if kind == "zigzag_total":
        return dict(width=4, cu_seqlens=[0, 3, 2 * world * 3 + 1], layout="zigzag")
    if kind == "local_len_type":
        return dict(fixed, local_len="6" if rank == 0 else 6)
    if kind == "missing_local_len":
        return dict(fixed, local_len=None if rank == 1 else 6)
    if kind == "layout":
        return dict(fixed, layout="zigzag" if rank == 0 else "contiguous")
    raise KeyError(kind)


def job_mismatch(rank, world, kinds):
    """Each kind must raise on this rank; returns {kind: 'Type: message'} for the parent to compare."""
    from aiter_lite.distributed import build_cp_context

    seen = {}
    for kind in kinds:
        try:
            build_cp_context(**mismatch_args(kind, rank, world))
        except (ValueError, TypeError) as e:
            seen[kind] = f"{type(e).__name__}: {e}"
        else:
            raise AssertionError(f"{kind}: no error on rank {rank}")
    build_cp_context(4, local_len=3)  # the group still works afterwards
    return seen


def expect_error(exc_type, text, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc_type as e:
        if text not in str(e):
            raise AssertionError(f"expected {text!r} in {type(e).__name__}: {e}") from e
        return
    raise AssertionError(f"expected {exc_type.__name__} with {text!r}, nothing raised")


def job_bad_calls(rank, world, _):
    from aiter_lite.distributed import build_cp_context, causal_conv1d_cp

    ctx = build_cp_context(4, local_len=6)
    x, w = torch.randn(2, 3, 6), torch.randn(3, 4)
    expect_error(ValueError, "built for width=4", causal_conv1d_cp, x, torch.randn(3, 3), cp_context=ctx)
    expect_error(ValueError, "x has 5 tokens", causal_conv1d_cp, x[..., :5], w, cp_context=ctx)
    expect_error(TypeError, "cp_context must be a CPContext", causal_conv1d_cp, x, w, cp_context="ctx")
    seq_idx = torch.zeros(2, 6, dtype=torch.int32)
    expect_error(ValueError, "seq_idx cannot be combined with cp_context", causal_conv1d_cp, x, w, cp_context=ctx,
                 seq_idx=seq_idx)
    expect_error(ValueError, "initial_states cannot be combined", causal_conv1d_cp, x, w, cp_context=ctx,
                 initial_states=torch.zeros(2, 3, 3))
    expect_error(ValueError, "return_final_states cannot be combined", causal_conv1d_cp, x, w, cp_context=ctx,
                 return_final_states=True)
    expect_error(ValueError, "seq_idx cannot be combined with cp_context", aiter_lite.causal_conv1d_fn, x, w,
                 seq_idx=seq_idx, cp_context=ctx)  # the public entries hand the arguments over
    packed = build_cp_context(4, cu_seqlens=[0, 5, 12])
    expect_error(ValueError, "[1, dim, local_len]", causal_conv1d_cp, x, w, cp_context=packed)
    solo = dist.new_group([0])
    if rank == 0:
        build_cp_context(4, solo, local_len=6)
    else:
        expect_error(ValueError, "not a member of the group", build_cp_context, 4, solo, local_len=6)
    # after all that, a correct call still works on every rank
    causal_conv1d_cp(x, w, cp_context=ctx)


def job_world_one(rank, world, _):
    """World size 1: the plain op (bitwise), and the general path (no short cut) still exact."""
    from aiter_lite.distributed import build_cp_context, causal_conv1d_cp, local_op

    gen = torch.Generator().manual_seed(7)
    x = torch.randn(2, 5, 9, generator=gen)
    w, b = torch.randn(5, 4, generator=gen), torch.randn(5, generator=gen)
    for ctx, xx, seq_idx in ((build_cp_context(4, local_len=9), x, None),
                             (build_cp_context(4, local_len=8, layout="zigzag"), x[..., :8], None),
                             (build_cp_context(4, cu_seqlens=[0, 2, 9]), x[:1], global_seq_idx([0, 2, 9], 9))):
        want = local_op.forward(xx, w, b, "silu", seq_idx=seq_idx)  # the op every rank runs
        assert torch.equal(causal_conv1d_cp(xx, w, b, "silu", cp_context=ctx), want)
        assert torch.equal(aiter_lite.causal_conv1d(xx, w, b, "silu", cp_context=ctx), want)  # the public entry
        ctx.passthrough = False  # the general path on one rank (zigzag: halo from its own front part)
        got = causal_conv1d_cp(xx, w, b, "silu", cp_context=ctx)
        if not torch.allclose(got, want, rtol=1e-6, atol=1e-6):
            raise AssertionError(f"{ctx}: general path differs by {(got - want).abs().max()}")


def job_gpu_world_one(rank, world, _):
    """NCCL, one GPU, the real op: with a context of world size 1 the result is the plain op's, bit for bit
    (forward and gradients); the general path (no short cut: zigzag copies its own halo) agrees within
    the dtype's tolerance; neither makes a synchronising CUDA call, and both replay from a CUDA graph."""
    from aiter_lite.distributed import build_cp_context

    gen = torch.Generator(device=DEVICE).manual_seed(11)
    length, cu = 300, [0, 37, 37, 200, 300]
    for dtype in (torch.float32, torch.bfloat16):
        tol = 1e-5 if dtype == torch.float32 else 2e-2
        x = torch.randn(2, 64, length, generator=gen, device=DEVICE).to(dtype)
        w = torch.randn(64, 4, generator=gen, device=DEVICE)
        b = torch.randn(64, generator=gen, device=DEVICE)
        dout = torch.randn(2, 64, length, generator=gen, device=DEVICE).to(dtype)
        packed_ids = global_seq_idx(cu, length).to(DEVICE)
        for name, ctx, xx, seq_idx in (
                ("fixed", build_cp_context(4, local_len=length), x, None),
                ("zigzag", build_cp_context(4, local_len=length, layout="zigzag"), x, None),
                ("packed", build_cp_context(4, cu_seqlens=torch.tensor(cu, device=DEVICE)), x[:1], packed_ids)):
            want, want_grads = _plain_fwd_bwd(xx, w, b, dout[:xx.shape[0]], seq_idx, None)
            got, got_grads = _plain_fwd_bwd(xx, w, b, dout[:xx.shape[0]], None, ctx)
            if not (torch.equal(got, want) and all(torch.equal(g, h) for g, h in zip(got_grads, want_grads))):
                raise AssertionError(f"{name} {dtype}: world size 1 differs from the plain op")
            ctx.passthrough = False
            got, got_grads = _plain_fwd_bwd(xx, w, b, dout[:xx.shape[0]], None, ctx)
            for what, g, h in zip(("out", "dx", "dweight", "dbias"), (got, *got_grads), (want, *want_grads)):
                check_close(what, g, h.double().cpu(), tol, f"{name} {dtype} general path")
            for passthrough in (True, False):  # both paths: no host sync, and the same from a CUDA graph
                ctx.passthrough = passthrough
                where = f"{name} {dtype} {'passthrough' if passthrough else 'general path'}"
                _no_host_sync(xx, w, b, dout[:xx.shape[0]], ctx, where)
                _graph_matches_eager(xx, w, b, dout[:xx.shape[0]], ctx, tol, where, gen)


def job_gpu_graphs(rank, world, _):
    """NCCL, one GPU a rank, the real op over a real exchange: fixed-length rows split unequally (the last rank
    shorter than the halo), zigzag and packed sequences; a CP forward + backward makes no synchronising CUDA call
    once warm, and replayed from a CUDA graph captured on every rank (the P2P exchange inside) it equals the eager
    call on fresh inputs. Weights are the same on every rank, x differs."""
    from aiter_lite.distributed import build_cp_context

    gen = torch.Generator(device=DEVICE).manual_seed(21 + rank)
    shared = torch.Generator(device=DEVICE).manual_seed(5)
    fixed_lens = [300] * (world - 1) + [2]
    cu = [0, 37, 37, 200, 450, 300 * world]
    cases = (("fixed", lambda: build_cp_context(4, local_len=fixed_lens[rank]), 2, fixed_lens[rank]),
             ("zigzag", lambda: build_cp_context(4, local_len=300, layout="zigzag"), 2, 300),
             ("packed", lambda: build_cp_context(4, cu_seqlens=torch.tensor(cu, device=DEVICE)), 1, 300))
    for dtype in (torch.float32, torch.bfloat16):
        tol = 1e-5 if dtype == torch.float32 else 2e-2
        w = torch.randn(64, 4, generator=shared, device=DEVICE)
        b = torch.randn(64, generator=shared, device=DEVICE)
        for name, make_ctx, batch, length in cases:
            ctx = make_ctx()
            x = torch.randn(batch, 64, length, generator=gen, device=DEVICE).to(dtype)
            dout = torch.randn(batch, 64, length, generator=gen, device=DEVICE).to(dtype)
            where = f"{name} {dtype} rank {rank} of {world}"
            _plain_fwd_bwd(x, w, b, dout, None, ctx)  # warm: the P2P communicators exist after the first exchange
            _no_host_sync(x, w, b, dout, ctx, where)
            _graph_matches_eager(x, w, b, dout, ctx, tol, where, gen)


def _no_host_sync(x, w, b, dout, ctx, where):
    """A CP forward + backward with every synchronising CUDA call raising."""
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        _plain_fwd_bwd(x, w, b, dout, None, ctx)
    except RuntimeError as e:
        raise AssertionError(f"{where}: a host sync in a CP call: {e}") from e
    finally:
        torch.cuda.set_sync_debug_mode(0)


def _graph_matches_eager(x, w, b, dout, ctx, tol, where, gen):
    """Captures a CP forward + backward in a CUDA graph, replays it on fresh inputs copied into the captured
    ones, and compares with the eager call on the same inputs."""
    x, w, b = (t.detach().clone().requires_grad_() for t in (x, w, b))
    dout = dout.clone()

    def step():
        out = aiter_lite.causal_conv1d(x, w, b, "silu", cp_context=ctx)
        return (out, *torch.autograd.grad(out, (x, w, b), dout))

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the capture stream, as torch.cuda.graph wants
        step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = step()
    with torch.no_grad():
        for t in (x, dout):
            t.copy_(torch.randn(t.shape, generator=gen, device=t.device).to(t.dtype))
    graph.replay()
    want = step()
    for what, g, h in zip(("out", "dx", "dweight", "dbias"), captured, want):
        check_close(what, g, h.detach().double().cpu(), tol, f"{where}: CUDA graph replay vs eager")


def _plain_fwd_bwd(x, w, b, dout, seq_idx, ctx):
    x, w, b = (t.detach().clone().requires_grad_() for t in (x, w, b))
    if ctx is None:
        out = aiter_lite.causal_conv1d(x, w, b, "silu", **({} if seq_idx is None else {"seq_idx": seq_idx}))
    else:
        out = aiter_lite.causal_conv1d(x, w, b, "silu", cp_context=ctx)
    out.backward(dout)
    return out.detach(), (x.grad, w.grad, b.grad)


JOBS = {"gpu_world_one": job_gpu_world_one, "gpu_graphs": job_gpu_graphs, "random": job_random_cases,
        "fixed": job_fixed_cases, "mismatch": job_mismatch, "bad_calls": job_bad_calls, "world_one": job_world_one}
