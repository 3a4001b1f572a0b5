"""Causal conv1d backward through autograd, side by side: aiter_lite vs causal-conv1d (dao, its real
backward), fla and torch (autograd through F.conv1d), on the same random data, in one run.

  python bench/bench_conv_bwd.py [--quick] [--out results.json]

Each step (forward, and forward + torch.autograd.grad for x, weight and bias) is captured in a CUDA graph
and its replays timed with CUDA events (L2 flushed before each replay): GPU time, no host overhead.
backward = median(fwd + grad) - median(fwd). Bytes = x read + dout read + dx written; "vs copy" = that
rate over a device-to-device copy measured in the same run (bytes read + written). "cl" rows store x as
[B, L, D] (channel-last). fla needs weight in x's dtype and takes [B, L, D]. Peers load as in
bench_causal_conv1d.py (installed by bench/gpu.sh, else built from .peers). JSON rows: op "bwd" and
"fwd_bwd", as bench/append_results.py expects.
"""
from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import aiter_lite  # noqa: E402
from bench_causal_conv1d import load_peers  # noqa: E402

# (x dtype, weight dtype, B, D, L, W): the ANCHORS.md backward table, plus widths and a small odd shape.
SHAPES = [
    ("bf16", "fp32", 8, 5120, 2048, 4), ("bf16", "fp32", 4, 4096, 4096, 4), ("bf16", "fp32", 8, 4096, 4096, 2),
    ("bf16", "fp32", 4, 512, 2048, 4), ("bf16", "fp32", 16, 2048, 129, 4), ("bf16", "fp32", 3, 1536, 777, 3),
    ("bf16", "bf16", 8, 5120, 2048, 4), ("bf16", "bf16", 4, 4096, 4096, 4),
    ("fp16", "fp32", 8, 5120, 2048, 4), ("fp16", "fp32", 4, 4096, 4096, 4),
    ("fp32", "fp32", 8, 5120, 2048, 4), ("fp32", "fp32", 8, 4096, 4096, 2), ("fp32", "fp32", 16, 2048, 129, 4),
    ("bf16", "fp32", 4, 4096, 4096, 8), ("bf16", "fp32", 4, 4096, 4096, 6),
]
QUICK = [0, 1, 2, 4, 10]
DT = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
FLUSH = torch.empty(256 << 20, dtype=torch.uint8, device="cuda") if torch.cuda.is_available() else None


