"""How many host steps does a context-parallel conv call take beyond the plain op? CPU, gloo, 2 ranks.

    python3 bench/lab/cp_host_steps.py      # on any machine: no GPU needed

Per rank and batch layout (fixed-length rows, packed sequences, zigzag), the aten ops torch.profiler sees in
one forward + backward with cp_context= against the plain op on the same local shape. Each aten op is a host
dispatch, and on a GPU at most one device operation; the GPU counts are bench/bench_cp_conv.py's.
"""
from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

CASES = (("fixed-length rows", dict(local_len=64), 2), ("packed", dict(cu_seqlens=[0, 10, 70, 128]), 1),
         ("zigzag rows", dict(local_len=64, layout="zigzag"), 2))


def aten_ops(fn) -> int:
    from torch.profiler import ProfilerActivity, profile

    fn()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return sum(1 for e in prof.events() if e.name.startswith("aten::"))


def rank_main(rank: int, world: int, port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    import aiter_lite
    from aiter_lite.distributed import build_cp_context

    lines = []
    for name, kw, batch in CASES:
        ctx = build_cp_context(4, **kw)
        x = torch.randn(batch, 16, 64, requires_grad=True)
        w, b = torch.randn(16, 4, requires_grad=True), torch.randn(16, requires_grad=True)
        dout = torch.randn(batch, 16, 64)

        def fwd_bwd(**extra):
            return lambda: torch.autograd.grad(aiter_lite.causal_conv1d(x, w, b, "silu", **extra), (x, w, b), dout)
        lines.append(f"| {rank} | {name} | {aten_ops(fwd_bwd())} | {aten_ops(fwd_bwd(cp_context=ctx))} |")
    dist.barrier()
    for r in range(world):  # in rank order
        if r == rank:
            print("\n".join(lines), flush=True)
        dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    print("aten ops per forward + backward, width 4, D=16, 64 tokens per rank (bf16 not needed: counts only)")
    print("| rank | layout | plain op | CP |\n| --- | --- | --- | --- |", flush=True)
    mp.spawn(rank_main, args=(2, port), nprocs=2)


if __name__ == "__main__":
    main()
