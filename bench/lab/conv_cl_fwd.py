"""The channel-last forward (x stored [B, L, D]) through the real API. --check: a correctness sweep against the
float64 reference (NaN-poisoned outputs, fresh random data, widths 1-8, odd lengths, partial warp channel blocks,
padded and offset channel rows). --time: GPU time of one call replayed from a CUDA graph (L2 flushed, median of
--reps) beside causal-conv1d's channel-last forward on the same tensor and a device copy of the same bytes, as
JSON in --out. --table FILES: several --time runs side by side (e.g. two commits on one machine; dao and copy
from the first). The A/B of 2026-11-25 (docs/causal_conv1d.md) ran this at commit 72d684e, whose environment
switches AITER_LITE_CONV_CL_FWD (regs, 8, 16) and AITER_LITE_CONV_CL_CHUNK picked the kernel per process.

  python bench/lab/conv_cl_fwd.py --check [--quick] --time [--mid] --out $OUT/cl.json
  python bench/lab/conv_cl_fwd.py --table $OUT/a.json $OUT/b.json
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/
from common import DTYPES, graph_time_us, load_peers  # noqa: E402

import torch  # noqa: E402

REPO = Path(__file__).resolve().parents[2]

# (dtype, B, D, L, W): the copy-bandwidth shapes, the channel-last rows of ANCHORS.md's forward table, the
# small shapes where the register kernel trailed causal-conv1d, and a wide filter (no peer).
LARGE = [(dt, *s) for dt in ("fp16", "bf16", "fp32") for s in ((8, 5120, 2048, 4), (4, 4096, 4096, 4),
                                                                (8, 4096, 4096, 2))]
SHAPES = LARGE + [
    ("fp16", 2, 256, 1024, 4), ("fp16", 1, 4096, 4096, 4), ("fp16", 4, 8192, 8192, 4), ("fp16", 16, 2048, 129, 4),
    ("bf16", 2, 256, 1024, 4), ("bf16", 4, 512, 2048, 4), ("bf16", 4, 8192, 8192, 4), ("fp32", 4, 8192, 8192, 4),
    ("fp32", 16, 2048, 129, 4), ("bf16", 3, 1536, 777, 3), ("fp16", 4, 512, 2048, 4), ("fp32", 4, 512, 2048, 4),
    ("bf16", 16, 2048, 129, 4), ("fp16", 8, 4096, 4096, 8), ("fp32", 8, 4096, 4096, 8),
]


def randn(*shape, dtype):
    return torch.randn(*shape, device="cuda", dtype=torch.float32).to(dtype)


def check(quick: bool = False) -> int:
    import aiter_lite
    from aiter_lite.ops import causal_conv1d_ref
    from aiter_lite.testing import TOLERANCE, rel_error
    fails = n = 0
    dtypes = ("bf16", "fp32") if quick else ("fp32", "fp16", "bf16")
    widths = (2, 4, 7) if quick else range(1, 9)
    dims = (24, 264) if quick else (8, 24, 264, 520, 1544)  # partial warp channel blocks in both lane widths
    lens = (1, 3, 129) if quick else (1, 2, 3, 5, 17, 64, 129, 777, 2050)
    for dt, w, d, l in itertools.product(dtypes, widths, dims, lens):
        if d * l > 400_000 and w not in (2, 4, 7):
            continue
        dtype = DTYPES[dt]
        b = 3 if d * l < 100_000 else 1
        layout = ("dense", "padded", "offset")[(w + d + l) % 3]
        if layout == "dense":
            x = randn(b, l, d, dtype=dtype).transpose(1, 2)
        elif layout == "padded":  # seq and batch strides past D (still whole 16-byte rows)
            x = randn(b, l + 1, d + 16, dtype=dtype)[:, 1:, 8:d + 8].transpose(1, 2)
        else:  # a base 16 bytes into the allocation
            elts = 16 // x_elt(dtype)
            x = randn(b * l * d + elts, dtype=dtype)[elts:].view(b, l, d).transpose(1, 2)
        wdtype = torch.float32 if (d + l) % 2 else dtype
        weight, bias = randn(d, w, dtype=wdtype), randn(d, dtype=wdtype)
        silu = (l + w) % 2 == 0
        use_bias = (d + w) % 4 != 0
        ref = causal_conv1d_ref(x, weight, bias if use_bias else None, "silu" if silu else None)
        out = torch.full((b, l, d), float("nan"), dtype=dtype, device="cuda").transpose(1, 2)
        aiter_lite.causal_conv1d_fwd(out, x, weight, bias if use_bias else None, silu)
        err = rel_error(out, ref)
        n += 1
        if not err <= TOLERANCE[dtype]:
            fails += 1
            if fails <= 20:
                print(f"FAIL {dt} w={w} {b}x{d}x{l} {layout} wdtype={wdtype} silu={silu} bias={use_bias}: {err:.3e}")
    print(f"check: {n - fails}/{n} passed")
    return fails


def x_elt(dtype) -> int:
    return torch.empty(0, dtype=dtype).element_size()


def time_shapes(shapes, ours_only=False, reps=40) -> list:
    import aiter_lite
    dao, notes = None, ["ours only"]
    if not ours_only:
        dao, _, notes = load_peers(REPO / ".peers")
    print("\n".join(notes))
    rows = []
    for dt, b, d, l, w in shapes:
        dtype = DTYPES[dt]
        x = randn(b, l, d, dtype=dtype).transpose(1, 2)
        weight, bias = randn(d, w, dtype=dtype), randn(d, dtype=dtype)
        out = torch.empty(b, l, d, dtype=dtype, device="cuda").transpose(1, 2)
        ours = graph_time_us(lambda: aiter_lite.causal_conv1d_fwd(out, x, weight, bias, True), reps)
        ref = None
        dao_us = copy = None
        if dao is not None and 2 <= w <= 4:
            dao_us = graph_time_us(lambda: dao.causal_conv1d_fn(x, weight, bias, activation="silu"), reps)
            ref = dao.causal_conv1d_fn(x, weight, bias, activation="silu")
        src = x.transpose(1, 2).contiguous()
        dst = torch.empty_like(src)
        if not ours_only:
            copy = graph_time_us(lambda: dst.copy_(src), reps)
        agree = None if ref is None else float((out.float() - ref.float()).abs().max())
        rows.append(dict(shape=f"{dt} {b}x{d}x{l} W{w}", ours=ours, dao=dao_us, copy=copy, max_diff_vs_dao=agree))
        r = rows[-1]
        nan = float("nan")
        print(f"{r['shape']:>24}  ours {ours:8.1f}  dao {dao_us or nan:8.1f}  copy {copy or nan:8.1f}  "
              f"of copy {(copy or nan) / ours:.3f}  vs dao {(dao_us or nan) / ours:.3f}", flush=True)
        del x, out, src, dst, ref
        torch.cuda.empty_cache()
    return rows


def table(files) -> None:
    """The runs side by side; dao and copy are the first run's (runs timed --ours-only have none)."""
    runs = [(Path(f).stem, json.loads(Path(f).read_text())) for f in files]
    names = [n for n, _ in runs]
    print("| shape | " + " | ".join(f"{n} µs (of copy, vs dao)" for n in names) + " | dao µs | copy µs |")
    print("| --- " * (len(names) + 3) + "|")
    for i, row in enumerate(runs[0][1]):
        cells = []
        for _, rs in runs:
            r = rs[i]
            vs = f", {row['dao'] / r['ours']:.3f}×" if row["dao"] else ""
            cells.append(f"{r['ours']:.1f} ({row['copy'] / r['ours']:.3f}{vs})")
        dao = f"{row['dao']:.1f}" if row["dao"] else "–"
        print(f"| {row['shape']} | " + " | ".join(cells) + f" | {dao} | {row['copy']:.1f} |")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true")
    p.add_argument("--quick", action="store_true", help="a short check sweep (for the sanitizers)")
    p.add_argument("--time", action="store_true")
    p.add_argument("--mid", action="store_true", help="time all but the 4x8192x8192 and W = 8 shapes")
    p.add_argument("--ours-only", action="store_true", help="no peer and no copy (an A/B beside a full run)")
    p.add_argument("--reps", type=int, default=40, help="graph replays per median")
    p.add_argument("--out", type=Path)
    p.add_argument("--table", nargs="+")
    a = p.parse_args()
    if a.table:
        table(a.table)
        return 0
    fails = check(a.quick) if a.check else 0
    if a.time:
        shapes = [s for s in SHAPES if not (s[2] == 8192 or s[4] == 8)] if a.mid else SHAPES
        rows = time_shapes(shapes, a.ours_only, a.reps)
        if a.out:
            a.out.write_text(json.dumps(rows, indent=1))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
