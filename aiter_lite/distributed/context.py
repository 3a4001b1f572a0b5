"""build_cp_context: check the group's arguments together once, and precompute each rank's plan.

Everything the hot path needs from the host lives in the context (lengths, the halo plan, the
sequence ids of the local tokens), so a call never reads a device tensor back.
"""
from __future__ import annotations

from typing import Optional

import torch

from . import agreement
from .exchange import Routes
from .plan import RankPlan, make_plan, segments

__all__ = ["CPContext", "build_cp_context"]


class CPContext:
    """What one rank needs to run causal conv1d on its chunk of a sequence split over a process group.

    Built by build_cp_context on every rank of the group, once per batch layout; read-only afterwards.
    """

    __slots__ = ("group", "rank", "world_size", "width", "layout", "packed", "local_len", "local_lens",
                 "cu_seqlens", "plan", "routes", "heads", "lead", "backend", "cpu_exchange", "cuda_exchange", "_ids",
                 "_plain_ids", "_passthrough", "_device_cache")

    def __init__(self, *, group, rank: int, world_size: int, width: int, layout: str, local_lens: list,
                 cu_seqlens: Optional[list], backend: str):
        self.group, self.rank, self.world_size = group, rank, world_size
        self.width, self.layout = width, layout
        self.packed = cu_seqlens is not None
        self.local_lens = tuple(local_lens)
        self.local_len = local_lens[rank]
        self.cu_seqlens = None if cu_seqlens is None else tuple(cu_seqlens)
        self.plan: RankPlan = make_plan(rank, width, layout, local_lens, cu_seqlens)
        self.backend = backend
        # Which tensors the group's backend can exchange ("gloo", "nccl", or "cpu:gloo,cuda:nccl").
        self.cpu_exchange = "gloo" in backend or "mpi" in backend
        self.cuda_exchange = "nccl" in backend or "mpi" in backend or "rccl" in backend
        # Packed input: one id per (part, sequence), so no window reads from one part into the next. Fixed-length
        # rows need none: the outputs of a part that read the part before it are its head, recomputed with its
        # halo (and corrected in the backward, function.py); the fast kernels without seq_idx run meanwhile.
        self._ids = _sequence_ids(rank, layout, local_lens, cu_seqlens, separate_parts=cu_seqlens is not None)
        self._plain_ids = _sequence_ids(rank, layout, local_lens, cu_seqlens, separate_parts=False)
        self._device_cache: dict = {}
        # One rank holds the whole sequence in order (zigzag too: parts 0 and 1): the plain op on it.
        self.passthrough = world_size == 1

    @property
    def passthrough(self) -> bool:
        """True: the plain op on the whole local buffer, no exchange (world size 1). Settable (the tests
        turn it off to run the general path on one rank)."""
        return self._passthrough

    @passthrough.setter
    def passthrough(self, value: bool) -> None:
        self._passthrough = bool(value)
        plan = self.plan
        # routes: the exchange per call; heads: (local start, head_len) of each part that needs a halo (its
        # first outputs read it); lead: the first halo part starts the buffer (its halo is the local conv's
        # initial state)
        self.routes = Routes(RankPlan(plan.rank, plan.width, plan.parts, (), 0, (), (), ()) if value else plan)
        self.heads = () if value else tuple((plan.parts[i].local_start, plan.head_len) for i in plan.halo_parts)
        self.lead = not value and plan.halo_parts[:1] == (0,)

    def __repr__(self) -> str:
        mode = f"packed, {len(self.cu_seqlens) - 1} sequences" if self.packed else "fixed-length rows"
        return (f"CPContext(rank {self.rank} of {self.world_size}, width={self.width}, layout={self.layout!r}, "
                f"{mode}, local_len={self.local_len}, recvs from {[m.peer for m in self.plan.recvs]}, "
                f"sends to {[m.peer for m in self.plan.sends]})")

    def seq_idx(self, device: torch.device, batch: int) -> Optional[torch.Tensor]:
        """int32 [batch, local_len] on device: the ids the local conv gets as seq_idx (None: not needed):
        one per (part, sequence), or with passthrough those of the unsplit sequence.
        Made on the first call per (device, batch) and kept: later calls read nothing from the host."""
        key = (device, batch, self._passthrough)
        cached = self._device_cache.get(key)
        if cached is None:
            ids = self._plain_ids if self._passthrough else self._ids
            cached = (None,) if ids is None else (_to_device(ids, device).expand(batch, -1).contiguous(),)
            self._device_cache[key] = cached
        return cached[0]

    def head_seq_idx(self, device: torch.device, batch: int) -> tuple:
        """Per halo part, the seq_idx of its first head_len tokens ([batch, head_len] views of seq_idx),
        or None where one id would do (fixed-length rows: a head lies in one part)."""
        key = (device, batch, self._passthrough, "heads")
        cached = self._device_cache.get(key)
        if cached is None:
            ids = self.seq_idx(device, batch) if self.packed else None
            cached = tuple(None if ids is None else ids[:, s:s + n] for s, n in self.heads)
            self._device_cache[key] = cached
        return cached


