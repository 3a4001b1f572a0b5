"""Plot matmul TFLOP/s against size, aiter_lite (default config) against cuBLAS, from records of
bench/bench_matmul.py (square shapes M = N = K only).

usage: python bench/plot_matmul.py RESULTS.json OUT.png [--run LABEL]
  --run keeps the records whose "run" field starts with LABEL (the shared results file holds several
  runs); without it every square record is drawn.
(needs matplotlib, which aiter_lite itself does not depend on)
"""
import argparse
import json
from collections import defaultdict

from plot_common import finish, new_axes

COLORS = {"fp16": "tab:blue", "bf16": "tab:orange", "tf32": "tab:green", "fp32": "tab:red"}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--run", default=None)
    args = ap.parse_args(argv)
    data = json.load(open(args.src))
    series = defaultdict(dict)  # (impl, dtype) -> {size: tflops}
    for r in data["records"]:
        if args.run and not str(r.get("run", "")).startswith(args.run):
            continue
        if not (r["M"] == r["N"] == r["K"]) or r.get("config", -1) != -1:
            continue
        series[(r["impl"], r["dtype"])][r["M"]] = r["tflops"]
    if not series:
        raise SystemExit("no square records with the default config in " + args.src)
    fig, ax = new_axes()
    for (impl, dtype), pts in sorted(series.items()):
        sizes = sorted(pts)
        ax.plot(sizes, [pts[s] for s in sizes], "-o" if impl == "aiter_lite" else "--s", color=COLORS.get(dtype),
                label=f"{'aiter_lite' if impl == 'aiter_lite' else 'cuBLAS'} {dtype}", alpha=0.9, ms=4)
    ax.set_xscale("log", base=2)
    finish(fig, ax, args.dst, xlabel="M = N = K", ylabel="TFLOP/s",
           title=f'matmul, {data["device"]}, {data["date"][:10]}')


if __name__ == "__main__":
    main()