def graph_time_us(fn, reps=30) -> float:
    """Median GPU time of fn replayed from a CUDA graph, L2 flushed before each replay."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    times = []
    for _ in range(reps):
        FLUSH.random_()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3)
    return statistics.median(times)


def copy_tbps(nbytes=1 << 30) -> float:
    src = torch.randn(nbytes // 4, device="cuda")
    dst = torch.empty_like(src)
    return 2 * nbytes / graph_time_us(lambda: dst.copy_(src)) / 1e6


def torch_conv(x, w, b):
    return F.silu(F.conv1d(x, w.unsqueeze(1), b, padding=w.shape[1] - 1, groups=x.shape[1])[..., :x.shape[-1]])


def impls(dao, fla):
    out = {"aiter_lite": lambda x, w, b: aiter_lite.causal_conv1d(x, w, b, activation="silu"),
           "torch": lambda x, w, b: torch_conv(x, w.to(x.dtype), b.to(x.dtype))}
    if dao is not None:
        out["dao"] = lambda x, w, b: dao.causal_conv1d_fn(x, w, b, activation="silu")
    if fla is not None:
        def fla_fn(x, w, b):
            y = fla(x=x.transpose(1, 2), weight=w, bias=b, activation="silu")
            return y[0] if isinstance(y, tuple) else y
        out["fla"] = fla_fn
    return out


def step_times(fn, x, w, b, dout):
    """(fwd us, fwd+bwd us) of one implementation, or None if it cannot run these arguments."""
    def fwd():
        with torch.no_grad():
            fn(x, w, b)

    def fwd_bwd():
        y = fn(x, w, b)
        torch.autograd.grad(y, (x, w, b), dout.view_as(y) if y.shape == dout.shape else dout.transpose(1, 2))
    try:
        return graph_time_us(fwd), graph_time_us(fwd_bwd)
    except Exception as e:  # noqa: BLE001 - a peer that cannot take these arguments is reported, not fatal
        torch.cuda.synchronize()
        return f"{type(e).__name__}: {str(e)[:80]}"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="five shapes only")
    p.add_argument("--no-peers", action="store_true")
    p.add_argument("--peers-root", default=str(REPO / ".peers"))
    p.add_argument("--out", type=Path, help="JSON rows (default: not written)")
    args = p.parse_args(argv)
    dao, fla, notes = load_peers(args.peers_root, args.no_peers)
    print("\n".join(notes), file=sys.stderr)
    copy = copy_tbps()
    print(f"device copy: {copy:.2f} TB/s", file=sys.stderr)
    rows = []
    shapes = [SHAPES[i] for i in QUICK] if args.quick else SHAPES
    for xd, wd, B, D, L, W in shapes:
        for layout in ("contiguous", "cl"):
            torch.manual_seed(B * D + L + W)
            if layout == "cl":
                x = torch.randn(B, L, D, device="cuda", dtype=DT[xd]).transpose(1, 2)
            else:
                x = torch.randn(B, D, L, device="cuda", dtype=DT[xd])
            x.requires_grad_()
            w = (0.5 * torch.randn(D, W, device="cuda", dtype=DT[wd])).requires_grad_()
            b = torch.randn(D, device="cuda", dtype=DT[wd]).requires_grad_()
            dout = torch.randn_like(x)
            nbytes = 3 * x.numel() * x.element_size()
            for name, fn in impls(dao, fla).items():
                if name == "fla" and (layout != "cl" or wd != xd):
                    continue  # fla: [B, T, D] storage and weight in x's dtype only
                t = step_times(fn, x, w, b, dout)
                row = {"op": "bwd", "impl": name, "x_dtype": xd, "w_dtype": wd, "shape": [B, D, L], "width": W,
                       "layout": layout}
                if isinstance(t, str):
                    rows.append({**row, "error": t})
                    continue
                bwd = max(t[1] - t[0], 1e-3)
                rows.append({**row, "fwd_us": t[0], "fwd_bwd_us": t[1], "bwd_us": bwd,
                             "bwd_vs_copy": nbytes / bwd / 1e6 / copy})
    print_table(rows, copy)
    if args.out:
        args.out.write_text(json.dumps({"device": torch.cuda.get_device_name(), "date": str(datetime.date.today()),
                                        "copy_tbps": copy, "records": rows}))


def print_table(rows, copy):
    print(f"\n| x / w | B×D×L, W | layout | aiter_lite bwd µs (of copy) | dao | fla | torch | "
          f"fwd+bwd: ours vs best peer |   (copy {copy:.2f} TB/s)")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    keys = []
    for r in rows:
        k = (r["x_dtype"], r["w_dtype"], tuple(r["shape"]), r["width"], r["layout"])
        if k not in keys:
            keys.append(k)
    for k in keys:
        by = {r["impl"]: r for r in rows if (r["x_dtype"], r["w_dtype"], tuple(r["shape"]), r["width"], r["layout"]) == k}

        def cell(name):
            r = by.get(name)
            if r is None:
                return "–"
            return "err" if "error" in r else f"{r['bwd_us']:.1f} ({r['bwd_vs_copy']:.2f})"
        ours = by.get("aiter_lite", {})
        peers = [r["fwd_bwd_us"] for n, r in by.items() if n != "aiter_lite" and "fwd_bwd_us" in r]
        ratio = f"{min(peers) / ours['fwd_bwd_us']:.2f}x" if peers and "fwd_bwd_us" in ours else "–"
        print(f"| {k[0]} / {k[1]} | {'×'.join(map(str, k[2]))}, {k[3]} | {k[4]} | {cell('aiter_lite')} | {cell('dao')} | "
              f"{cell('fla')} | {cell('torch')} | {ratio} |")


if __name__ == "__main__":
    main()