def _to_device(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A host-synchronising copy is fine once per context, but on CUDA an asynchronous one from pinned
    memory keeps even the first call free of host syncs (torch.cuda.set_sync_debug_mode finds none)."""
    if device.type == "cuda":
        return t.pin_memory().to(device, non_blocking=True)  # the pinned source lives until the copy ran
    return t.to(device)


def _sequence_ids(rank: int, layout: str, local_lens: list, cu_seqlens: Optional[list],
                  separate_parts: bool) -> Optional[torch.Tensor]:
    """int32 [1, local_len] (CPU): per local token, an id that changes exactly where a causal window must
    not reach back: at a new sequence (packed) and, with separate_parts, at a new part (whose halo
    comes through the exchange instead). None when one id would do."""
    mine = sorted((s for s in segments(layout, local_lens) if s[2] == rank), key=lambda s: s[3])
    if cu_seqlens is None and (len(mine) == 1 or not separate_parts):
        return None
    cu = None if cu_seqlens is None else torch.tensor(cu_seqlens, dtype=torch.int64)
    stride = 1 if cu is None else len(cu_seqlens)
    ids = []
    for index, (start, length, _, _) in enumerate(mine):
        offset = index * stride if separate_parts else 0
        if cu is None:
            ids.append(torch.full((length,), offset, dtype=torch.int64))
        else:
            positions = torch.arange(start, start + length, dtype=torch.int64)
            ids.append(torch.searchsorted(cu, positions, right=True) - 1 + offset)
    return torch.cat(ids).to(torch.int32).unsqueeze(0)


def _collective_device(backend: str) -> torch.device:
    if "gloo" in backend or "mpi" in backend:
        return torch.device("cpu")
    return torch.device("cuda", torch.cuda.current_device())


def build_cp_context(width: int, group=None, *, cu_seqlens=None, local_len: Optional[int] = None,
                     layout: str = "contiguous") -> CPContext:
    """Context for `aiter_lite.causal_conv1d(..., cp_context=)` on a sequence split over `group`.

    Call it on every rank of the group (None: the default group), with the same width, layout and
    cu_seqlens, once per batch layout. It all-gathers one row of integers per rank, so that any
    mistake raises the same ValueError/TypeError on every rank instead of leaving some waiting.

    width: the conv's kernel width (weight.shape[1]).
    local_len: this rank's number of tokens (x_local.shape[-1]); required for fixed-length batches,
      optional for packed ones (default: an equal split of cu_seqlens[-1]).
    cu_seqlens: packed sequences: the global int32/int64 [num_seqs+1] boundaries before the split,
      the same on every rank; x_local is then [1, D, local_len].
    layout: "contiguous" (rank r holds the r-th chunk) or "zigzag" (rank r holds equal parts r and
      2*world-1-r, front then back, as ring attention shards).
    """
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        raise ValueError("group: torch.distributed is not initialized; call torch.distributed.init_process_group "
                         "first")
    if group is None:
        group = dist.group.WORLD
    try:
        rank = dist.get_rank(group)
    except (RuntimeError, ValueError, TypeError, AttributeError) as e:
        raise ValueError(f"group must be a torch.distributed ProcessGroup, got {type(group).__name__}") from e
    if rank < 0:
        raise ValueError(f"group: this process (global rank {dist.get_rank()}) is not a member of the group; "
                         "build the context only on the group's ranks")
    backend = str(dist.get_backend(group)).lower()
    row, values = agreement.local_row(width, layout, cu_seqlens, local_len)
    rows = agreement.gather_rows(row, group, _collective_device(backend))
    width, layout, local_lens = agreement.check_rows(rows)
    return CPContext(group=group, rank=rank, world_size=len(rows), width=width, layout=layout,
                     local_lens=local_lens, cu_seqlens=values, backend=backend)
