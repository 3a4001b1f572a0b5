"""SM clock and board power while one matmul runs back to back: ours (variant auto) against cuBLAS
(torch.matmul), in alternating windows of a few seconds, with nvidia-smi sampling in the background.

Nsight Compute (clocks locked) put issue 6's 4096^3 kernel level with cuBLAS in cycles, while
do_bench at boost clocks put it ~1% behind; if the two run at different clocks under load, this shows
it. Needs a CUDA GPU and nvidia-smi.

    python bench/lab/matmul_clocks.py [--shape 4096x4096x4096] [--dtype fp16] [--seconds 3] [--rounds 3]

Prints one line per window (impl, TFLOP/s from CUDA events over the window, with a host sync every 10
calls for both, median SM MHz and mean W from the samples after the window's first 0.5 s) and the
per-impl medians last.
"""
import argparse
import datetime
import statistics
import subprocess
import time

import torch

import aiter_lite
from aiter_lite.testing import dtype_name

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def sample_smi(proc_out: str):
    """(epoch seconds, MHz, W) rows from nvidia-smi's CSV (timestamp, clocks.sm, power.draw)."""
    rows = []
    for line in proc_out.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 3:
            continue
        try:  # nvidia-smi prints local time, as time.time() counts it
            t = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            rows.append((t, float(parts[1].split()[0]), float(parts[2].split()[0])))
        except (ValueError, IndexError):
            continue
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shape", default="4096x4096x4096")
    p.add_argument("--dtype", default="fp16", type=lambda s: dtype_name(s, allowed=DTYPES), help="fp16 or bf16")
    p.add_argument("--seconds", type=float, default=3.0, help="length of one window")
    p.add_argument("--rounds", type=int, default=3, help="windows per implementation (alternating)")
    args = p.parse_args()
    m, n, k = (int(v) for v in args.shape.split("x"))
    dt = DTYPES[args.dtype]
    a, b = torch.randn(m, k, device="cuda", dtype=dt), torch.randn(k, n, device="cuda", dtype=dt)
    out = torch.empty(m, n, device="cuda", dtype=dt)
    impls = {"cublas": lambda: torch.matmul(a, b, out=out), "aiter_lite": lambda: aiter_lite.matmul(a, b, out)}
    for fn in impls.values():  # builds, heuristics, warm-up
        for _ in range(20):
            fn()
    torch.cuda.synchronize()

    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw", "--format=csv,noheader",
                            "-lms", "50"], stdout=subprocess.PIPE, text=True)
    time.sleep(1.0)
    windows = []
    try:
        for _ in range(args.rounds):
            for name, fn in impls.items():
                calls, start_ev, end_ev = 0, torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                t0 = time.time()
                start_ev.record()
                while time.time() - t0 < args.seconds:
                    for _ in range(10):
                        fn()
                    calls += 10
                    torch.cuda.synchronize()
                end_ev.record()
                torch.cuda.synchronize()
                t1 = time.time()
                ms = start_ev.elapsed_time(end_ev)
                # clock and power from 0.5 s in: the samples of the window's start still show the pause before it
                windows.append((name, t0 + 0.5, t1, 2.0 * m * n * k * calls / (ms * 1e-3) / 1e12))
                time.sleep(0.5)
    finally:
        time.sleep(0.2)
        smi.terminate()
        text, _ = smi.communicate()
    rows = sample_smi(text)
    per = {}
    print(f"{args.shape} {args.dtype}, {len(rows)} nvidia-smi samples")
    print("| window | impl | TFLOP/s | SM MHz (median) | W (mean) | samples |")
    print("| --- | --- | --- | --- | --- | --- |")
    for i, (name, t0, t1, tflops) in enumerate(windows):
        inside = [(mhz, w) for t, mhz, w in rows if t0 <= t <= t1]
        mhz = statistics.median(x for x, _ in inside) if inside else float("nan")
        watts = statistics.fmean(w for _, w in inside) if inside else float("nan")
        per.setdefault(name, []).append((tflops, mhz, watts))
        print(f"| {i} | {name} | {tflops:.1f} | {mhz:.0f} | {watts:.0f} | {len(inside)} |")
    print("\n| impl | TFLOP/s | SM MHz | W | TFLOP/s per GHz |")
    print("| --- | --- | --- | --- | --- |")
    for name, vals in per.items():
        tf, mhz, w = (statistics.median(v[i] for v in vals) for i in range(3))
        print(f"| {name} | {tf:.1f} | {mhz:.0f} | {w:.0f} | {tf / mhz * 1e3:.1f} |")


if __name__ == "__main__":
    main()
