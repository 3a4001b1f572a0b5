#!/usr/bin/env python3
"""Soak: random shapes, dtypes, widths and layouts through every op for M minutes, each call checked
against the float64 references, device memory watched (docs/reliability.md says what each op draws).

A warm-up runs the largest case of every op, dtype and layout twice, so the memory peak is reached
there; then every --sample-s seconds the idle memory_allocated() and the period's peak are sampled.
Failures: a mismatch or exception; idle memory above its warm-up value by more than MAX_GROWTH_MB
(a leak); a period's peak above the warm-up peak by more than MAX_PEAK_GROWTH_MB (the caching
allocator may round a block up by 1 MiB); on the CPU, resident-set growth past MAX_RSS_GROWTH_MB.

  python3 bench/reliability/soak.py [--minutes 10] [--device cpu] [--json F]
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import os
import random
import signal
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
sys.path.insert(0, str(HERE))

import torch  # noqa: E402

import aiter_lite  # noqa: E402
from checks import DTYPE_NAMES, MATMUL_TOL, check_conv, matmul_error, run_update_checked  # noqa: E402

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
CONV_VARIANTS = ("auto", "naive", "shared", "vectorized")
MM_VARIANTS = ("auto", "naive", "tiled", "tensor_core")
X_LAYOUTS = ("contiguous", "channel_last", "padded", "strided")
MAX = {"batch": 4, "dim": 192, "seqlen": 1500, "width": 16,                 # conv forward
       "ubatch": 8, "udim": 192, "useqlen": 4, "extra_state": 3, "extra_pool": 4,  # update
       "mnk": 384, "mbatch": 3}                                             # matmul
# Limits, MiB: idle memory_allocated() growth after the warm-up, a period's peak over the warm-up
# peak, the CPU's resident set growth; and the mismatches after which the run stops.
MAX_GROWTH_MB, MAX_PEAK_GROWTH_MB, MAX_RSS_GROWTH_MB, MAX_MISMATCHES = 1.0, 16.0, 512.0, 50
CPU_MAX = {"dim": 64, "seqlen": 384, "udim": 64, "mnk": 192}  # the float64 references are slow on a few cores


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=10.0, help="how long to run after the warm-up (default 10)")
    p.add_argument("--device", default="auto", help="auto (GPU if available), cpu, cuda, cuda:1 ...")
    p.add_argument("--seed", type=int, default=None, help="master seed (default: from the clock; in the JSON)")
    p.add_argument("--sample-s", type=float, default=15.0, help="memory sample interval in seconds (default 15)")
    p.add_argument("--json", type=Path, help="write the report here")
    return p.parse_args(argv)


# ---------------------------------------------------------------------------------------------
# Random cases. Each takes a random.Random (shape choices) and a torch.Generator (data).


def log_uniform(rng: random.Random, lo: int, hi: int) -> int:
    return int(round(math.exp(rng.uniform(math.log(lo), math.log(hi + 0.499)))))


class Case:
    def __init__(self, device, rng: random.Random, gen: torch.Generator, biggest: bool = False):
        self.device, self.rng, self.gen, self.biggest = device, rng, gen, biggest
        self.desc = ""  # the case, once drawn (reported with an exception)

    def randn(self, *shape, dtype):
        return torch.randn(*shape, generator=self.gen, dtype=torch.float32, device=self.device).to(dtype)

    def pick(self, options):
        return options[0] if self.biggest else self.rng.choice(options)

    def size(self, lo, hi):
        return hi if self.biggest else log_uniform(self.rng, lo, hi)

    def make_x(self, b, d, l, dtype, layout):
        if layout == "channel_last":
            return self.randn(b, l, d, dtype=dtype).transpose(1, 2)
        if layout == "padded":
            return self.randn(b, d, l + 5, dtype=dtype)[:, :, :l]
        if layout == "strided":
            return self.randn(b, 2 * d + 1, 2 * l + 3, dtype=dtype)[:, 1::2, 2::2]
        return self.randn(b, d, l, dtype=dtype)


def conv_case(c: Case, out_form: bool, layout=None, dtype=None):
    dtype = dtype or c.pick(DTYPES)
    layout = layout or c.pick(X_LAYOUTS)
    b, d, l = c.size(1, MAX["batch"]), c.size(1, MAX["dim"]), c.size(1, MAX["seqlen"])
    width = MAX["width"] if c.biggest else (c.rng.randint(1, 8) if c.rng.random() < 0.85 else c.rng.randint(9, 16))
    x = c.make_x(b, d, l, dtype, layout)
    b, d, l = x.shape  # the strided layout gives l + 1
    w_dtype = torch.float32 if (dtype != torch.float32 and c.rng.random() < 0.3) else dtype
    weight = c.randn(d, width, dtype=w_dtype)
    bias_kind = c.pick(("bias", "none", "empty"))
    bias = {"bias": lambda: c.randn(d, dtype=w_dtype), "none": lambda: None,
            "empty": lambda: torch.empty(0, dtype=w_dtype, device=c.device)}[bias_kind]()
    silu = c.rng.random() < 0.5
    variant = c.pick(CONV_VARIANTS) if c.device.type == "cuda" else "auto"
    desc = (f"{'causal_conv1d_fwd' if out_form else 'causal_conv1d'} x={b}x{d}x{l} {layout} {DTYPE_NAMES[dtype]} "
            f"w={width} {DTYPE_NAMES[w_dtype]} bias={bias_kind} silu={silu} variant={variant}")
    c.desc = desc
    if out_form:
        out_layout = c.pick(("like_x", "contiguous", "channel_last"))
        if out_layout == "like_x":
            out = torch.empty_like(x)
        elif out_layout == "channel_last":
            out = torch.empty(b, l, d, dtype=dtype, device=c.device).transpose(1, 2)
        else:
            out = torch.empty(b, d, l, dtype=dtype, device=c.device)
        out.fill_(float("nan"))
        desc += f" out={out_layout}"
        c.desc = desc
        res = aiter_lite.causal_conv1d_fwd(out, x, weight, bias, silu, variant=variant)
        if res is not out:
            return desc, "causal_conv1d_fwd did not return out"
    else:
        out = aiter_lite.causal_conv1d(x, weight, bias, "silu" if silu else None, variant=variant)
    return desc, check_conv(out, x, weight, bias, silu)


def update_case(c: Case, state_layout=None, dtype=None):
    dtype = dtype or c.pick(DTYPES)
    batch, dim = c.size(1, MAX["ubatch"]), c.size(1, MAX["udim"])
    width = MAX["width"] if c.biggest else (c.rng.randint(1, 8) if c.rng.random() < 0.9 else c.rng.randint(9, 12))
    seqlen = MAX["useqlen"] if c.biggest else c.rng.randint(1, MAX["useqlen"])
    two_d = seqlen == 1 and c.rng.random() < 0.5
    state_len = max(width - 1, 1) + (MAX["extra_state"] if c.biggest else c.rng.randint(0, MAX["extra_state"]))
    use_indices = c.biggest or c.rng.random() < 0.5
    pool = batch + (MAX["extra_pool"] if c.biggest else c.rng.randint(0, MAX["extra_pool"])) if use_indices else batch
    state_layout = state_layout or c.pick(("contiguous", "channel_last"))
    if state_layout == "channel_last":
        state = c.randn(pool, state_len, dim, dtype=dtype).transpose(1, 2)
    else:
        state = c.randn(pool, dim, state_len, dtype=dtype)
    x = c.randn(batch, dim, dtype=dtype) if two_d else c.make_x(batch, dim, seqlen, dtype,
                                                                    c.pick(("contiguous", "channel_last")))
    w_dtype = torch.float32 if (dtype != torch.float32 and c.rng.random() < 0.3) else dtype
    weight = c.randn(dim, width, dtype=w_dtype)
    bias = c.randn(dim, dtype=w_dtype) if c.rng.random() < 0.6 else None
    silu = c.rng.random() < 0.5
    seqlens = None
    if c.biggest or c.rng.random() < 0.5:
        seqlens = torch.randint(-50, 1000, (batch,), generator=c.gen, dtype=torch.int32, device=c.device)
    indices = None
    if use_indices:
        indices = torch.randperm(pool, generator=c.gen, device=c.device)[:batch].to(torch.int32)
        pad = torch.rand(batch, generator=c.gen, device=c.device) < 0.25
        indices[pad] = -1  # padded slots: zero output, state untouched
    desc = (f"causal_conv1d_update x={tuple(x.shape)} {DTYPE_NAMES[dtype]} w={width} {DTYPE_NAMES[w_dtype]} "
            f"state=({pool},{dim},{state_len}) {state_layout} bias={bias is not None} silu={silu} "
            f"seqlens={seqlens is not None} indices={use_indices}")
    c.desc = desc
    return desc, run_update_checked(x, state, weight, bias, silu, seqlens, indices)


def _operand(c: Case, rows, cols, dtype, layout, batch):
    lead = () if batch is None else (batch,)
    if layout == "t":
        return c.randn(*lead, cols, rows, dtype=dtype).transpose(-1, -2)
    if layout == "pad":
        return c.randn(*lead, rows, cols + 3, dtype=dtype)[..., :cols]
    if layout == "step":  # no unit stride: the GPU path copies it
        return c.randn(*lead, rows, 2 * cols, dtype=dtype)[..., ::2]
    return c.randn(*lead, rows, cols, dtype=dtype)


def matmul_case(c: Case, mode=None, layout=None):
    mode = mode or c.pick(("fp32", "tf32", "fp16", "bf16") if c.device.type == "cuda" else ("fp32", "fp16", "bf16"))
    dtype = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[mode]
    m, n, k = (c.size(1, MAX["mnk"]) for _ in range(3))
    batch_kind = c.pick(("3d-3d", "2d", "3d-2d", "2d-3d"))
    batch = MAX["mbatch"] if c.biggest else c.rng.randint(1, MAX["mbatch"])
    la = layout or c.pick(("n", "t", "pad", "step"))
    lb = layout or c.pick(("n", "t", "pad", "step"))
    a = _operand(c, m, k, dtype, la, None if batch_kind in ("2d", "2d-3d") else batch)
    b = _operand(c, k, n, dtype, lb, None if batch_kind in ("2d", "3d-2d") else batch)
    if c.device.type == "cuda":
        allowed = {"fp32": ("auto", "naive", "tiled"), "tf32": ("auto", "tensor_core")}.get(mode, MM_VARIANTS)
        variant = c.pick(allowed)
    else:
        variant = "auto"
    use_out = c.biggest or c.rng.random() < 0.5
    desc = f"matmul a={tuple(a.shape)} {la} b={tuple(b.shape)} {lb} {mode} variant={variant} out={use_out}"
    tf32 = mode == "tf32"
    c.desc = desc
    if use_out:
        shape = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (m, n)
        out = torch.full(shape, float("nan"), dtype=dtype, device=c.device)
        res = aiter_lite.matmul(a, b, out, allow_tf32=tf32, variant=variant)
        if res is not out:
            return desc, "matmul did not return out"
    else:
        out = aiter_lite.matmul(a, b, allow_tf32=tf32, variant=variant)
    tol = MATMUL_TOL[mode]
    err = matmul_error(out, a, b)
    return desc, None if err <= tol else f"relative error {err:.3e} > {tol:.0e}"


OPS = {
    "causal_conv1d": lambda c: conv_case(c, out_form=False),
    "causal_conv1d_fwd": lambda c: conv_case(c, out_form=True),
    "causal_conv1d_update": update_case,
    "matmul": matmul_case,
}


def warmup_cases(device):
    """The largest case of every op x dtype x layout: the memory peak is reached here."""
    for dtype in DTYPES:
        for layout in X_LAYOUTS:
            yield "causal_conv1d_fwd", lambda c, l=layout, d=dtype: conv_case(c, True, l, d)
            yield "causal_conv1d", lambda c, l=layout, d=dtype: conv_case(c, False, l, d)
        for sl in ("contiguous", "channel_last"):
            yield "causal_conv1d_update", lambda c, s=sl, d=dtype: update_case(c, s, d)
    modes = ("fp32", "tf32", "fp16", "bf16") if device.type == "cuda" else ("fp32", "fp16", "bf16")
    for mode in modes:
        for layout in ("n", "t", "pad", "step"):
            yield "matmul", lambda c, m=mode, l=layout: matmul_case(c, m, l)


# ---------------------------------------------------------------------------------------------
# Memory


def rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def memory_sample(device, t0, calls) -> dict:
    """Idle memory now and the peak since the previous sample (the peak stats are reset here)."""
    gc.collect()
    s = {"t_s": round(time.monotonic() - t0, 1), "calls": calls, "rss": rss_bytes()}
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        s.update(allocated=torch.cuda.memory_allocated(device), max_allocated=torch.cuda.max_memory_allocated(device),
                 reserved=torch.cuda.memory_reserved(device))
        torch.cuda.reset_peak_memory_stats(device)
    return s


# ---------------------------------------------------------------------------------------------


_stop = []  # set by SIGTERM/SIGINT: finish the current call, then write the report


def _request_stop(signum, frame):
    _stop.append(signum)


def main(argv=None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _request_stop)
    signal.signal(signal.SIGINT, _request_stop)
    if args.device == "auto":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        device = torch.device(args.device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("error: --device cuda but no GPU is visible")
        if device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        torch.cuda.set_device(device)
    if device.type == "cpu":  # the float64 references are slow on a few cores: smaller shapes
        MAX.update(CPU_MAX)
    seed = args.seed if args.seed is not None else int(time.time()) % 1_000_000
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"cpu ({torch.get_num_threads()} threads)"
    print(f"soak: {args.minutes} min on {device} ({name}), seed {seed}", flush=True)

    calls = {op: 0 for op in OPS}
    mismatches, samples = [], []
    t0 = time.monotonic()

    def run(op, fn, step_seed, phase):
        rng = random.Random(step_seed)
        gen = torch.Generator(device=device).manual_seed(step_seed)
        case = Case(device, rng, gen, biggest=(phase == "warmup"))
        try:
            desc, err = fn(case)
        except Exception as e:  # an exception is a failure like a mismatch (e.g. a CUDA error)
            desc, err = case.desc or op, f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"
        calls[op] += 1
        if err:
            mismatches.append({"op": op, "phase": phase, "step_seed": step_seed, "case": desc, "error": err})
            print(f"MISMATCH [{phase}] seed {step_seed}: {desc}: {err}", flush=True)

    # Warm-up: the biggest case of everything, twice (the caching allocator settles), then a few
    # random steps of every op.
    for rep in range(2):
        for i, (op, fn) in enumerate(warmup_cases(device)):
            if not _stop:
                run(op, fn, seed * 1000 + rep * 100 + i, "warmup")
    master = random.Random(seed)
    for op in OPS:
        for _ in range(5):
            if not _stop:
                run(op, OPS[op], master.randrange(1 << 31), "warmup")
    base = memory_sample(device, t0, sum(calls.values()))
    base["phase"] = "after warm-up"
    samples.append(base)
    print(f"warm-up done in {base['t_s']} s, {sum(calls.values())} calls; memory: " + _fmt_mem(base), flush=True)

    warm_calls = dict(calls)
    end = time.monotonic() + args.minutes * 60
    next_sample = time.monotonic() + args.sample_s
    ops = list(OPS)
    while time.monotonic() < end and len(mismatches) < MAX_MISMATCHES and not _stop:
        op = master.choice(ops)
        run(op, OPS[op], master.randrange(1 << 31), "soak")
        if time.monotonic() >= next_sample:
            s = memory_sample(device, t0, sum(calls.values()))
            samples.append(s)
            print(f"t={s['t_s']:.0f}s calls={s['calls']} mismatches={len(mismatches)} " + _fmt_mem(s), flush=True)
            next_sample = time.monotonic() + args.sample_s
    final = memory_sample(device, t0, sum(calls.values()))
    final["phase"] = "end"
    samples.append(final)

    mib = 1 << 20
    growth = {}
    problems = []
    if device.type == "cuda":
        later = samples[1:]
        growth["max_allocated"] = max(s["max_allocated"] for s in later) - base["max_allocated"]
        growth["allocated"] = max(s["allocated"] for s in later) - base["allocated"]
        if growth["allocated"] > MAX_GROWTH_MB * mib:
            problems.append(f"idle memory_allocated grew by {growth['allocated'] / mib:.2f} MiB after warm-up "
                            f"(limit {MAX_GROWTH_MB} MiB)")
        if growth["max_allocated"] > MAX_PEAK_GROWTH_MB * mib:
            problems.append(f"max_memory_allocated exceeded the warm-up peak by {growth['max_allocated'] / mib:.2f} "
                            f"MiB (limit {MAX_PEAK_GROWTH_MB} MiB)")
    growth["rss"] = final["rss"] - base["rss"]
    if device.type == "cpu" and growth["rss"] > MAX_RSS_GROWTH_MB * mib:
        problems.append(f"resident set grew by {growth['rss'] / mib:.1f} MiB (limit {MAX_RSS_GROWTH_MB} MiB)")
    if mismatches:
        problems.append(f"{len(mismatches)} mismatches")
    if _stop:
        problems.append(f"interrupted by signal {_stop[0]} after {time.monotonic() - t0:.0f} s")
    soak_calls = {op: calls[op] - warm_calls[op] for op in OPS}
    ok = not problems
    report = {"device": str(device), "device_name": name, "torch": torch.__version__, "seed": seed,
              "minutes": args.minutes, "duration_s": round(time.monotonic() - t0, 1),
              "calls": calls, "soak_calls": soak_calls, "total_calls": sum(calls.values()),
              "mismatch_count": len(mismatches), "mismatches": mismatches[:50], "memory_samples": samples,
              "growth_bytes": growth, "interrupted": bool(_stop), "problems": problems, "ok": ok}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))
    print("| op | calls (soak) | calls (all) |")
    print("| --- | --- | --- |")
    for op in OPS:
        print(f"| {op} | {soak_calls[op]} | {calls[op]} |")
    print(f"memory after warm-up:      {_fmt_mem(base)}")
    print(f"memory at the end:         {_fmt_mem(final)}")
    if device.type == "cuda":
        print(f"growth after warm-up:      idle allocated {growth['allocated'] / mib:+.3f} MiB, "
              f"peak {growth['max_allocated'] / mib:+.3f} MiB (max over {len(samples) - 1} periods)")
    print(f"SOAK {'PASS' if ok else 'FAIL'}: {sum(calls.values())} calls, {len(mismatches)} mismatches, "
          f"{report['duration_s']} s, seed {seed}" + ("" if ok else " | " + "; ".join(problems)))
    return 0 if ok else 1


def _fmt_mem(s: dict) -> str:
    mib = 1 << 20
    if "max_allocated" in s:
        return (f"max_allocated {s['max_allocated'] / mib:.2f} MiB, allocated {s['allocated'] / mib:.2f} MiB, "
                f"reserved {s['reserved'] / mib:.1f} MiB, rss {s['rss'] / mib:.0f} MiB")
    return f"rss {s['rss'] / mib:.0f} MiB"


if __name__ == "__main__":
    sys.exit(main())
