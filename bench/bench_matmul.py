"""aiter_lite.matmul side by side with torch.matmul (cuBLAS), same random normal data, one run.

Times are medians of triton.testing.do_bench (CUDA events, L2 flushed before every call), both
writing into a preallocated out. fp32 is measured twice: strict (torch.backends.cuda.matmul
allow_tf32 off, aiter_lite allow_tf32=False: the SIMT kernel) and tf32 (both allowed). Then every
tile config of the table on a few shapes, for the planner-vs-measurement comparison.

    python bench/bench_matmul.py [--quick] [--out bench/results/matmul_<gpu>.json]

Writes {"device", "date", "torch", "records": [{"M", "N", "K", "dtype", "impl", "config", "us",
"tflops"}]} (impl "cublas" or "aiter_lite"; config -1 is the default, "config_resolved" what it
picked) and prints compact markdown tables last. About 4 minutes on an H100, the first call's JIT
build included.
"""
from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
import warnings
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SHAPES = [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (3000, 3000, 3000),
          (4096, 11008, 4096), (8192, 1024, 8192), (128, 8192, 8192), (16, 4096, 4096)]
QUICK_SHAPES = [(1024, 1024, 1024), (4096, 4096, 4096), (128, 8192, 8192)]
CONFIG_SHAPES = [(4096, 4096, 4096), (2048, 2048, 2048), (8192, 1024, 8192), (128, 8192, 8192)]
QUICK_CONFIG_SHAPES = [(4096, 4096, 4096)]
MODES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "tf32": torch.float32}
PATH_MODE = {"simt": "fp32", "tensor_core_16": "fp16", "tensor_core_tf32": "tf32"}


def gpu_slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def set_torch_tf32(enabled: bool) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.backends.cuda.matmul.allow_tf32 = enabled


def bench_ms(fn, quick: bool) -> float:
    from triton.testing import do_bench

    return do_bench(fn, warmup=10 if quick else 25, rep=40 if quick else 100, return_mode="median")


def tflops(m: int, n: int, k: int, ms: float) -> float:
    return 2.0 * m * n * k / (ms * 1e-3) / 1e12


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer shapes and shorter timing")
    p.add_argument("--out", type=Path, default=None, help="JSON path (default bench/results/matmul_<gpu>.json)")
    p.add_argument("--no-configs", action="store_true", help="skip the per-config sweep")
    args = p.parse_args(argv)

    if not torch.cuda.is_available():
        print("bench_matmul: needs a CUDA GPU", file=sys.stderr)
        return 2
    import aiter_lite
    from aiter_lite.tuning.matmul_configs import MATMUL_CONFIGS, default_config, path_for

    dev = torch.cuda.get_device_name()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    out_path = args.out or REPO / "bench" / "results" / f"matmul_{gpu_slug(dev)}.json"
    records = []
    gen = torch.Generator(device="cuda").manual_seed(0)

    def inputs(m, n, k, dtype):
        a = torch.randn(m, k, device="cuda", generator=gen, dtype=torch.float32).to(dtype)
        b = torch.randn(k, n, device="cuda", generator=gen, dtype=torch.float32).to(dtype)
        return a, b, torch.empty(m, n, device="cuda", dtype=dtype)

    def record(m, n, k, mode, impl, config, ms, resolved=None):
        rec = {"M": m, "N": n, "K": k, "dtype": mode, "impl": impl, "config": config, "us": round(ms * 1e3, 2),
               "tflops": round(tflops(m, n, k, ms), 2)}
        if resolved is not None:
            rec["config_resolved"] = resolved
        records.append(rec)
        print(f"  {m}x{n}x{k} {mode:4s} {impl:10s} cfg {config:2d}: {rec['us']:10.1f} us {rec['tflops']:7.1f} TFLOP/s",
              flush=True)

    print(f"device: {dev} ({sms} SMs), torch {torch.__version__}", flush=True)
    shapes = QUICK_SHAPES if args.quick else SHAPES
    for mode, dtype in MODES.items():
        tf32 = mode == "tf32"
        set_torch_tf32(tf32)
        path = path_for("float32" if dtype == torch.float32 else "float16", allow_tf32=tf32)
        for m, n, k in shapes:
            a, b, c = inputs(m, n, k, dtype)
            ms = bench_ms(lambda: torch.matmul(a, b, out=c), args.quick)
            record(m, n, k, mode, "cublas", -1, ms)
            aiter_lite.matmul(a, b, c, allow_tf32=tf32)  # builds the module on the first call
            ms = bench_ms(lambda: aiter_lite.matmul(a, b, c, allow_tf32=tf32), args.quick)
            record(m, n, k, mode, "aiter_lite", -1, ms, default_config(path, m, n, 1, sms))
            del a, b, c
    set_torch_tf32(False)

    if not args.no_configs:
        print("per-config sweep", flush=True)
        for m, n, k in QUICK_CONFIG_SHAPES if args.quick else CONFIG_SHAPES:
            for cfg in MATMUL_CONFIGS:
                mode = PATH_MODE[cfg.path]
                tf32 = mode == "tf32"
                variant = "tiled" if cfg.path == "simt" else "tensor_core"
                a, b, c = inputs(m, n, k, MODES[mode])
                ms = bench_ms(lambda: aiter_lite.matmul(a, b, c, allow_tf32=tf32, variant=variant, config=cfg.index),
                              args.quick)
                record(m, n, k, mode, "aiter_lite", cfg.index, ms)
                del a, b, c

    out_path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"device": dev, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "torch": torch.__version__, "records": records}
    out_path.write_text(dump_json(doc))

    print(f"\nwrote {out_path}\n")
    print(markdown_tables(records))
    return 0


def dump_json(doc: dict) -> str:
    """JSON with one record per line (diffs of two runs stay readable)."""
    head = {k: v for k, v in doc.items() if k != "records"}
    lines = ["{"] + [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    lines += [' "records": [', ",\n".join("  " + json.dumps(r) for r in doc["records"]), " ]", "}"]
    return "\n".join(lines) + "\n"


def markdown_tables(records) -> str:
    lines = ["| M×N×K | dtype | cuBLAS TFLOP/s | aiter_lite TFLOP/s (cfg) | ratio |", "| --- | --- | --- | --- | --- |"]
    defaults = [r for r in records if r["config"] == -1]
    for r in defaults:
        if r["impl"] != "aiter_lite":
            continue
        peer = next(x for x in defaults if x["impl"] == "cublas" and x["dtype"] == r["dtype"]
                    and (x["M"], x["N"], x["K"]) == (r["M"], r["N"], r["K"]))
        lines.append(f"| {r['M']}×{r['N']}×{r['K']} | {r['dtype']} | {peer['tflops']:.1f} | "
                     f"{r['tflops']:.1f} ({r.get('config_resolved', -1)}) | {r['tflops'] / peer['tflops']:.2f} |")
    sweep = [r for r in records if r["config"] >= 0]
    if sweep:
        shapes = sorted({(r["M"], r["N"], r["K"]) for r in sweep}, key=lambda s: -s[0] * s[1] * s[2])
        lines += ["", "| config | dtype | " + " | ".join("×".join(map(str, s)) for s in shapes) + " |",
                  "| --- | --- |" + " --- |" * len(shapes)]
        for idx in sorted({r["config"] for r in sweep}):
            row = {(r["M"], r["N"], r["K"]): r for r in sweep if r["config"] == idx}
            dtype = next(iter(row.values()))["dtype"]
            cells = [f"{row[s]['tflops']:.1f}" if s in row else "-" for s in shapes]
            lines.append(f"| {idx} | {dtype} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
