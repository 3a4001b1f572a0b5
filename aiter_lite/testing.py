"""Helpers shared by op_tests/ and tests/: float64 checks, poisoned outputs, timing, tables."""
from __future__ import annotations

import json
import math
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import torch

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}

# Relative Frobenius error allowed against a float64 reference (output rounded to its dtype).
TOLERANCE = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def rel_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref|| in float64; inf if out has NaN/inf (e.g. an unwritten poisoned element)."""
    out64 = out.detach().double().cpu()
    ref64 = ref.detach().double().cpu()
    if not torch.isfinite(out64).all():
        return float("inf")
    denom = ref64.norm().item()
    diff = (out64 - ref64).norm().item()
    return diff / denom if denom > 0 else diff


def matmul_rel_error(out: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> float:
    """Scale-aware relative Frobenius error of out against a @ b in float64: the difference over
    max(||a @ b||, || |a| @ |b| || / sqrt(K)), so that a product whose terms cancel (a small reference
    from large terms) is judged by the size of its terms; inf if out has NaN/inf or the wrong shape."""
    ref = torch.matmul(a.detach().double().cpu(), b.detach().double().cpu())
    out64 = out.detach().double().cpu()
    if tuple(out64.shape) != tuple(ref.shape) or not bool(torch.isfinite(out64).all()):
        return float("inf")
    if ref.numel() == 0:
        return 0.0
    k = max(a.shape[-1], 1)
    scale = torch.matmul(a.detach().double().cpu().abs(), b.detach().double().cpu().abs()).norm().item() / k ** 0.5
    denom = max(ref.norm().item(), scale)
    diff = (out64 - ref).norm().item()
    return diff / denom if denom > 0 else diff


def poisoned_like(t: torch.Tensor) -> torch.Tensor:
    """A tensor shaped and strided like t, full of NaN: any element a kernel fails to write shows."""
    return torch.full_like(t, float("nan"))


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("error: --device cuda requested but no GPU is visible")
    return device


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def bench(fn: Callable[[], object], device: torch.device, *, warmup_ms: float = 25, rep_ms: float = 100,
          min_reps: int = 5, max_reps: int = 1000) -> dict:
    """Median and quantiles of fn's time in microseconds.

    CUDA: events around each call, the L2 cache flushed (a 256 MB write) before each; CPU:
    perf_counter around each call. Warms up for ~warmup_ms first.
    """
    fn()
    sync(device)
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device=device) if device.type == "cuda" else None
    t0 = time.perf_counter()
    fn()
    sync(device)
    one = max(time.perf_counter() - t0, 1e-7)
    end_warm = time.perf_counter() + warmup_ms / 1e3
    while time.perf_counter() < end_warm:
        fn()
    sync(device)
    reps = int(min(max_reps, max(min_reps, rep_ms / 1e3 / one)))
    times = []
    for _ in range(reps):
        if flush is not None:
            flush.fill_(reps)  # evict the inputs from L2 (value irrelevant: this buffer is never checked)
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop) * 1e3)
        else:
            t = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t) * 1e6)
    times.sort()
    q = lambda p: times[min(len(times) - 1, int(p * len(times)))]  # noqa: E731
    return {"us": statistics.median(times), "p20": q(0.2), "p80": q(0.8), "reps": len(times)}


@dataclass
class Row:
    shape: str
    dtype: str
    variant: str
    us: float
    gbps: float
    gflops: float
    rel_err: float
    ok: bool
    extra: dict = field(default_factory=dict)


def _delta(value: float, base: float) -> str:
    if not base or math.isnan(base) or math.isnan(value):
        return ""
    return f" ({(value - base) / base * 100:+.2f}%)"


def format_table(rows: Sequence[Row], group_key: Callable[[Row], tuple] = lambda r: (r.shape, r.dtype)) -> str:
    """Markdown table; within each (shape, dtype) group, each row shows its deltas against the first:
    latency (lower is better) and GB/s, GFLOP/s (higher is better)."""
    lines = ["| shape | dtype | variant | latency us | GB/s | GFLOP/s | rel err | pass |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    first: dict[tuple, Row] = {}
    for r in rows:
        base = first.setdefault(group_key(r), r)
        same = base is r
        lines.append(
            f"| {r.shape} | {r.dtype} | {r.variant} | {r.us:.2f}{'' if same else _delta(r.us, base.us)} | "
            f"{r.gbps:.1f}{'' if same else _delta(r.gbps, base.gbps)} | "
            f"{r.gflops:.1f}{'' if same else _delta(r.gflops, base.gflops)} | {r.rel_err:.2e} | "
            f"{'ok' if r.ok else 'FAIL'} |")
    return "\n".join(lines)


def describe_device(device: torch.device) -> str:
    if device.type == "cuda":
        return f"device: {torch.cuda.get_device_name(device)}"
    return f"device: cpu ({torch.get_num_threads()} threads)"


def report(rows: Sequence[Row], json_path=None) -> int:
    """Print the table (and write JSON); return the exit code: 1 if any row failed its check."""
    print(format_table(rows))
    if json_path:
        json_path.write_text(json.dumps([r.__dict__ for r in rows], indent=1))
    failed = [r for r in rows if not r.ok]
    if failed:
        print(f"FAILED: {len(failed)} of {len(rows)} rows exceed the tolerance", file=sys.stderr)
        return 1
    print(f"all {len(rows)} rows within tolerance")
    return 0


def int_list(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v.strip()]


# Every name a script accepts for a dtype: our short names and torch's (with or without "torch.").
DTYPE_ALIASES = {"fp16": "fp16", "float16": "fp16", "half": "fp16",
                 "bf16": "bf16", "bfloat16": "bf16",
                 "fp32": "fp32", "float32": "fp32", "float": "fp32",
                 "tf32": "tf32"}


def dtype_name(text: str, allowed: Sequence[str] = ("fp16", "bf16", "fp32")) -> str:
    """The short name (fp16, bf16, fp32, tf32) of a dtype given by any of its names, e.g. float16 or
    torch.bfloat16; one of `allowed`. An argparse `type=`: a bad name is an error naming the choices."""
    import argparse

    short = DTYPE_ALIASES.get(text.strip().lower().removeprefix("torch."))
    if short not in allowed:
        names = [n for n, s in DTYPE_ALIASES.items() if s in allowed]
        raise argparse.ArgumentTypeError(f"unknown dtype {text.strip()!r}; choose from {', '.join(names)}")
    return short


def dtype_names(text: str, allowed: Sequence[str] = ("fp16", "bf16", "fp32")) -> list[str]:
    """Comma-separated dtype names -> their short names (see dtype_name)."""
    return [dtype_name(v, allowed) for v in text.split(",") if v.strip()]


def dtype_list(text: str) -> list[torch.dtype]:
    """Comma-separated dtype names (fp16 or float16 or half, ...) -> torch dtypes."""
    return [DTYPES[n] for n in dtype_names(text)]


def random_normal(shape, dtype, device, generator: Optional[torch.Generator] = None) -> torch.Tensor:
    """Fresh random normal data (never zeros: they hide unwritten outputs and wrong indexing)."""
    return torch.randn(shape, dtype=torch.float32, device=device, generator=generator).to(dtype)
