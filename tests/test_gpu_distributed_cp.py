"""Context-parallel causal conv1d over NCCL with the real op: world size 1 on one GPU (equal to the
plain op, and the general path within tolerance; no host sync; CUDA-graph replay equal to eager), and (marker multigpu) two GPUs against the float64
reference over the unsplit input, and with the exchange between them: no host sync, CUDA-graph replay equal to eager. Each runs in fresh spawned processes (one per GPU)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cp_workers  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def run_nccl(world: int, job: str, arg=None) -> None:
    cp_workers.assert_all_passed(cp_workers.run_ranks(world, job, arg, timeout=240, backend="nccl"))


def test_world_size_one_over_nccl_is_the_plain_op():
    run_nccl(1, "gpu_world_one")


@pytest.mark.multigpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_two_gpus_match_unsplit_reference():
    run_nccl(2, "random", 24)


@pytest.mark.multigpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_two_gpus_no_host_sync_and_graph_replay():
    run_nccl(2, "gpu_graphs")
