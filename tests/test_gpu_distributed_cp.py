"""Context-parallel causal conv1d over NCCL with the real op: world size 1 on one GPU (equal to the
plain op, and the general path within tolerance), and (marker multigpu) two GPUs against the float64
reference over the unsplit input. Each runs in fresh spawned processes (one per GPU)."""
from __future__ import annotations

import multiprocessing
import queue
import sys
import time
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cp_workers  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def run_nccl(world: int, job: str, arg=None, timeout: float = 240.0) -> None:
    ctx = multiprocessing.get_context("spawn")  # CUDA: never fork a process that may have touched it
    results = ctx.Queue()
    port = cp_workers.free_port()
    procs = [ctx.Process(target=cp_workers.worker, args=(r, world, port, job, arg, results, "nccl"), daemon=True)
             for r in range(world)]
    for p in procs:
        p.start()
    out, deadline = {}, time.monotonic() + timeout
    try:
        while len(out) < world:
            try:
                rank, err, _ = results.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"ranks {sorted(set(range(world)) - set(out))} did not finish {job!r} in {timeout} s")
            out[rank] = err
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
                p.join()
    failed = {r: e for r, e in out.items() if e is not None}
    assert not failed, "\n".join(f"rank {r}: {e}" for r, e in sorted(failed.items()))


def test_world_size_one_over_nccl_is_the_plain_op():
    run_nccl(1, "gpu_world_one")


@pytest.mark.multigpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_two_gpus_match_unsplit_reference():
    run_nccl(2, "random", 24)
