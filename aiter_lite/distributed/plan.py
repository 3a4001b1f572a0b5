"""The halo plan of context-parallel causal conv1d: pure Python, no torch.distributed, no tensors.

The global sequence (every row of a fixed-length batch, or the one packed row) is cut into segments,
each owned by one rank at some offset of its local buffer: one segment per rank in the contiguous
layout, two per rank in the zigzag layout (rank r holds segments r and 2*world-1-r, front then back).
A segment is a "part" of its owner's local buffer.

The first output of a part needs the `width-1` tokens before the part's global start (its halo),
minus those before the start of the sequence it continues (packed sequences: they read as zeros). A
halo may span several segments (short chunks) and several owners, including the part's own rank
(zigzag: rank world-1 holds two adjacent segments). Every rank computes the same global plan from
the same inputs and keeps its own sends, receives and local copies; the backward uses it reversed.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import Optional, Sequence


@dataclass(frozen=True)
class Part:
    """A run of a rank's local buffer that is contiguous in the global sequence."""
    local_start: int
    length: int
    global_start: int
    halo_len: int  # tokens of the halo that are real (the rest reads as zeros); 0: no halo needed


@dataclass(frozen=True)
class Run:
    """Tokens [src_start, src_start+length) of rank `src`'s local buffer that fill halo slots
    [slot, slot+length) of part `part` (an index into the receiver's halo_parts) on rank `dst`."""
    src: int
    src_start: int
    dst: int
    part: int
    slot: int
    length: int


@dataclass(frozen=True)
class Message:
    """Everything one rank sends another in one exchange: runs in a fixed order, packed end to end."""
    peer: int  # the other rank (group rank)
    runs: tuple  # tuple[Run, ...]
    tokens: int


@dataclass(frozen=True)
class RankPlan:
    """What one rank does in one exchange (forward: tokens; backward: the same, reversed)."""
    rank: int
    width: int
    parts: tuple       # tuple[Part, ...] in local order
    halo_parts: tuple  # indices into parts of those that need a halo (0, 1 or 2 of them)
    head_len: int      # outputs recomputed with the halo at the start of each halo part: min(width-1, len)
    sends: tuple       # tuple[Message, ...]: tokens of this rank other ranks need
    recvs: tuple       # tuple[Message, ...]: halo tokens this rank needs from others
    local_runs: tuple  # tuple[Run, ...]: halo tokens this rank holds itself (src == dst == rank)


def segments(layout: str, local_lens: Sequence[int]) -> list:
    """(global_start, length, owner, local_start) of every segment, in global order."""
    world = len(local_lens)
    if layout == "contiguous":
        out, start = [], 0
        for r, n in enumerate(local_lens):
            out.append((start, n, r, 0))
            start += n
        return out
    if layout == "zigzag":
        half = local_lens[0] // 2
        return [(p * half, half, p if p < world else 2 * world - 1 - p, 0 if p < world else half)
                for p in range(2 * world)]
    raise ValueError(f"layout must be 'contiguous' or 'zigzag', got {layout!r}")


def _sequence_start(cu_seqlens: Optional[Sequence[int]], pos: int) -> int:
    """Global start of the sequence that holds token `pos` (0 for a fixed-length row)."""
    if cu_seqlens is None:
        return 0
    return cu_seqlens[bisect_right(cu_seqlens, pos) - 1]


def _parts_of(rank: int, segs: list, width: int, cu_seqlens) -> tuple:
    mine = sorted((s for s in segs if s[2] == rank), key=lambda s: s[3])
    return tuple(Part(local_start=loc, length=n, global_start=g,
                      halo_len=min(width - 1, g - _sequence_start(cu_seqlens, g)) if n > 0 else 0)
                 for g, n, _, loc in mine)


def _halo_runs(dst: int, parts: tuple, segs: list, width: int) -> list:
    """The runs that fill rank dst's halos, in (part, slot) order."""
    runs, part_index = [], 0
    for part in parts:
        if part.halo_len == 0:
            continue
        lo, hi = part.global_start - part.halo_len, part.global_start
        for g, n, owner, loc in segs:
            a, b = max(lo, g), min(hi, g + n)
            if a < b:
                runs.append(Run(src=owner, src_start=loc + (a - g), dst=dst, part=part_index,
                                slot=(width - 1) - (hi - a), length=b - a))
        part_index += 1
    return runs


def _messages(runs: list, peer_of) -> tuple:
    by_peer: dict = {}
    for run in runs:
        by_peer.setdefault(peer_of(run), []).append(run)
    return tuple(Message(peer=p, runs=tuple(rs), tokens=sum(r.length for r in rs)) for p, rs in sorted(by_peer.items()))


def make_plan(rank: int, width: int, layout: str, local_lens: Sequence[int],
              cu_seqlens: Optional[Sequence[int]] = None) -> RankPlan:
    """The plan of `rank`, from the layout, every rank's local length and (packed sequences) the
    global cu_seqlens. The inputs are assumed valid (build_cp_context checks them first)."""
    segs = segments(layout, local_lens)
    all_runs = []
    for r in range(len(local_lens)):
        all_runs.extend(_halo_runs(r, _parts_of(r, segs, width, cu_seqlens), segs, width))
    parts = _parts_of(rank, segs, width, cu_seqlens)
    halo_parts = tuple(i for i, p in enumerate(parts) if p.halo_len > 0)
    head_lens = {min(width - 1, parts[i].length) for i in halo_parts}
    assert len(head_lens) <= 1, "halo parts of one rank have equal lengths (zigzag parts are equal)"
    return RankPlan(
        rank=rank, width=width, parts=parts, halo_parts=halo_parts,
        head_len=head_lens.pop() if head_lens else 0,
        sends=_messages([x for x in all_runs if x.src == rank and x.dst != rank], lambda x: x.dst),
        recvs=_messages([x for x in all_runs if x.dst == rank and x.src != rank], lambda x: x.src),
        local_runs=tuple(x for x in all_runs if x.dst == rank and x.src == rank))

