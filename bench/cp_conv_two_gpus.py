"""Context-parallel causal conv1d on two (or more) GPUs: fwd+bwd per rank against the plain op on the
same local shape, one P2P round trip of a halo, and fla's CP conv (if importable) in the same run.

    torchrun --nproc-per-node=2 bench/cp_conv_two_gpus.py [--dtype bfloat16] [--width 4]

NOT RUN YET (no two-GPU machine was lent when it was written): treat its first run as its test.
Cases (issue 25): fixed-length B=8, D=4096, 4096 tokens per rank; packed: 64 sequences of random
lengths, 32768 tokens per rank. fla takes only packed input ([1, T, D], weight in x's dtype): for the
fixed-length case it runs the same tokens as 8 packed sequences. Times: median over reps of CUDA
events around one fwd+bwd, ranks aligned by a barrier before each rep; rank 0 prints the table.
"""
from __future__ import annotations

import argparse
import os
import statistics

import torch
import torch.distributed as dist

import aiter_lite
from aiter_lite.distributed import build_cp_context


def median_us(fn, reps: int = 30) -> float:
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


def fwd_bwd(x, w, b, dout, **kw):
    def run():
        out = aiter_lite.causal_conv1d(x, w, b, "silu", **kw)
        torch.autograd.grad(out, (x, w, b), dout)
    return run


def round_trip(halo):
    rank, world = dist.get_rank(), dist.get_world_size()
    back = torch.empty_like(halo)

    def run():
        ops = [dist.P2POp(dist.isend, halo, (rank + 1) % world), dist.P2POp(dist.irecv, back, (rank - 1) % world)]
        for work in dist.batch_isend_irecv(ops):
            work.wait()
        ops = [dist.P2POp(dist.isend, back, (rank - 1) % world), dist.P2POp(dist.irecv, halo, (rank + 1) % world)]
        for work in dist.batch_isend_irecv(ops):
            work.wait()
    return run


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


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--width", type=int, default=4)
    args = p.parse_args()
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))  # before the group: NCCL binds the current device
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    dtype, width, dim = getattr(torch, args.dtype), args.width, 4096
    gen = torch.Generator().manual_seed(0)  # the same cu_seqlens on every rank
    rows = []
    for name, batch, local in (("B=8 fixed-length", 8, 4096), ("64 packed sequences", 1, 32768)):
        total = local * world
        if batch == 1:
            cuts = torch.randperm(total - 1, generator=gen)[:63].add(1).sort().values.tolist()
            cu = [0] + cuts + [total]
            ctx = build_cp_context(width, cu_seqlens=cu)
        else:
            cu = [i * total for i in range(batch + 1)]
            ctx = build_cp_context(width, local_len=local)
        x = torch.randn(batch, dim, local, device="cuda", dtype=dtype, requires_grad=True)
        w = torch.randn(dim, width, device="cuda", requires_grad=True)
        b = torch.randn(dim, device="cuda", requires_grad=True)
        dout = torch.randn_like(x)
        plain = median_us(fwd_bwd(x, w, b, dout))
        cp = median_us(fwd_bwd(x, w, b, dout, cp_context=ctx))
        trip = median_us(round_trip(torch.randn(batch, dim, width - 1, device="cuda", dtype=dtype)))
        x_btd = torch.randn(1, batch * local, dim, device="cuda", dtype=dtype, requires_grad=True)
        try:  # a peer's failure must not cost our figures
            fla = fla_fwd_bwd(x_btd, w, b, torch.tensor(cu, device="cuda", dtype=torch.int32), width)
            fla_us = median_us(fla) if fla is not None else float("nan")
        except Exception as e:  # noqa: BLE001
            print(f"rank {rank}: fla CP failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
            fla_us = float("nan")
        rows.append((name, plain, cp, trip, fla_us))
    if rank == 0:
        print(f"\n{world}x {torch.cuda.get_device_name()} torch {torch.__version__} {args.dtype} D={dim} width {width} "
              "SiLU+bias; fwd+bwd per rank, median us")
        print("| case | plain | CP | P2P round trip | CP / (plain + trip) | fla CP | fla / CP |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for name, plain, cp, trip, fla_us in rows:
            print(f"| {name} | {plain:.1f} | {cp:.1f} | {trip:.1f} | {cp / (plain + trip):.3f} | {fla_us:.1f} | "
                  f"{fla_us / cp:.2f} |")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
