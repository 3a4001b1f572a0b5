"""Where a persistent wgmma CTA spends its time: runs the timeline experiment build
(module_matmul_timeline: bench/lab/matmul_wgmma_timeline.cuh) a few times on one shape and prints,
over the CTAs of each call, how long each phase took in SM cycles.

  AITER_LITE_JIT_CONFIG=bench/lab/jit_experiments.json python bench/lab/wgmma_timeline.py --shape 4096x4096x4096

Phases per CTA (clock64 of consumer 0, relative to the kernel entry of the CTA's producer thread):
  start      entry -> the first tile's first k-tile in shared memory
  mainloop   per tile: first k-tile's data -> last wgmma done
  epilogue   per tile: last wgmma done -> its epilogue done (deferred pieces: staged, not stored)
  gap        per tile after the first: previous epilogue done -> this tile's first k-tile's data
  end        last epilogue done -> exit
Also the ideal mainloop (k-tiles x 1024 cycles: 128 x 256 x 64 MACs at 2048 per cycle), the spread of
the CTAs' entry and exit times (globaltimer), and the clock (cycles / ns between entry and exit).
Each call follows a write of 256 MB (the L2 flushed, as do_bench does). The device prints its rows;
this script runs the calls in a child process and parses what it printed.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

TILES = 5  # kTimelineTiles in matmul_wgmma_timeline.cuh


def child(args) -> None:
    import ctypes
    import importlib

    import torch

    import aiter_lite

    ops_matmul = importlib.import_module("aiter_lite.ops.matmul")  # the module, not the function

    ops_matmul.MODULE = args.module
    libc = ctypes.CDLL(None)
    m, n, k = (int(v) for v in args.shape.split("x"))
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(k, n, device="cuda", dtype=dtype)
    out = torch.empty(m, n, device="cuda", dtype=dtype)
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda")
    print("plan", ops_matmul.matmul_plan(a, b, config=args.config), flush=True)
    for i in range(args.calls + 1):  # call 0 warms up (JIT load, tensor maps)
        flush.random_(0, 100)
        torch.cuda.synchronize()
        aiter_lite.matmul(a, b, out, config=args.config)
        torch.cuda.synchronize()
        libc.fflush(None)
        print(f"CALL {i}", flush=True)
    ref = (a.double() @ b.double())
    err = ((out.double() - ref).abs().max() / ref.abs().max()).item()
    print(f"max error / max |ref| {err:.2e}", flush=True)


def parse(text: str):
    calls, rows = [], []
    for line in text.splitlines():
        if line.startswith("TL "):
            left, *groups = line[3:].split("|")
            cta, gt0, gt1, end = (int(v) for v in left.split())
            tiles = [tuple(int(v) for v in g.split()) for g in groups]
            rows.append({"cta": cta, "gt0": gt0, "gt1": gt1, "end": end, "tiles": tiles})
        elif line.startswith("CALL "):
            calls.append(rows)
            rows = []
        elif line.startswith(("plan", "max error")):
            print(line)
    return calls[1:]  # drop the warm-up call


def med(values):
    values = [v for v in values if v is not None]
    return f"{statistics.median(values):8.0f}" if values else "       -"


def med_max(values):
    return f"{statistics.median(values):8.0f} (max {max(values):.0f})"


def summarize(rows, k_tiles: int) -> None:
    ns = [(r["gt1"] - r["gt0"]) for r in rows]
    cyc = [r["end"] for r in rows]
    ghz = statistics.median(c / t for c, t in zip(cyc, ns) if t > 0)
    span = max(r["gt1"] for r in rows) - min(r["gt0"] for r in rows)
    entry_spread = max(r["gt0"] for r in rows) - min(r["gt0"] for r in rows)
    exit_spread = max(r["gt1"] for r in rows) - min(r["gt1"] for r in rows)
    n_tiles = [sum(1 for t in r["tiles"] if t[0] >= 0) for r in rows]
    print(f"  {len(rows)} CTAs, {min(n_tiles)}-{max(n_tiles)} tiles each (first {TILES} recorded); "
          f"clock {ghz:.2f} GHz; kernel span {span / 1e3:.1f} us; entry spread {entry_spread / 1e3:.2f} us, "
          f"exit spread {exit_spread / 1e3:.2f} us")
    full = [r for r, t in zip(rows, n_tiles) if t == max(n_tiles)]
    start = [r["tiles"][0][0] for r in full]
    print(f"  CTAs with {max(n_tiles)} tiles ({len(full)}), medians (and maxima) in cycles (ideal mainloop {k_tiles * 1024}):")
    last = max(n_tiles) - 1
    end = [r["end"] - r["tiles"][last][2] for r in full] if max(n_tiles) < TILES else [None]
    print(f"    start {med(start)}   end {med(end)}   total {med_max([r['end'] for r in full])}")
    for t in range(min(max(n_tiles), TILES)):
        main = [r["tiles"][t][1] - r["tiles"][t][0] for r in full]
        epi = [r["tiles"][t][2] - r["tiles"][t][1] for r in full]
        gap = [r["tiles"][t][0] - r["tiles"][t - 1][2] for r in full] if t else [None]
        print(f"    tile {t}: mainloop {med_max(main)}  epilogue {med(epi)}  gap {med(gap)}")


def main() -> None:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from aiter_lite.testing import dtype_name

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shape", default="4096x4096x4096", help="MxNxK")
    p.add_argument("--dtype", default="fp16", type=lambda s: dtype_name(s, allowed=("fp16", "bf16")),
                   help="fp16 or bf16")
    p.add_argument("--config", type=int, default=21, help="a persistent wgmma config (default 21)")
    p.add_argument("--calls", type=int, default=3, help="recorded calls (after one warm-up call)")
    p.add_argument("--module", default="module_matmul_timeline")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args)
        return
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--shape", args.shape, "--dtype", args.dtype,
           "--config", str(args.config), "--calls", str(args.calls), "--module", args.module]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"child failed ({res.returncode}):\n{res.stderr[-3000:]}")
    k_tiles = -(-int(args.shape.split("x")[2]) // 64)
    print(f"{args.shape} {args.dtype}, config {args.config}")
    for i, rows in enumerate(parse(res.stdout), 1):
        if not rows:
            sys.exit("no timeline rows: is the module built with AITER_LITE_WGMMA_EXPERIMENT_TIMELINE=1?")
        print(f" call {i}:")
        summarize(rows, k_tiles)


if __name__ == "__main__":
    main()
