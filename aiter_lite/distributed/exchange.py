"""Point-to-point exchange of the halo tokens (forward) and of their gradients (backward).

Only the tokens in some rank's halo travel: one message per pair of ranks that share a boundary,
posted together with batch_isend_irecv. post_* return at once; the exchange proceeds while the caller
computes (on CUDA it runs on the process group's own stream, and wait() only makes the current
stream wait for it: no host sync); wait() returns its result.

The Python work per call is what could not be done once: Routes (built with the context) holds the
plan as plain slices, and a message that fills a whole halo (the common case: the rank before holds
at least width-1 tokens of the same sequence) is received straight into that halo, with no buffer,
no zero fill and no copy; in the backward the halo's gradient goes back as it is.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .plan import RankPlan


class _Message:
    """One message: with `peer`, the runs (offset in the message, local position, halo part, slot, length)."""

    __slots__ = ("peer", "tokens", "runs", "whole_part")

    def __init__(self, message, width: int, local_position):
        self.peer, self.tokens = message.peer, message.tokens
        runs, offset = [], 0
        for r in message.runs:
            runs.append((offset, local_position(r), r.part, r.slot, r.length))
            offset += r.length
        self.runs = tuple(runs)
        # the message is exactly one halo, slot 0 to width-2: received into it / its gradient sent as it is
        only = message.runs[0]
        self.whole_part = only.part if (len(message.runs) == 1 and only.slot == 0
                                        and only.length == width - 1) else None


class Routes:
    """The plan of one rank as what each call does: built once per context."""

    __slots__ = ("width", "halo_count", "recvs", "sends", "local_runs", "zero_parts", "active")

    def __init__(self, plan: RankPlan):
        self.width = plan.width
        self.halo_count = len(plan.halo_parts)
        self.recvs = tuple(_Message(m, plan.width, lambda r: None) for m in plan.recvs)
        self.sends = tuple(_Message(m, plan.width, lambda r: r.src_start) for m in plan.sends)
        self.local_runs = tuple((r.src_start, r.part, r.slot, r.length) for r in plan.local_runs)
        covered = [0] * self.halo_count
        for message in plan.recvs:
            for r in message.runs:
                covered[r.part] += r.length
        for r in plan.local_runs:
            covered[r.part] += r.length
        # halos that reach before a sequence start read zeros there: only those are zero-filled
        self.zero_parts = frozenset(k for k in range(self.halo_count) if covered[k] < plan.width - 1)
        self.active = bool(self.recvs or self.sends or self.local_runs)  # every rank with a peer posts


class Pending:
    """An exchange in flight: wait() waits for it and returns what finish() makes of it."""

    __slots__ = ("_works", "_sent", "_finish")

    def __init__(self, works, sent, finish):
        self._works, self._sent, self._finish = works, sent, finish

    def wait(self):
        for work in self._works:
            work.wait()
        self._sent = None  # the send buffers may go now
        return self._finish()


def _start(ops: list) -> list:
    return dist.batch_isend_irecv(ops) if ops else []


def _gather(t: torch.Tensor, pieces: list) -> torch.Tensor:
    """One contiguous buffer of t's runs (start, length) end to end along the last dim."""
    views = [t[..., a:a + n] for a, n in pieces]
    return (torch.cat(views, -1) if len(views) > 1 else views[0]).contiguous()


def post_halo(x: torch.Tensor, routes: Routes, group) -> Pending:
    """Send this rank's tokens that others' halos need; receive this rank's halos.

    wait() returns a list of halos, one per halo part: x's dtype, [B, D, width-1], zeros where the halo
    reaches before a sequence start."""
    batch, dim, halo_len = x.shape[0], x.shape[1], routes.width - 1
    halos = [None] * routes.halo_count
    ops, received, sent = [], [], []
    for m in routes.recvs:
        buf = x.new_empty((batch, dim, m.tokens))
        ops.append(dist.P2POp(dist.irecv, buf, group=group, group_peer=m.peer))
        if m.whole_part is not None:
            halos[m.whole_part] = buf
        else:
            received.append((m, buf))
    for m in routes.sends:
        buf = _gather(x, [(start, n) for _, start, _, _, n in m.runs])
        ops.append(dist.P2POp(dist.isend, buf, group=group, group_peer=m.peer))
        sent.append(buf)
    works = _start(ops)
    for k in range(routes.halo_count):
        if halos[k] is None:
            halos[k] = (x.new_zeros if k in routes.zero_parts else x.new_empty)((batch, dim, halo_len))
    for start, part, slot, n in routes.local_runs:  # tokens this rank holds itself (zigzag): copied meanwhile
        halos[part][..., slot:slot + n].copy_(x[..., start:start + n])

    def finish():
        for m, buf in received:
            for offset, _, part, slot, n in m.runs:
                halos[part][..., slot:slot + n].copy_(buf[..., offset:offset + n])
        return halos

    return Pending(works, sent, finish)


def post_halo_grad(dhalos: list, routes: Routes, group, like: torch.Tensor) -> Pending:
    """The backward of post_halo: send each halo slot's gradient to the rank that owns the token;
    receive the gradients of this rank's tokens that others read.

    dhalos: one [B, D, width-1] per halo part, like post_halo's result (the gradients travel in like's
    dtype). wait() returns a list of (local_start, grad) with grad [B, D, n]: add grad to
    dx[..., local_start:local_start+n] (a token read by several halos appears once per reader)."""
    batch, dim = like.shape[0], like.shape[1]
    ops, received, sent = [], [], []
    for m in routes.sends:  # those who read this rank's tokens send their gradients back
        buf = like.new_empty((batch, dim, m.tokens))
        ops.append(dist.P2POp(dist.irecv, buf, group=group, group_peer=m.peer))
        received.append((m, buf))
    for m in routes.recvs:
        if m.whole_part is not None:
            buf = dhalos[m.whole_part].contiguous()
        else:
            buf = torch.cat([dhalos[part][..., slot:slot + n] for _, _, part, slot, n in m.runs], -1).contiguous()
        ops.append(dist.P2POp(dist.isend, buf, group=group, group_peer=m.peer))
        sent.append(buf)
    works = _start(ops)
    local = [(start, dhalos[part][..., slot:slot + n]) for start, part, slot, n in routes.local_runs]

    def finish():
        out = local
        for m, buf in received:
            out.extend((start, buf[..., offset:offset + n]) for offset, start, _, _, n in m.runs)
        return out

    return Pending(works, sent, finish)
