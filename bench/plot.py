"""The plots in docs/, from a suite's results JSON (needs matplotlib, which aiter_lite does not use).

    python bench/plot.py conv bench/results/causal_conv1d_nvidia_h100_80gb_hbm3.json docs/causal_conv1d_bandwidth.png
    python bench/plot.py matmul bench/results/matmul_nvidia_h100_80gb_hbm3.json docs/matmul_tflops.png [--run LABEL]

conv: forward TB/s against bytes moved, every implementation, with the 1 GiB copy ceiling of the run.
matmul: TFLOP/s against M = N = K, aiter_lite (default config) and cuBLAS; --run keeps the records whose
"run" label starts with LABEL (a results file holds several runs).
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

CONV_MARKERS = {"aiter_lite": "o", "aiter_lite_cl": "D", "dao": "s", "fla": "^", "torch": "x", "copy": "_"}
MATMUL_COLORS = {"fp16": "tab:blue", "bf16": "tab:orange", "tf32": "tab:green", "fp32": "tab:red"}


def plot_conv(data, ax) -> tuple:
    series = defaultdict(list)  # markers only: the points mix dtypes and widths
    for r in data["records"]:
        if r.get("op") == "fwd" and r["impl"] in CONV_MARKERS:
            nbytes = 2 * r["B"] * r["D"] * r["L"] * {"fp16": 2, "bf16": 2, "fp32": 4}[r["dtype"]]
            series[r["impl"]].append((nbytes, r["tbps"]))
    for impl, pts in series.items():
        pts.sort()
        ax.plot([p[0] / 1e6 for p in pts], [p[1] for p in pts], CONV_MARKERS[impl], label=impl, alpha=0.85)
    ax.axhline(data["copy_tbps"], color="k", lw=1, ls="--", label=f'D2D copy {data["copy_tbps"]:.2f} TB/s')
    ax.set_xscale("log")
    return "bytes moved (x read + out written), MB", "TB/s", "causal_conv1d forward"


def plot_matmul(data, ax, run=None) -> tuple:
    series = defaultdict(dict)  # (impl, dtype) -> {size: tflops}
    for r in data["records"]:
        if run and not str(r.get("run", "")).startswith(run):
            continue
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
    ap.add_argument("op", choices=("conv", "matmul"))
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--run", default=None, help="matmul: only the records of this run label (prefix)")
    args = ap.parse_args(argv)
    data = read_run(args.src)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    xlabel, ylabel, what = plot_conv(data, ax) if args.op == "conv" else plot_matmul(data, ax, args.run)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(f'{what}, {data["device"]}, {data["date"][:10]}')
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.dst, dpi=110)


if __name__ == "__main__":
    main()
