"""Context-parallel causal conv1d against the plain op (docs/distributed.md); bf16 x, fp32 weight and bias.

    python3 bench/bench_cp_conv.py [--shapes 8x4096x4096,1x64x64,p64x4096x32768]   # one GPU: NCCL, one rank
    torchrun --nproc-per-node=2 bench/bench_cp_conv.py [--timer eager|graph|both]   # two or more GPUs

One rank (BxDxL rows; pNxDxL: N packed sequences of random lengths in one row, given to the plain op as
seq_idx): fwd and fwd+bwd of the plain op, of cp_context= with the one-rank group (its short cut) and of the
general CP path on one rank (passthrough off: every step but the P2P); per variant the median eager wall time
per back-to-back call, the median CUDA-graph replay time (L2 flushed) and the device operations per call
(torch.profiler); each forward output against the plain op's. Two or more ranks: B=8 fixed-length rows of
4096 tokens per rank and 64 packed sequences of 32768 tokens per rank: fwd+bwd per rank, plain and CP, one
P2P halo round trip, the plain op given this rank's sequence ids (packed input), and fla's CP conv; medians of
CUDA events, ranks aligned by a barrier, eager and replayed from a CUDA graph.
"""
from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import aiter_lite  # noqa: E402
from aiter_lite.distributed import build_cp_context  # noqa: E402
from common import capture_graph, graph_time_us  # noqa: E402


def step(kw):
    """Forward + backward of the op with these keyword arguments."""
    def run(x, w, b, dout):
        torch.autograd.grad(aiter_lite.causal_conv1d(x, w, b, "silu", **kw), (x, w, b), dout)
    return run


def wall_us(fn, inputs, calls: int, rounds: int = 15) -> float:
    for i in range(3):
        fn(*inputs[i % len(inputs)])
    torch.cuda.synchronize()
    samples = []
    for _ in range(rounds):
        t = time.perf_counter()
        for i in range(calls):
            fn(*inputs[i % len(inputs)])
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - t) / calls * 1e6)
    return statistics.median(samples)


