"""The seq_idx backward as a plain backward plus a fix-up, checked in float64 on the CPU before any kernel is
written (docs/causal_conv1d.md, "A plan from session 18"). For random rows (several sequences, one-token runs,
padding anywhere, ids that recur as in 0 1 0, widths 1-8, SiLU or none, initial and final states or not):

  1. the plain backward: gradients of the forward without seq_idx (every tap read, the initial window before
     t = 0), with dout zeroed at padding tokens as the op does;
  2. the fix-up: A = outputs whose window holds a tap seq_idx excludes (their z, so g = dout * act'(z), is wrong
     in 1); D = positions s whose transposed window [s, s + W - 1] holds an output of A or another id, plus the
     last W - 1 positions when final states are returned; dx is recomputed at D, dweight and dbias get
     sum over A of (g_true * x_masked - g_plain * x) per tap, dinitial_states is recomputed;
  3. the result against torch autograd through aiter_lite.ops.causal_conv1d_ref with seq_idx.

Prints the worst error of each gradient and how many positions A and D hold (what the fix-up kernel would touch).

  python bench/lab/conv_bwd_seq_idx_split.py [--cases 300] [--seed 0]
"""
from __future__ import annotations

import argparse

import torch

from aiter_lite.ops import causal_conv1d_ref


