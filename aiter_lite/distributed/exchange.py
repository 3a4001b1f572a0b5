"""Point-to-point exchange of the halo tokens (forward) and of their gradients (backward).

Only the tokens in some rank's halo travel: one message per pair of ranks that share a boundary,
posted together with batch_isend_irecv. post_* return at once; the exchange proceeds while the caller
computes (on CUDA it runs on the process group's own stream, and wait() only makes the current
stream wait for it: no host sync); wait() returns its result.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from .plan import RankPlan

GRAD_DTYPE = torch.float32  # halo gradients travel in fp32: they are added to another rank's dx


class Pending:
    """An exchange in flight: wait() waits for it and returns what finish() makes of it."""

    __slots__ = ("_works", "_buffers", "_finish")

    def __init__(self, works, buffers, finish):
        self._works, self._buffers, self._finish = works, buffers, finish

    def wait(self):
        for work in self._works:
            work.wait()
        self._buffers = None  # the send buffers may go now
        return self._finish()


def _start(ops: list) -> list:
    return dist.batch_isend_irecv(ops) if ops else []


def post_halo(x: torch.Tensor, plan: RankPlan, group) -> Pending:
    """Send this rank's tokens that others' halos need; receive this rank's halos.

    wait() returns halo: x's dtype, [len(plan.halo_parts) * B, D, width-1], halo part i in rows
    i*B..(i+1)*B-1, zeros where the halo reaches before a sequence start."""
    batch, dim = x.shape[0], x.shape[1]
    halo = x.new_zeros((len(plan.halo_parts) * batch, dim, plan.width - 1))
    ops, received, sent = [], [], []
    for message in plan.recvs:
        buf = x.new_empty((batch, dim, message.tokens))
        ops.append(dist.P2POp(dist.irecv, buf, group=group, group_peer=message.peer))
        received.append((message, buf))
    for message in plan.sends:
        pieces = [x[..., r.src_start:r.src_start + r.length] for r in message.runs]
        buf = (torch.cat(pieces, -1) if len(pieces) > 1 else pieces[0]).contiguous()
        ops.append(dist.P2POp(dist.isend, buf, group=group, group_peer=message.peer))
        sent.append(buf)
    works = _start(ops)
    for r in plan.local_runs:  # halo tokens this rank holds itself (zigzag): a copy, while the rest travels
        halo[r.part * batch:(r.part + 1) * batch, :, r.slot:r.slot + r.length].copy_(
            x[..., r.src_start:r.src_start + r.length])

    def finish():
        for message, buf in received:
            offset = 0
            for r in message.runs:
                halo[r.part * batch:(r.part + 1) * batch, :, r.slot:r.slot + r.length].copy_(
                    buf[..., offset:offset + r.length])
                offset += r.length
        return halo

    return Pending(works, sent, finish)


def post_halo_grad(dhalo, plan: RankPlan, group, batch: int, dim: int, device: torch.device) -> Pending:
    """The backward of post_halo: send each halo slot's gradient to the rank that owns the token;
    receive the gradients of this rank's tokens that others read.

    dhalo: GRAD_DTYPE, shaped like post_halo's result (None when this rank has no halo). wait() returns a list of (local_start, grad)
    with grad [B, D, n]: add grad to dx[..., local_start:local_start+n] (a token read by several
    halos appears once per reader)."""
    ops, received, sent = [], [], []

    def slot(r):
        return dhalo[r.part * batch:(r.part + 1) * batch, :, r.slot:r.slot + r.length]

    for message in plan.sends:  # those who read this rank's tokens send their gradients back
        buf = torch.empty((batch, dim, message.tokens), dtype=GRAD_DTYPE, device=device)
        ops.append(dist.P2POp(dist.irecv, buf, group=group, group_peer=message.peer))
        received.append((message, buf))
    for message in plan.recvs:
        pieces = [slot(r) for r in message.runs]
        buf = (torch.cat(pieces, -1) if len(pieces) > 1 else pieces[0]).contiguous()
        ops.append(dist.P2POp(dist.isend, buf, group=group, group_peer=message.peer))
        sent.append(buf)
    works = _start(ops)
    local = [(r.src_start, slot(r)) for r in plan.local_runs]

    def finish():
        out = list(local)
        for message, buf in received:
            offset = 0
            for r in message.runs:
                out.append((r.src_start, buf[..., offset:offset + r.length]))
                offset += r.length
        return out

    return Pending(works, sent, finish)
