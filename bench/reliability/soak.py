#!/usr/bin/env python3
"""Soak: random shapes, dtypes, widths and layouts through every op for M minutes (the cases of
tests/reliability_cases.py), each call checked against float64, device memory watched.

The warm-up runs the largest case of every op, dtype and layout twice, so the memory peak is reached
there; then every --sample-s seconds the idle memory_allocated() and the period's peak are sampled.
Fails on a mismatch or exception; idle memory above its warm-up value by more than 1 MiB (a leak); a
period's peak above the warm-up peak by more than 16 MiB (the caching allocator may round a block up
by 1 MiB); on the CPU, resident-set growth past 512 MiB. SIGTERM ends the run early with its report.

  python3 bench/reliability/soak.py [--minutes 10] [--device cpu|cuda:1] [--seed N] [--json F]
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import random
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "tests"))
import reliability_cases as rc  # noqa: E402 (puts the repository on sys.path)
import torch  # noqa: E402

MIB = 1 << 20
LIMITS_MIB = {"allocated": 1.0, "max_allocated": 16.0, "rss": 512.0}
MAX_MISMATCHES = 50


def memory(device, t0, calls) -> dict:
    """Idle memory now and the peak since the previous sample (the peak stats are reset here)."""
    gc.collect()
    s = {"t_s": round(time.monotonic() - t0, 1), "calls": calls,
         "rss": int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")}
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        s.update(allocated=torch.cuda.memory_allocated(device), max_allocated=torch.cuda.max_memory_allocated(device))
        torch.cuda.reset_peak_memory_stats(device)
    return s


def fmt(s: dict) -> str:
    return ", ".join(f"{k} {s[k] / MIB:.2f} MiB" for k in ("max_allocated", "allocated", "rss") if k in s)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=10.0, help="how long to run after the warm-up (default 10)")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--seed", type=int, help="master seed (default: from the clock; in the report)")
    p.add_argument("--sample-s", type=float, default=15.0, help="memory sample interval (default 15 s)")
    p.add_argument("--json", type=Path, help="write the report here")
    args = p.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda":
        device = torch.device("cuda", device.index if device.index is not None else torch.cuda.current_device())
        torch.cuda.set_device(device)
    stop = []
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.append(signum))
    seed = args.seed if args.seed is not None else int(time.time()) % 1_000_000
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"soak: {args.minutes} min on {device} ({name}), seed {seed}", flush=True)
    calls, mismatches, samples, t0 = {op: 0 for op in rc.OPS}, [], [], time.monotonic()

    def run(op, fn, step_seed, biggest=False):
        desc, err = rc.run_case(fn, device, step_seed, biggest)
        calls[op] += 1
        if err:
            mismatches.append({"op": op, "seed": step_seed, "case": desc, "error": err})
            print(f"MISMATCH seed {step_seed}: {desc}: {err}", flush=True)

    for rep in range(2):  # warm-up: the largest cases twice (the allocator settles), then a few random ones
        for i, (op, fn) in enumerate(rc.largest_cases(device)):
            run(op, fn, seed * 1000 + rep * 100 + i, biggest=True)
    master = random.Random(seed)
    for op in [op for op in rc.OPS for _ in range(5)]:
        run(op, rc.OPS[op], master.randrange(1 << 31))
    base = memory(device, t0, sum(calls.values()))
    samples.append(base)
    warm_calls = sum(calls.values())
    print(f"warm-up done in {base['t_s']} s, {warm_calls} calls; memory: {fmt(base)}", flush=True)
    end, next_sample = time.monotonic() + args.minutes * 60, time.monotonic() + args.sample_s
    while time.monotonic() < end and len(mismatches) < MAX_MISMATCHES and not stop:
        op = master.choice(list(rc.OPS))
        run(op, rc.OPS[op], master.randrange(1 << 31))
        if time.monotonic() >= next_sample:
            samples.append(memory(device, t0, sum(calls.values())))
            print(f"t={samples[-1]['t_s']:.0f}s calls={samples[-1]['calls']} mismatches={len(mismatches)} "
                  f"{fmt(samples[-1])}", flush=True)
            next_sample = time.monotonic() + args.sample_s
    samples.append(memory(device, t0, sum(calls.values())))

    keys = ("allocated", "max_allocated") if device.type == "cuda" else ("rss",)
    growth = {k: max(s[k] for s in samples[1:]) - base[k] for k in keys}
    problems = [f"{k} grew by {growth[k] / MIB:.2f} MiB after the warm-up (limit {LIMITS_MIB[k]} MiB)"
                for k in keys if growth[k] > LIMITS_MIB[k] * MIB]
    problems += [f"{len(mismatches)} mismatches"] if mismatches else []
    problems += [f"interrupted by signal {stop[0]}"] if stop else []
    report = {"device": str(device), "device_name": name, "torch": torch.__version__, "seed": seed,
              "minutes": args.minutes, "duration_s": round(time.monotonic() - t0, 1), "calls": calls,
              "soak_calls": sum(calls.values()) - warm_calls, "mismatches": mismatches, "memory_samples": samples,
              "growth_bytes": growth, "problems": problems, "ok": not problems}
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    print("calls: " + ", ".join(f"{op} {n}" for op, n in calls.items()))
    print(f"memory after warm-up: {fmt(base)}; at the end: {fmt(samples[-1])}")
    print("growth after warm-up: " + ", ".join(f"{k} {v / MIB:+.3f} MiB" for k, v in growth.items())
          + f" (max over {len(samples) - 1} periods)")
    print(f"SOAK {'FAIL' if problems else 'PASS'}: {sum(calls.values())} calls, {len(mismatches)} mismatches, "
          f"{report['duration_s']} s, seed {seed}" + "".join(" | " + p for p in problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
