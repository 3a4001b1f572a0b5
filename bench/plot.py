"""The plots in docs/, from a suite's results JSON (needs matplotlib, which aiter_lite does not use).

    python bench/plot.py conv bench/results/causal_conv1d_nvidia_h100_80gb_hbm3.json docs/causal_conv1d_bandwidth.png
    python bench/plot.py matmul bench/results/matmul_nvidia_h100_80gb_hbm3.json docs/matmul_tflops.png [--run LABEL]

    python bench/plot.py conv_bwd bench/results/causal_conv1d_nvidia_h200.json docs/causal_conv1d_bwd_bandwidth.png
    python bench/plot.py matmul_ratio bench/results/matmul_nvidia_h100_80gb_hbm3.json docs/matmul_odd_ratio.png \
        --run "odd-shape set"

conv: forward TB/s against bytes moved, every implementation, with the 1 GiB copy ceiling of the run.
conv_bwd: backward TB/s (x and dout read, dx written, over fwd+bwd minus fwd) against those bytes, every
implementation, contiguous rows filled and channel-last hollow, with the run's copy line.
matmul: TFLOP/s against M = N = K, aiter_lite (default config) and cuBLAS.
matmul_ratio: cuBLAS time over aiter_lite's for every (M, N, K, dtype) of the run(s) kept, 1.0 and 0.95 marked.
--run LABEL keeps the records whose "run" label starts with LABEL (a results file holds several runs).
"""
import argparse
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from records import read_run  # noqa: E402

ELEM_BYTES = {"fp16": 2, "bf16": 2, "fp32": 4}
CONV_MARKERS = {"aiter_lite": "o", "aiter_lite_cl": "D", "dao": "s", "fla": "^", "torch": "x", "copy": "_"}
MATMUL_COLORS = {"fp16": "tab:blue", "bf16": "tab:orange", "tf32": "tab:green", "fp32": "tab:red"}


def plot_conv(data, ax) -> tuple:
    series = defaultdict(list)  # markers only: the points mix dtypes and widths
    for r in data["records"]:
        if r.get("op") == "fwd" and r["impl"] in CONV_MARKERS:
            nbytes = 2 * r["B"] * r["D"] * r["L"] * ELEM_BYTES[r["dtype"]]
            series[r["impl"]].append((nbytes, r["tbps"]))
    for impl, pts in series.items():
        pts.sort()
        ax.plot([p[0] / 1e6 for p in pts], [p[1] for p in pts], CONV_MARKERS[impl], label=impl, alpha=0.85)
    ax.axhline(data["copy_tbps"], color="k", lw=1, ls="--", label=f'D2D copy {data["copy_tbps"]:.2f} TB/s')
    ax.set_xscale("log")
    return "bytes moved (x read + out written), MB", "TB/s", "causal_conv1d forward"


def plot_conv_bwd(data, ax) -> tuple:
    series = defaultdict(list)  # (impl, layout) -> [(bytes, TB/s)]
    for r in data["records"]:
        if r.get("op") != "bwd" or "bwd_us" not in r or r["impl"] not in CONV_MARKERS:
            continue
        B, D, L = r["shape"]
        nbytes = 3 * B * D * L * ELEM_BYTES[r["x_dtype"]]
        series[(r["impl"], r["layout"])].append((nbytes, nbytes / r["bwd_us"] / 1e6))
    for (impl, layout), pts in sorted(series.items()):
        pts.sort()
        ax.plot([p[0] / 1e6 for p in pts], [p[1] for p in pts], CONV_MARKERS[impl], alpha=0.85,
                fillstyle="full" if layout == "contiguous" else "none", label=f"{impl} {layout}")
    ax.axhline(data["copy_tbps"], color="k", lw=1, ls="--", label=f'1 GiB copy {data["copy_tbps"]:.2f} TB/s')
    ax.set_xscale("log")
    return "bytes moved (x, dout read + dx written), MB", "TB/s", "causal_conv1d backward"


def plot_matmul_ratio(data, ax) -> tuple:
    times = defaultdict(dict)  # (M, N, K, dtype) -> {impl: us}
    for r in data["records"]:
        if r.get("config", -1) == -1 and r.get("us"):
            times[(r["M"], r["N"], r["K"], r["dtype"])][r["impl"]] = r["us"]
    points = sorted((k, t["cublas"] / t["aiter_lite"]) for k, t in times.items() if {"cublas", "aiter_lite"} <= set(t))
    if not points:
        raise SystemExit("no shape with both aiter_lite and cublas records")
    shapes = sorted({k[:3] for k, _ in points}, key=lambda s: (s[1], s[2], s[0]))
    for dtype in sorted({k[3] for k, _ in points}):
        pts = [(shapes.index(k[:3]), ratio) for k, ratio in points if k[3] == dtype]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o", color=MATMUL_COLORS.get(dtype), label=dtype, alpha=0.85)
    ax.axhline(1.0, color="k", lw=1)
    ax.axhline(0.95, color="k", lw=1, ls="--", label="0.95")
    ax.set_xticks(range(len(shapes)))
    ax.set_xticklabels([f"{m}x{n}x{k}" for m, n, k in shapes], rotation=90, fontsize=6)
    ax.set_yscale("log", base=2)
    return "M x N x K", "cuBLAS time / aiter_lite time (higher: ours faster)", "matmul against cuBLAS"


def plot_matmul(data, ax) -> tuple:
    series = defaultdict(dict)  # (impl, dtype) -> {size: tflops}
    for r in data["records"]:
        if r["M"] == r["N"] == r["K"] and r.get("config", -1) == -1:
            series[(r["impl"], r["dtype"])][r["M"]] = r["tflops"]
    if not series:
        raise SystemExit("no square records with the default config")
    for (impl, dtype), pts in sorted(series.items()):
        sizes = sorted(pts)
        ours = impl == "aiter_lite"
        ax.plot(sizes, [pts[s] for s in sizes], "-o" if ours else "--s", color=MATMUL_COLORS.get(dtype),
                label=f"{'aiter_lite' if ours else 'cuBLAS'} {dtype}", alpha=0.9, ms=4)
    ax.set_xscale("log", base=2)
    return "M = N = K", "TFLOP/s", "matmul"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("op", choices=("conv", "conv_bwd", "matmul", "matmul_ratio"))
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--run", default=None, help="only the records of this run label (prefix)")
    args = ap.parse_args(argv)
    data = read_run(args.src)
    if args.run:
        data["records"] = [r for r in data["records"] if str(r.get("run", "")).startswith(args.run)]
        copies = {r["run_copy_tbps"] for r in data["records"] if "run_copy_tbps" in r}
        if len(copies) == 1:  # one run kept: its own copy line
            data["copy_tbps"] = copies.pop()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    plotters = {"conv": plot_conv, "conv_bwd": plot_conv_bwd, "matmul": plot_matmul, "matmul_ratio": plot_matmul_ratio}
    xlabel, ylabel, what = plotters[args.op](data, ax)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    # The newest date among the records plotted (a results file's own date is its first run's).
    dates = [str(r["date"]) for r in data["records"] if r.get("date")]
    ax.set_title(f'{what}, {data["device"]}, {(max(dates) if dates else data["date"])[:10]}')
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.dst, dpi=110)


if __name__ == "__main__":
    main()
