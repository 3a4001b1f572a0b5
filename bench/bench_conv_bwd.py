"""Causal conv1d backward through autograd, side by side on the same random data: aiter_lite, causal-conv1d
(dao, its own backward), fla and torch (autograd through F.conv1d).

  python bench/bench_conv_bwd.py [--quick] [--out F]

Each step (forward, and forward + torch.autograd.grad for x, weight and bias) is captured in a CUDA graph
and its replays timed with CUDA events, L2 flushed: GPU time, no host overhead. backward = fwd+grad - fwd.
Bytes = x read + dout read + dx written; "of copy" = that rate over a device copy's in the same run.
"copy-speed fwd+bwd" = a same-size copy of the forward's bytes (x read, y written) plus one of the backward's
(x and dout read, dx written), timed the same way: what a fwd+bwd at copy speed would take; "fla at copy
speed" = fla's fwd+bwd over it, the most any implementation could lead fla by on that row.
"cl" rows store x as [B, L, D]. fla takes [B, L, D] with weight and bias in x's dtype: it runs on every row,
given the transposed view of x on contiguous rows (whatever it does with that view is timed) and, for fp32
weights, weight and bias cast to x's dtype inside the timed step (so it also differentiates through the cast).

Each row is printed as soon as it is measured, with the seconds its first calls took (JIT builds, Triton
compiles and autotuning land there, outside the timings). fla autotunes its forward and backward kernels
over 16 configs each for every new (D, W, dtype): about half a minute per shape on a cold Triton cache,
which is what kept the quick set from finishing in 150 s (H100, 2026-11-25); --quick therefore narrows
its autotuning to FLA_QUICK_CONFIGS (say so beside its numbers) unless --fla-full-autotune is given.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DTYPES, REPO, copy_tbps, fla_conv, graph_time_us, load_peers, need_cuda, torch_conv  # noqa: E402
from records import md_table, write_run  # noqa: E402

import torch  # noqa: E402

import aiter_lite  # noqa: E402

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
# --quick: the fla configs (block of channels BD, warps) its autotuning may choose from.
FLA_QUICK_CONFIGS = {(64, 4), (64, 8), (128, 4), (128, 8)}


def narrow_fla_autotune(keep) -> str:
    """Restrict fla's conv forward/backward autotuners to the (BD, num_warps) pairs in keep; a note."""
    try:
        from fla.modules.causal_conv1d import ops
    except Exception as e:  # noqa: BLE001 - fla missing: nothing to narrow
        return f"fla autotune not narrowed: {type(e).__name__}"
    notes = []
    for name in ("causal_conv1d_fwd_kernel", "causal_conv1d_bwd_kernel"):
        k, depth = getattr(ops, name, None), 0
        while k is not None and not hasattr(k, "configs") and depth < 5:  # through triton.heuristics wrappers
            k, depth = getattr(k, "fn", None), depth + 1
        if k is None or not hasattr(k, "configs"):
            notes.append(f"{name}: no autotuner found")
            continue
        kept = [c for c in k.configs if (c.kwargs.get("BD"), c.num_warps) in keep]
        if kept:
            notes.append(f"{name}: {len(kept)} of {len(k.configs)} configs")
            k.configs = kept
    return "fla autotune narrowed (--quick): " + ", ".join(notes)


def impls(dao, fla):
    out = {"aiter_lite": lambda x, w, b: aiter_lite.causal_conv1d(x, w, b, activation="silu"),
           "torch": lambda x, w, b: torch_conv(x, w.to(x.dtype), b.to(x.dtype))}
    if dao is not None:
        out["dao"] = lambda x, w, b: dao.causal_conv1d_fn(x, w, b, activation="silu")
    if fla is not None:
        fla_run = fla_conv(fla)
        out["fla"] = lambda x, w, b: fla_run(x, w.to(x.dtype), b.to(x.dtype))
    return out


def step_times(fn, x, w, b, dout):
    """(fwd us, fwd+bwd us) of one implementation, or the error it raised on these arguments."""
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