def device_ops(fn) -> int:
    """Kernels, copies and fills one call of fn puts on the GPU (torch.profiler's device events)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sum(1 for e in prof.events() if e.device_type == DeviceType.CUDA)


def events_us(fn, reps: int = 30) -> float:
    for _ in range(3):
        fn()
    samples = []
    for _ in range(reps):
        dist.barrier()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end) * 1e3)
    return statistics.median(samples)


def graph_events_us(fn, reps: int = 30) -> float:
    """events_us of fn replayed from a CUDA graph captured on every rank; NaN on every rank when a capture
    failed on any (a graph whose peer has none would wait in its P2P forever)."""
    try:
        graph = capture_graph(fn)
    except Exception as e:  # noqa: BLE001 - say why, and time the rest
        print(f"rank {dist.get_rank()}: CUDA graph capture failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
        graph = None
    ok = torch.tensor([graph is not None], dtype=torch.int32, device="cuda")
    dist.all_reduce(ok, op=dist.ReduceOp.MIN)
    return events_us(graph.replay, reps) if ok.item() else float("nan")


def packed_ids(count: int, length: int, gen) -> list:
    """cu_seqlens of `count` sequences of random lengths over `length` tokens."""
    return [0] + torch.randperm(length - 1, generator=gen)[:count - 1].add(1).sort().values.tolist() + [length]


def seq_ids(cu: list, start: int, stop: int) -> torch.Tensor:
    """int32 [1, stop - start]: the sequence (index into cu_seqlens) of each token start .. stop - 1."""
    positions = torch.arange(start, stop)
    return torch.searchsorted(torch.tensor(cu), positions, right=True).sub(1).to(torch.int32).unsqueeze(0)


def one_rank(args, dtype) -> None:
    rows, checks = [], []
    for shape in args.shapes.split(","):
        packed = shape.startswith("p")
        b, d, length = (int(v) for v in shape.lstrip("p").split("x"))
        length -= length % 2
        gen = torch.Generator(device="cuda").manual_seed(0)
        batch = 1 if packed else b
        inputs = [(torch.randn(batch, d, length, device="cuda", generator=gen).to(dtype).requires_grad_(),
                   torch.randn(d, args.width, device="cuda", generator=gen).requires_grad_(),
                   torch.randn(d, device="cuda", generator=gen).requires_grad_(),
                   torch.randn(batch, d, length, device="cuda", generator=gen).to(dtype)) for _ in range(3)]
        if packed:
            cu = packed_ids(b, length, torch.Generator().manual_seed(0))
            ctx = build_cp_context(args.width, cu_seqlens=cu)
            general = build_cp_context(args.width, cu_seqlens=cu)
            plain = {"seq_idx": seq_ids(cu, 0, length).cuda()}
        else:
            ctx = build_cp_context(args.width, local_len=length)
            general = build_cp_context(args.width, local_len=length, layout="zigzag")
            plain = {}
        general.passthrough = False
        variants = {"plain": plain, "cp world 1": {"cp_context": ctx}, "plain (again: the spread)": plain,
                    "cp world 1 (again)": {"cp_context": ctx},
                    f"cp general path ({general.layout})": {"cp_context": general}}

        def fwd(kw):
            def run(x, w, bias, dout):
                with torch.no_grad():
                    return aiter_lite.causal_conv1d(x, w, bias, "silu", **kw)
            return run

        reference = fwd(plain)(*inputs[0])
        for name, kw in variants.items():  # world size 1 must be the plain op, bit for bit
            got = fwd(kw)(*inputs[0])
            checks.append((shape, name, "equal" if torch.equal(got, reference) else
                           f"max |diff| {(got.float() - reference.float()).abs().max().item():.3g}"))
        for mode, make in (("fwd", fwd), ("fwd+bwd", step)):
            base = None
            for name, kw in variants.items():
                fn = make(kw)
                try:
                    eager = wall_us(fn, inputs, 20 if batch * d * length > 1 << 22 else 200)
                    graph = graph_time_us(functools.partial(fn, *inputs[0]))
                    ops = device_ops(functools.partial(fn, *inputs[0]))
                except Exception as e:  # noqa: BLE001 - say what failed, time the rest
                    rows.append((shape, mode, name, f"n/a ({type(e).__name__}: {str(e)[:80]})", "", "", "", ""))
                    continue
                base = (eager, graph) if base is None else base
                rows.append((shape, mode, name, f"{eager:.1f}", f"{eager / base[0]:.3f}", f"{graph:.1f}",
                             f"{graph / base[1]:.3f}", str(ops)))
    print("\nforward output against the plain op's:\n" + "\n".join("   " + " ".join(c) for c in checks))
    print(f"\n{torch.cuda.get_device_name()} torch {torch.__version__} {args.dtype} width {args.width} SiLU+bias; "
          "median us per call: eager (host+GPU) and CUDA graph (GPU only, L2 flushed); device ops per call")
    print("| shape | pass | variant | eager us | vs plain | graph us | vs plain | device ops |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    print("\n".join("| " + " | ".join(r) + " |" for r in rows))


def fla_fwd_bwd(x_btd, w, b, cu_seqlens, width):
    try:
        from fla.modules.causal_conv1d import causal_conv1d as fla_conv
        from fla.ops.cp import build_cp_context as fla_context
    except ImportError:
        return None
    ctx = fla_context(cu_seqlens, dist.group.WORLD, conv1d_kernel_size=width)
    w, b = w.to(x_btd.dtype).detach().requires_grad_(), b.to(x_btd.dtype).detach().requires_grad_()
    dout = torch.randn_like(x_btd)

    def run():
        out, _ = fla_conv(x_btd, w, b, activation="silu", cp_context=ctx)
        torch.autograd.grad(out, (x_btd, w, b), dout)
    return run


def profile_table(fn, path: Path, rows: int = 25) -> str:
    """The device time of one eager call of fn by kernel (torch.profiler), written to path; returned."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    dist.barrier()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    table = prof.key_averages().table(sort_by="device_time_total", row_limit=rows, max_name_column_width=70)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(table)
    return table


def round_trip(halo):
    rank, world = dist.get_rank(), dist.get_world_size()
    back = torch.empty_like(halo)

    def run():
        for send, recv, to in ((halo, back, 1), (back, halo, -1)):
            ops = [dist.P2POp(dist.isend, send, (rank + to) % world), dist.P2POp(dist.irecv, recv, (rank - to) % world)]
            for work in dist.batch_isend_irecv(ops):
                work.wait()
    return run


