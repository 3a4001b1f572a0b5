"""Plot achieved bandwidth vs size against the copy ceiling from a bench_causal_conv1d.py JSON.

usage: python bench/plot_causal_conv1d.py bench/results/causal_conv1d_<gpu>.json docs/causal_conv1d_bandwidth.png
(needs matplotlib, which aiter_lite itself does not depend on)
"""
import json
import sys
from collections import defaultdict

from plot_common import finish, new_axes

STYLE = {"aiter_lite": "o", "aiter_lite_cl": "D", "dao": "s", "fla": "^", "torch": "x", "copy": "_"}  # markers only: points mix dtypes and widths


def main(src: str, dst: str) -> None:
    data = json.load(open(src))
    series = defaultdict(list)
    for r in data["records"]:
        if r.get("op") != "fwd" or r["impl"] not in STYLE:
            continue
        nbytes = 2 * r["B"] * r["D"] * r["L"] * {"fp16": 2, "bf16": 2, "fp32": 4}[r["dtype"]]
        series[r["impl"]].append((nbytes, r["tbps"], f'{r["dtype"]} {r["shape"]} w{r["W"]}'))
    fig, ax = new_axes()
    for impl, pts in series.items():
        pts.sort()
        ax.plot([p[0] / 1e6 for p in pts], [p[1] for p in pts], STYLE[impl], label=impl, alpha=0.85)
    ax.axhline(data["copy_tbps"], color="k", lw=1, ls="--", label=f'D2D copy {data["copy_tbps"]:.2f} TB/s')
    ax.set_xscale("log")
    finish(fig, ax, dst, xlabel="bytes moved (x read + out written), MB", ylabel="TB/s",
           title=f'causal_conv1d forward, {data["device"]}, {data["date"][:10]}')


if __name__ == "__main__":
    main(*sys.argv[1:3])
