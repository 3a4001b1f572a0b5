"""A/B of the conv forward's runtime-width kernels (widths 5..8 served by one 8-tap kernel per family,
kWideWidth in csrc/include/causal_conv1d_common.cuh) against the width-specialised kernels they replace.

    PYTHONPATH=ROOT python3 bench/lab/wide_width_ab.py LABEL [--reps 30] > rows.txt
    python3 bench/lab/wide_width_ab.py --compare OLD_LABEL NEW_LABEL rows.txt...

Run once per tree (ROOT: the checkout whose aiter_lite is imported; each builds its own module), in
alternation (A B A B) on the same GPU, then compare the rows: each row is `LABEL dtype layout BxDxL
width us`, the median GPU time of the forward (bias, SiLU) replayed from a CUDA graph with L2 flushed
(bench/common.py graph_time_us), on fresh random inputs. Shapes: the forward anchors of
/work/shared/ANCHORS.md; layouts: contiguous ([B, D, L]: rows or flat kernel), channel_last
(register kernel), padded (dim stride L + 5: shared kernel, small shapes only)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import graph_time_us  # noqa: E402

SHAPES = {
    "fp16": [(2, 256, 1024), (1, 4096, 4096), (8, 5120, 2048), (4, 8192, 8192), (16, 2048, 129)],
    "bf16": [(2, 256, 1024), (4, 512, 2048), (4, 8192, 8192)],
    "fp32": [(8, 5120, 2048), (16, 2048, 129)],
}
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


def make_x(b, d, l, dtype, layout):
    if layout == "contiguous":
        return torch.randn(b, d, l, device="cuda", dtype=dtype)
    if layout == "channel_last":
        return torch.randn(b, l, d, device="cuda", dtype=dtype).transpose(1, 2)
    return torch.randn(b, d, l + 5, device="cuda", dtype=dtype)[:, :, :l]  # padded


def compare(old: str, new: str, files: list[str]) -> int:
    """Per row: the median of each label's runs, new / old, and each label's spread (max / min)."""
    import statistics

    runs: dict[tuple, dict[str, list[float]]] = {}
    for f in files:
        for line in open(f):
            parts = line.split()
            if len(parts) != 6 or parts[0] not in (old, new):
                continue
            runs.setdefault(tuple(parts[1:5]), {}).setdefault(parts[0], []).append(float(parts[5]))
    ratios = []
    print(f"{'dtype':5} {'layout':12} {'shape':14} {'W':>2} {old + ' us':>10} {new + ' us':>10} {'new/old':>8}  spread old/new")
    for key, by in runs.items():
        if old not in by or new not in by:
            continue
        a, b = statistics.median(by[old]), statistics.median(by[new])
        if int(key[3]) > 4:
            ratios.append(b / a)
        print(f"{key[0]:5} {key[1]:12} {key[2]:14} {key[3]:>2} {a:10.2f} {b:10.2f} {b / a:8.3f}  "
              f"{max(by[old]) / min(by[old]):.3f}/{max(by[new]) / min(by[new]):.3f}")
    if ratios:
        print(f"widths 5..8: new/old geomean {statistics.geometric_mean(ratios):.3f}, min {min(ratios):.3f}, "
              f"max {max(ratios):.3f} over {len(ratios)} rows")
    return 0


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--compare":
        return compare(sys.argv[2], sys.argv[3], sys.argv[4:])
    ap = argparse.ArgumentParser()
    ap.add_argument("label")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--widths", default="4,5,6,7,8")
    args = ap.parse_args()
    import aiter_lite

    torch.manual_seed(0)
    for name, shapes in SHAPES.items():
        dtype = DTYPES[name]
        for (b, d, l) in shapes:
            for layout in ("contiguous", "channel_last", "padded"):
                if layout == "padded" and b * d * l > (1 << 24):
                    continue
                x = make_x(b, d, l, dtype, layout)
                out = torch.empty_like(x)
                for width in map(int, args.widths.split(",")):
                    w = torch.randn(d, width, device="cuda", dtype=dtype)
                    bias = torch.randn(d, device="cuda", dtype=dtype)
                    fn = lambda: aiter_lite.causal_conv1d_fwd(out, x, w, bias, True)  # noqa: E731
                    fn()
                    torch.cuda.synchronize()
                    us = graph_time_us(fn, args.reps)
                    print(f"{args.label} {name} {layout} {b}x{d}x{l} {width} {us:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