def many_ranks(args, dtype) -> None:
    world, dim, width = dist.get_world_size(), 4096, args.width
    gen = torch.Generator().manual_seed(0)  # the same cu_seqlens on every rank
    timers = {"eager": events_us, "graph": graph_events_us}
    timers = {k: v for k, v in timers.items() if args.timer in (k, "both")}
    rows = []
    for name, batch, local in (("B=8 fixed-length", 8, 4096), ("64 packed sequences", 1, 32768)):
        total = local * world
        if batch == 1:
            cu = packed_ids(64, total, gen)
            ctx = build_cp_context(width, cu_seqlens=cu)
        else:
            cu = [i * total for i in range(batch + 1)]
            ctx = build_cp_context(width, local_len=local)
        x = torch.randn(batch, dim, local, device="cuda", dtype=dtype, requires_grad=True)
        w = torch.randn(dim, width, device="cuda", requires_grad=True)
        b = torch.randn(dim, device="cuda", requires_grad=True)
        dout = torch.randn_like(x)
        x_btd = torch.randn(1, batch * local, dim, device="cuda", dtype=dtype, requires_grad=True)
        try:  # a peer's failure must not cost our figures
            fla = fla_fwd_bwd(x_btd, w, b, torch.tensor(cu, device="cuda", dtype=torch.int32), width)
        except Exception as e:  # noqa: BLE001
            print(f"rank {dist.get_rank()}: fla CP failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
            fla = None
        plain_seq = None  # packed: the plain op given this rank's tokens' sequence ids (what one GPU would run)
        if batch == 1:
            ids = seq_ids(cu, dist.get_rank() * local, (dist.get_rank() + 1) * local).cuda()
            plain_seq = functools.partial(step({"seq_idx": ids}), x, w, b, dout)
        fns = {"plain": functools.partial(step({}), x, w, b, dout), "plain seq": plain_seq,
               "cp": functools.partial(step({"cp_context": ctx}), x, w, b, dout),
               "trip": round_trip(torch.randn(batch, dim, width - 1, device="cuda", dtype=dtype)), "fla": fla}
        for timer, measure in timers.items():
            t = {}
            for key, fn in fns.items():
                try:
                    t[key] = measure(fn) if fn is not None else float("nan")
                except Exception as e:  # noqa: BLE001
                    print(f"rank {dist.get_rank()}: {key} {timer} failed: {type(e).__name__}: {str(e)[:300]}",
                          flush=True)
                    t[key] = float("nan")
            rows.append((name, timer, t["plain"], t["plain seq"], t["cp"], t["trip"], t["fla"]))
        if args.profile:
            tag = name.split()[0].replace("=", "")
            for key in ("plain", "plain seq", "cp", "fla"):
                if fns[key] is not None:
                    path = Path(args.profile) / f"{tag}_{key.replace(' ', '_')}_rank{dist.get_rank()}.txt"
                    table = profile_table(fns[key], path)
                    if dist.get_rank() == world - 1:
                        print(f"\nrank {world - 1}, {name}, {key}: device time by kernel\n{table}", flush=True)
    if dist.get_rank() == 0:
        print(f"\n{world}x {torch.cuda.get_device_name()} torch {torch.__version__} {args.dtype} D={dim} width {width} "
              "SiLU+bias; fwd+bwd per rank, median us (eager: host launches included; graph: replayed)")
        print("| case | timer | plain | plain with seq_idx | CP | P2P round trip | CP / (plain + trip) | "
              "CP / (plain with seq_idx + trip) | fla CP | fla / CP |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for name, timer, plain, plain_seq, cp, trip, fla_us in rows:
            print(f"| {name} | {timer} | {plain:.1f} | {plain_seq:.1f} | {cp:.1f} | {trip:.1f} | "
                  f"{cp / (plain + trip):.3f} | {cp / (plain_seq + trip):.3f} | {fla_us:.1f} | {fla_us / cp:.2f} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default="8x4096x4096,1x64x64,p64x4096x32768",
                   help="one rank: B x D x L per shape; pN x D x L: N packed sequences in one row of L tokens")
    p.add_argument("--timer", choices=("eager", "graph", "both"), default="both", help="two or more ranks")
    p.add_argument("--profile", metavar="DIR", help="two or more ranks: torch.profiler tables of one eager "
                   "fwd+bwd of each variant per rank into DIR (the last rank's printed)")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--width", type=int, default=4)
    args = p.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench_cp_conv: needs a CUDA GPU")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", os.environ["RANK"])))  # before the group: NCCL binds it
    dist.init_process_group("nccl")
    (one_rank if dist.get_world_size() == 1 else many_ranks)(args, getattr(torch, args.dtype))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