def same_bytes_copy_us(n_elts: int, dtype) -> float:
    """GPU time of a device copy of n_elts elements of dtype (n_elts read and n_elts written)."""
    src = torch.randn(n_elts, device="cuda").to(dtype)
    dst = torch.empty_like(src)
    t = graph_time_us(lambda: dst.copy_(src))
    del src, dst
    return t


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="five shapes only")
    p.add_argument("--out", type=Path, help="the run's JSON")
    p.add_argument("--fla-full-autotune", action="store_true", help="with --quick: all of fla's autotune configs")
    p.add_argument("--fla-narrow", action="store_true",
                   help="any set: narrow fla's autotuning to FLA_QUICK_CONFIGS (as --quick does; said in the notes)")
    p.add_argument("--shapes", help="comma-separated indices into SHAPES (instead of the quick or full set)")
    args = p.parse_args(argv)
    need_cuda("bench_conv_bwd")
    t_start = time.perf_counter()
    dao, fla, notes = load_peers(REPO / ".peers")
    if fla is not None and (args.quick or args.fla_narrow) and not args.fla_full_autotune:
        notes.append(narrow_fla_autotune(FLA_QUICK_CONFIGS))
    print("\n".join(notes), flush=True)
    copy = copy_tbps(graph_time_us)
    print(f"copy {copy:.2f} TB/s; backward µs (of copy), fwd+bwd µs, first calls s (compiles, autotuning)",
          flush=True)
    rows = []
    picked = [int(i) for i in args.shapes.split(",")] if args.shapes else QUICK if args.quick else range(len(SHAPES))
    for xd, wd, B, D, L, W in [SHAPES[i] for i in picked]:
        n = B * D * L
        copy_fwd_bwd = same_bytes_copy_us(n, DTYPES[xd]) + same_bytes_copy_us(n * 3 // 2, DTYPES[xd])
        for layout in ("contiguous", "cl"):
            torch.manual_seed(B * D + L + W)
            x = (torch.randn(B, L, D, device="cuda", dtype=DTYPES[xd]).transpose(1, 2) if layout == "cl"
                 else torch.randn(B, D, L, device="cuda", dtype=DTYPES[xd])).requires_grad_()
            w = (0.5 * torch.randn(D, W, device="cuda", dtype=DTYPES[wd])).requires_grad_()
            b = torch.randn(D, device="cuda", dtype=DTYPES[wd]).requires_grad_()
            dout = torch.randn_like(x)
            for name, fn in impls(dao, fla).items():
                t0 = time.perf_counter()
                t = step_times(fn, x, w, b, dout)
                row = {"op": "bwd", "impl": name, "x_dtype": xd, "w_dtype": wd, "shape": [B, D, L], "width": W,
                       "layout": layout, "copy_fwd_bwd_us": copy_fwd_bwd}
                if isinstance(t, str):
                    rows.append({**row, "error": t})
                else:
                    bwd = max(t[1] - t[0], 1e-3)
                    rows.append({**row, "fwd_us": t[0], "fwd_bwd_us": t[1], "bwd_us": bwd,
                                 "bwd_vs_copy": 3 * x.numel() * x.element_size() / bwd / 1e6 / copy})
                r = rows[-1]
                print(f"  {xd}/{wd} {B}x{D}x{L} W={W} {layout:10s} {name:10s} "
                      + (r["error"] if "error" in r else
                         f"bwd {r['bwd_us']:8.1f} ({r['bwd_vs_copy']:.2f})  fwd+bwd {r['fwd_bwd_us']:8.1f}")
                      + f"  [{time.perf_counter() - t0:.1f} s; t={time.perf_counter() - t_start:.0f} s]", flush=True)
    print(table(rows, copy))
    write_run(args.out, torch.cuda.get_device_name(), torch.__version__, rows, copy_tbps=copy, notes=notes)


def table(rows, copy) -> str:
    by_case = {}
    for r in rows:
        by_case.setdefault((r["x_dtype"], r["w_dtype"], "×".join(map(str, r["shape"])), r["width"], r["layout"]),
                           {})[r["impl"]] = r

    def cell(r):
        return "–" if r is None else "err" if "error" in r else f"{r['bwd_us']:.1f} ({r['bwd_vs_copy']:.2f})"
    lines = []
    for (xd, wd, shape, w, layout), by in by_case.items():
        ours = by.get("aiter_lite", {})
        peers = [r["fwd_bwd_us"] for n, r in by.items() if n != "aiter_lite" and "fwd_bwd_us" in r]
        ratio = f"{min(peers) / ours['fwd_bwd_us']:.2f}x" if peers and "fwd_bwd_us" in ours else "–"
        fla = by.get("fla", {})
        cfb = next(iter(by.values()))["copy_fwd_bwd_us"]
        vs_fla = (f"{fla['fwd_bwd_us'] / ours['fwd_bwd_us']:.2f}x" if "fwd_bwd_us" in fla and "fwd_bwd_us" in ours
                  else "–")
        fla_bound = f"{fla['fwd_bwd_us'] / cfb:.2f}x" if "fwd_bwd_us" in fla else "–"
        fwd_bwd = f"{ours['fwd_bwd_us']:.1f}" if "fwd_bwd_us" in ours else "–"
        lines.append([f"{xd} / {wd}", f"{shape}, {w}", layout, *(cell(by.get(n)) for n in ("aiter_lite", "dao",
                                                                                         "fla", "torch")), ratio,
                      fwd_bwd, f"{cfb:.1f}", vs_fla, fla_bound])
    return f"\ncopy {copy:.2f} TB/s; backward µs (of copy)\n" + md_table(
        ["x / w", "B×D×L, W", "layout", "aiter_lite", "dao", "fla", "torch", "fwd+bwd: ours vs best peer",
         "ours fwd+bwd µs", "copy-speed fwd+bwd µs", "ours vs fla", "fla at copy speed"], lines)


if __name__ == "__main__":
    main()