def random_ids(length: int, gen: torch.Generator) -> torch.Tensor:
    """Runs of random lengths (one-token runs likely), some padding (-1) anywhere, sometimes an id that recurs
    after another (0 1 0): seq_idx need not be monotonic once padding is allowed to sit between runs."""
    ids, cur, t = [], int(torch.randint(0, 3, (1,), generator=gen)), 0
    while t < length:
        run = int(torch.randint(1, 6, (1,), generator=gen)) if torch.rand(1, generator=gen) < 0.5 else \
            int(torch.randint(1, max(2, length // 2), (1,), generator=gen))
        kind = float(torch.rand(1, generator=gen))
        value = -1 if kind < 0.15 else (cur - 1 if kind < 0.22 and cur > 0 else cur)
        ids += [value] * min(run, length - t)
        t += run
        if value >= 0:
            cur = value + 1
    return torch.tensor(ids[:length], dtype=torch.int64)


def act_grad(z: torch.Tensor, silu: bool) -> torch.Tensor:
    if not silu:
        return torch.ones_like(z)
    s = torch.sigmoid(z)
    return s * (1 + z * (1 - s))


def split_backward(x, w, b, ids, dout, silu, init, dfinal):
    """Gradients by the plain backward plus the fix-up (single row: x [D, L], ids [L])."""
    dim, length = x.shape
    width = w.shape[1]
    halo = width - 1
    ext = torch.cat([init if init is not None else x.new_zeros(dim, halo), x], dim=1)  # [D, L + H]
    ext_ids = torch.cat([ids[:1].expand(halo) if length else ids.new_zeros(halo), ids])
    taps = torch.stack([ext[:, j:j + length] for j in range(width)], dim=1)  # [D, W, L]: tap j of t
    valid = torch.stack([ext_ids[j:j + length] == ids for j in range(width)])  # [W, L]
    if init is None:  # before t = 0 both forms read zeros: such taps never differ
        before = torch.stack([torch.arange(length) + j < halo for j in range(width)])
        valid = valid | before
    wt = w.unsqueeze(2)  # [D, W, 1]
    bias = b.unsqueeze(1)
    z_plain = bias + (wt * taps).sum(1)
    z_true = bias + (wt * taps * valid).sum(1)
    dout_m = dout * (ids >= 0)  # padding tokens output a constant 0
    g_plain = dout_m * act_grad(z_plain, silu)
    g_true = dout_m * act_grad(z_true, silu)

    # 1. the plain backward (what the shipped kernels compute without seq_idx)
    dext_plain = x.new_zeros(dim, length + halo)
    for j in range(width):
        dext_plain[:, j:j + length] += w[:, j:j + 1] * g_plain
    if dfinal is not None:
        dext_plain[:, length:] += dfinal  # the final state is the last H entries of ext
    dx = dext_plain[:, halo:].clone()
    dw = (g_plain.unsqueeze(1) * taps).sum(2)
    db = g_plain.sum(1)

    # 2. the fix-up
    in_a = ~valid.all(0)  # [L]
    dext_true = x.new_zeros(dim, length + halo)
    for j in range(width):
        dext_true[:, j:j + length] += w[:, j:j + 1] * g_true * valid[j]
    final_keep = None
    if dfinal is not None:  # the row's last sequence only (its initial window if it is also the first)
        last = ids[-1] if length else ext_ids[-1]
        final_keep = ext_ids[length:] == last
        dext_true[:, length:] += dfinal * final_keep
    in_d = torch.zeros(length, dtype=torch.bool)
    for j in range(width):  # s = t + j - H for output t and tap j
        s = torch.arange(length) + j - halo
        bad = (~valid[j]) | in_a
        ok = s >= 0
        in_d[s[ok & bad]] = True
    if dfinal is not None:  # already in D by the id rule where the final state drops them; kept for clarity
        in_d[max(0, length - halo):] = True
    dx[:, in_d] = dext_true[:, halo:][:, in_d]
    delta = g_true.unsqueeze(1) * taps * valid - g_plain.unsqueeze(1) * taps  # [D, W, L]
    dw = dw + delta[:, :, in_a].sum(2)
    db = db + (g_true - g_plain)[:, in_a].sum(1)
    dinit = dext_true[:, :halo] if init is not None else None
    return dx, dw, db, dinit, int(in_a.sum()), int(in_d.sum())


def reference(x, w, b, ids, dout, silu, init, dfinal):
    leaves = [t.clone().requires_grad_() for t in (x, w, b)] + ([init.clone().requires_grad_()] if init is not None
                                                                 else [])
    xi, wi, bi = leaves[:3]
    ii = leaves[3] if init is not None else None
    res = causal_conv1d_ref(xi.unsqueeze(0), wi, bi, "silu" if silu else None,
                            initial_states=None if ii is None else ii.unsqueeze(0),
                            return_final_states=dfinal is not None, seq_idx=ids.unsqueeze(0))
    if dfinal is not None:
        out, fin = res
        loss = (out[0] * dout).sum() + (fin[0] * dfinal).sum()
    else:
        loss = (res[0] * dout).sum()
    grads = torch.autograd.grad(loss, leaves)
    return grads[0], grads[1], grads[2], (grads[3] if init is not None else None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    gen = torch.Generator().manual_seed(args.seed)
    worst = {"dx": 0.0, "dweight": 0.0, "dbias": 0.0, "dinit": 0.0}
    touched = [0, 0, 0]
    for case in range(args.cases):
        width = 1 + case % 8
        dim = int(torch.randint(1, 6, (1,), generator=gen))
        length = int(torch.randint(1, 80, (1,), generator=gen))
        silu = bool(case % 2)
        with_init = bool((case // 2) % 2) and width > 1
        with_final = bool((case // 4) % 2) and width > 1
        x = torch.randn(dim, length, generator=gen, dtype=torch.float64)
        w = torch.randn(dim, width, generator=gen, dtype=torch.float64)
        b = torch.randn(dim, generator=gen, dtype=torch.float64)
        ids = random_ids(length, gen)
        if with_final and ids[-1] < 0:
            ids[-1] = ids.clamp(min=0).max()  # the op rejects final states of a row ending in padding
        dout = torch.randn(dim, length, generator=gen, dtype=torch.float64)
        init = torch.randn(dim, width - 1, generator=gen, dtype=torch.float64) if with_init else None
        dfinal = torch.randn(dim, width - 1, generator=gen, dtype=torch.float64) if with_final else None
        got = split_backward(x, w, b, ids, dout, silu, init, dfinal)
        ref = reference(x, w, b, ids, dout, silu, init, dfinal)
        for name, g, r in zip(worst, got[:4], ref):
            if r is not None:
                worst[name] = max(worst[name], float((g - r).abs().max()) if g.numel() else 0.0)
        touched[0] += got[4]
        touched[1] += got[5]
        touched[2] += length
    print(f"{args.cases} cases: worst |split - autograd(reference)|: " +
          ", ".join(f"{k} {v:.2e}" for k, v in worst.items()))
    print(f"positions: A (g recomputed) {touched[0]}, D (dx recomputed) {touched[1]} of {touched[2]} "
          f"(random rows of 1-80 tokens with short runs: far denser than real packing)")
    return 0 if max(worst.values()) < 1e-9 else 1


if __name__ == "__main__":
    raise SystemExit(main())
