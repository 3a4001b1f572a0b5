"""aiter_lite.matmul side by side with torch.matmul (cuBLAS), same random normal data, one run.

Times are medians of triton.testing.do_bench (CUDA events, L2 flushed before every call), both
writing into a preallocated out. fp32 is measured twice: strict (torch.backends.cuda.matmul
allow_tf32 off, aiter_lite allow_tf32=False: the SIMT kernel) and tf32 (both allowed). Then every
tile config of the table on a few shapes, for the planner-vs-measurement comparison.

    python bench/bench_matmul.py [--quick] [--out bench/results/matmul_<gpu>.json]
    python bench/bench_matmul.py --issue6 [--variants auto,wgmma,tensor_core] [--configs]
    python bench/bench_matmul.py --issue6 --configs --sweep-path wgmma_16 --sweep-shapes issue6 \
        --sweep-dtypes bf16,fp16 --sweep-rep-ms 30

--variants times each listed kernel variant for fp16/bf16 (default: auto, which is the wgmma kernel
on an H100 wherever the layout allows); fp32 and tf32 always run auto. --issue6 runs the Hopper
matmul issue's shape set (fp16 and bf16 on eight shapes, tf32 at 4096^3), skips the per-config
sweep unless --configs, and ends with the issue's targets: ratio to cuBLAS at 4096^3 and 8192^3,
and the geomean over 2048^3, 3000^3, 4096x11008x4096, 8192x1024x8192, 128x8192x8192, 16x4096x4096.
The per-config sweep takes every config of the table on CONFIG_SHAPES in its path's dtype; narrow
it with --sweep-path (one path), --sweep-shapes issue6 (the issue's eight shapes), --sweep-dtypes
(fp16/bf16 paths: which of the two) and --sweep-rep-ms (timing per config). With --issue6 and a
sweep, a table of the fastest config per shape against the default's pick (and the geomean target
if every shape had run its fastest config) comes before the targets.

Issue 21 modes (each prints its own table and exits; no JSON):
    python bench/bench_matmul.py --epilogue   # bias+gelu_tanh and bias+relu+residual vs torch.addmm + F.gelu and
                                              # torch._addmm_activation, and vs the plain matmul, on LLM shapes
    python bench/bench_matmul.py --backward   # forward+backward of a Linear-like layer vs torch
    python bench/bench_matmul.py --odd        # the odd/skinny shape set vs cuBLAS, skinny rows vs copy bandwidth
    python bench/bench_matmul.py --host       # host time per tiny call vs torch.matmul (no sync)

Writes {"device", "date", "torch", "records": [{"M", "N", "K", "dtype", "impl", "config", "us",
"tflops"}]} (impl "cublas" or "aiter_lite"; config -1 is the default; aiter_lite records also carry
"variant", and "kernel": the kernel and config the dispatch ran, e.g. "wgmma 13", with the config
alone in "config_resolved") and prints compact markdown tables last. About 4 minutes on an H100,
the first call's JIT build included.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import re
import statistics
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
PATH_MODE = {"simt": "fp32", "tensor_core_16": "fp16", "tensor_core_tf32": "tf32", "wgmma_16": "bf16",
             "wgmma_tf32": "tf32"}
PATH_VARIANT = {"simt": "tiled", "tensor_core_16": "tensor_core", "tensor_core_tf32": "tensor_core",
                "wgmma_16": "wgmma", "wgmma_tf32": "wgmma"}
# The Hopper matmul issue (6): targets against cuBLAS on an H100.
ISSUE6_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 2048), (3000, 3000, 3000),
                 (4096, 11008, 4096), (8192, 1024, 8192), (128, 8192, 8192), (16, 4096, 4096)]
ISSUE6_AT_LEAST_1 = [(4096, 4096, 4096), (8192, 8192, 8192)]   # bf16, fp16 >= 1.00x
ISSUE6_GEOMEAN = ISSUE6_SHAPES[2:]                               # geomean >= 0.95x
ISSUE6_TF32 = [(4096, 4096, 4096)]                               # tf32 >= 0.9x


def gpu_slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def set_torch_tf32(enabled: bool) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.backends.cuda.matmul.allow_tf32 = enabled


def bench_ms(fn, quick: bool, rep_ms: float = None) -> float:
    from triton.testing import do_bench

    if rep_ms is not None:
        return do_bench(fn, warmup=max(5.0, rep_ms / 4), rep=rep_ms, return_mode="median")
    return do_bench(fn, warmup=10 if quick else 25, rep=40 if quick else 100, return_mode="median")


def tflops(m: int, n: int, k: int, ms: float) -> float:
    return 2.0 * m * n * k / (ms * 1e-3) / 1e12


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer shapes and shorter timing")
    p.add_argument("--out", type=Path, default=None, help="JSON path (default bench/results/matmul_<gpu>.json)")
    p.add_argument("--no-configs", action="store_true", help="skip the per-config sweep")
    p.add_argument("--configs", action="store_true", help="with --issue6: run the per-config sweep too")
    p.add_argument("--issue6", action="store_true", help="the Hopper matmul issue's shapes and targets")
    p.add_argument("--variants", default="auto",
                   help="comma-separated aiter_lite variants timed for fp16/bf16 (default auto)")
    p.add_argument("--dtypes", default=None, help="comma-separated subset of fp16,bf16,fp32,tf32")
    p.add_argument("--sweep-path", default=None, help="per-config sweep: only this path's configs (e.g. wgmma_16)")
    p.add_argument("--sweep-shapes", choices=("default", "issue6"), default="default",
                   help="per-config sweep shapes: CONFIG_SHAPES, or the issue's eight")
    p.add_argument("--sweep-dtypes", default=None,
                   help="per-config sweep of the fp16/bf16 paths: comma-separated fp16,bf16 (default: bf16 for "
                        "wgmma_16, fp16 for tensor_core_16)")
    p.add_argument("--shapes", default=None,
                   help="comma-separated MxNxK list (e.g. 3000x3000x3000,3008x3008x3008): replaces the shapes "
                        "of the timing table and of the per-config sweep")
    p.add_argument("--rounds", type=int, default=1,
                   help="time cuBLAS and each variant in this many interleaved rounds and report the medians "
                        "(slow drifts of clocks and power then hit both sides alike)")
    p.add_argument("--sweep-rep-ms", type=float, default=None, help="per-config sweep: do_bench rep (ms)")
    p.add_argument("--epilogue", action="store_true", help="issue 21: fused epilogue vs cuBLAS + torch ops")
    p.add_argument("--backward", action="store_true", help="issue 21: forward + backward vs torch")
    p.add_argument("--odd", action="store_true", help="issue 21: odd and skinny shapes vs cuBLAS / copy bandwidth")
    p.add_argument("--host", action="store_true", help="issue 21: host time per tiny call vs torch.matmul")
    args = p.parse_args(argv)
    if args.epilogue or args.backward or args.odd or args.host:
        if not torch.cuda.is_available():
            print("bench_matmul: needs a CUDA GPU", file=sys.stderr)
            return 2
        return issue21(args)
    if args.rounds < 1:
        p.error(f"--rounds must be >= 1, got {args.rounds}")
    custom_shapes = None
    if args.shapes:
        try:
            custom_shapes = [tuple(int(v) for v in s.lower().split("x")) for s in args.shapes.split(",")]
        except ValueError:
            custom_shapes = []
        if not custom_shapes or any(len(s) != 3 or min(s) < 1 for s in custom_shapes):
            p.error(f"--shapes takes MxNxK,MxNxK,... with positive sizes, got {args.shapes!r}")

    if not torch.cuda.is_available():
        print("bench_matmul: needs a CUDA GPU", file=sys.stderr)
        return 2
    import aiter_lite
    from aiter_lite.ops.matmul import VARIANTS, matmul_plan
    from aiter_lite.testing import dtype_names
    from aiter_lite.tuning.matmul_configs import MATMUL_CONFIGS

    variants = args.variants.split(",")
    for v in variants:
        if v not in VARIANTS:
            p.error(f"unknown variant {v!r}; one of {sorted(VARIANTS)}")
    try:
        modes = (dtype_names(args.dtypes, allowed=MODES) if args.dtypes
                 else list(MODES if not args.issue6 else ("fp16", "bf16", "tf32")))
        sweep_dtypes = dtype_names(args.sweep_dtypes, allowed=("fp16", "bf16")) if args.sweep_dtypes else None
    except argparse.ArgumentTypeError as e:
        p.error(str(e))
    sm90 = torch.cuda.get_device_capability() == (9, 0)

    dev = torch.cuda.get_device_name()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    out_path = args.out or REPO / "bench" / "results" / f"matmul_{gpu_slug(dev)}.json"
    records = []
    gen = torch.Generator(device="cuda").manual_seed(0)

    def inputs(m, n, k, dtype):
        a = torch.randn(m, k, device="cuda", generator=gen, dtype=torch.float32).to(dtype)
        b = torch.randn(k, n, device="cuda", generator=gen, dtype=torch.float32).to(dtype)
        return a, b, torch.empty(m, n, device="cuda", dtype=dtype)

    def record(m, n, k, mode, impl, config, ms, variant=None, kernel=None):
        rec = {"M": m, "N": n, "K": k, "dtype": mode, "impl": impl, "config": config, "us": round(ms * 1e3, 2),
               "tflops": round(tflops(m, n, k, ms), 2)}
        if variant is not None:
            rec["variant"] = variant
        if kernel is not None:
            rec["kernel"] = kernel
            rec["config_resolved"] = int(kernel.split()[1])
        records.append(rec)
        what = impl if kernel is None else f"{variant}: {kernel}"
        print(f"  {m}x{n}x{k} {mode:4s} {what:24s} cfg {config:2d}: {rec['us']:10.1f} us "
              f"{rec['tflops']:7.1f} TFLOP/s", flush=True)

    print(f"device: {dev} ({sms} SMs), torch {torch.__version__}", flush=True)
    shapes = custom_shapes or (ISSUE6_SHAPES if args.issue6 else QUICK_SHAPES if args.quick else SHAPES)
    for mode in modes:
        dtype = MODES[mode]
        tf32 = mode == "tf32"
        set_torch_tf32(tf32)
        mode_variants = variants if dtype != torch.float32 else ["auto"]
        for m, n, k in (ISSUE6_TF32 if args.issue6 and tf32 else shapes):
            a, b, c = inputs(m, n, k, dtype)
            torch.matmul(a, b, out=c)  # cuBLAS's first call (handle, heuristics) stays out of the timing
            torch.cuda.synchronize()
            # (impl, variant, kernel, fn): cuBLAS first, then each variant; timed in interleaved rounds
            timed = [("cublas", None, None, lambda: torch.matmul(a, b, out=c))]
            for variant in mode_variants:
                if variant == "wgmma" and not sm90:
                    print(f"  {m}x{n}x{k} {mode:4s} wgmma: skipped (needs a compute capability 9.0 GPU)")
                    continue
                kernel = matmul_plan(a, b, c, allow_tf32=tf32, variant=variant)
                aiter_lite.matmul(a, b, c, allow_tf32=tf32, variant=variant)  # builds the module on the first call
                timed.append(("aiter_lite", variant, kernel,
                              lambda v=variant: aiter_lite.matmul(a, b, c, allow_tf32=tf32, variant=v)))
            per_round = [[] for _ in timed]
            for _ in range(args.rounds):
                for i, (_, _, _, fn) in enumerate(timed):
                    per_round[i].append(bench_ms(fn, args.quick))
            for (impl, variant, kernel, _), times in zip(timed, per_round):
                record(m, n, k, mode, impl, -1, statistics.median(times), variant, kernel)
                if args.rounds > 1:
                    records[-1]["round_us"] = [round(t * 1e3, 2) for t in times]
            if args.rounds > 1:
                base = per_round[0]
                for (impl, variant, kernel, _), times in list(zip(timed, per_round))[1:]:
                    ratios = sorted(bt / t for bt, t in zip(base, times))
                    print(f"  {m}x{n}x{k} {mode:4s} {variant}: ratio to cuBLAS per round "
                          f"{', '.join(f'{r:.3f}' for r in ratios)} (median {statistics.median(ratios):.3f})",
                          flush=True)
            del a, b, c
    set_torch_tf32(False)

    if not args.no_configs and (args.configs or not args.issue6):
        print("per-config sweep", flush=True)
        if args.sweep_path is not None and args.sweep_path not in PATH_MODE:
            p.error(f"unknown --sweep-path {args.sweep_path!r}; one of {sorted(PATH_MODE)}")
        if custom_shapes:
            sweep_shapes = custom_shapes
        elif args.sweep_shapes == "issue6":
            sweep_shapes = ISSUE6_SHAPES
        else:
            sweep_shapes = QUICK_CONFIG_SHAPES if args.quick else CONFIG_SHAPES
        cfgs = [c for c in MATMUL_CONFIGS if args.sweep_path in (None, c.path)
                and not (PATH_VARIANT[c.path] == "wgmma" and not sm90)]
        for m, n, k in sweep_shapes:
            # (mode, config) pairs; the inputs of a mode are made once per shape.
            jobs = {}
            for cfg in cfgs:
                cfg_modes = [PATH_MODE[cfg.path]]
                if sweep_dtypes and cfg.path in ("wgmma_16", "tensor_core_16"):
                    cfg_modes = sweep_dtypes
                for mode in cfg_modes:
                    jobs.setdefault(mode, []).append(cfg)
            for mode, mode_cfgs in jobs.items():
                tf32 = mode == "tf32"
                a, b, c = inputs(m, n, k, MODES[mode])
                for cfg in mode_cfgs:
                    variant = PATH_VARIANT[cfg.path]
                    kernel = matmul_plan(a, b, c, allow_tf32=tf32, variant=variant, config=cfg.index)
                    # One call first: the kernel's lazy load must not end up in do_bench's estimate.
                    aiter_lite.matmul(a, b, c, allow_tf32=tf32, variant=variant, config=cfg.index)
                    torch.cuda.synchronize()
                    ms = bench_ms(lambda: aiter_lite.matmul(a, b, c, allow_tf32=tf32, variant=variant,
                                                            config=cfg.index), args.quick, args.sweep_rep_ms)
                    record(m, n, k, mode, "aiter_lite", cfg.index, ms, variant, kernel)
                del a, b, c

    out_path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"device": dev, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "torch": torch.__version__, "records": records}
    out_path.write_text(dump_json(doc))

    print(f"\nwrote {out_path}\n")
    print(markdown_tables(records))
    if args.issue6 or custom_shapes:
        best = best_config_summary(records)
        if best:
            print("\n" + best)
    if args.issue6:
        print("\n" + issue6_summary(records))
    return 0


def dump_json(doc: dict) -> str:
    """JSON with one record per line (diffs of two runs stay readable)."""
    head = {k: v for k, v in doc.items() if k != "records"}
    lines = ["{"] + [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    lines += [' "records": [', ",\n".join("  " + json.dumps(r) for r in doc["records"]), " ]", "}"]
    return "\n".join(lines) + "\n"


def _peer(records, r):
    return next(x for x in records if x["impl"] == "cublas" and x["config"] == -1 and x["dtype"] == r["dtype"]
                and (x["M"], x["N"], x["K"]) == (r["M"], r["N"], r["K"]))


def markdown_tables(records) -> str:
    lines = ["| M×N×K | dtype | variant | cuBLAS TFLOP/s | aiter_lite TFLOP/s (kernel cfg) | ratio |",
             "| --- | --- | --- | --- | --- | --- |"]
    defaults = [r for r in records if r["config"] == -1]
    for r in defaults:
        if r["impl"] != "aiter_lite":
            continue
        peer = _peer(records, r)
        lines.append(f"| {r['M']}×{r['N']}×{r['K']} | {r['dtype']} | {r.get('variant', 'auto')} | {peer['tflops']:.1f} | "
                     f"{r['tflops']:.1f} ({r.get('kernel', r.get('config_resolved', -1))}) | "
                     f"{r['tflops'] / peer['tflops']:.2f} |")
    sweep = [r for r in records if r["config"] >= 0]
    if sweep:
        shapes = sorted({(r["M"], r["N"], r["K"]) for r in sweep}, key=lambda s: -s[0] * s[1] * s[2])
        lines += ["", "| config | dtype | " + " | ".join("×".join(map(str, s)) for s in shapes) + " |",
                  "| --- | --- |" + " --- |" * len(shapes)]
        for idx, dtype in sorted({(r["config"], r["dtype"]) for r in sweep}):
            row = {(r["M"], r["N"], r["K"]): r for r in sweep if r["config"] == idx and r["dtype"] == dtype}
            cells = [f"{row[s]['tflops']:.1f}" if s in row else "-" for s in shapes]
            lines.append(f"| {idx} | {dtype} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def best_config_summary(records) -> str:
    """Per (dtype, shape) of the sweep: the fastest config, the default's pick (variant auto) and its
    TFLOP/s, both as ratios to cuBLAS; then per dtype the issue's geomean if every shape had run its
    fastest config ("oracle") next to the default's. Empty without a sweep on the issue's shapes."""
    sweep = [r for r in records if r["impl"] == "aiter_lite" and r["config"] >= 0]
    auto = {(r["dtype"], (r["M"], r["N"], r["K"])): r for r in records
            if r["impl"] == "aiter_lite" and r["config"] == -1 and r.get("variant", "auto") == "auto"}
    keys = sorted({(r["dtype"], (r["M"], r["N"], r["K"])) for r in sweep if (r["M"], r["N"], r["K"]) in ISSUE6_SHAPES},
                  key=lambda x: (x[0], ISSUE6_SHAPES.index(x[1])))
    if not keys:
        return ""
    lines = ["| dtype | M×N×K | cuBLAS | fastest config (TFLOP/s, ratio) | default (cfg: TFLOP/s, ratio) |",
             "| --- | --- | --- | --- | --- |"]
    oracle, chosen = {}, {}
    for dtype, shape in keys:
        rows = [r for r in sweep if r["dtype"] == dtype and (r["M"], r["N"], r["K"]) == shape]
        top = max(rows, key=lambda r: r["tflops"])
        try:
            peer = _peer(records, top)["tflops"]
        except StopIteration:
            continue
        d = auto.get((dtype, shape))
        d_cell = "-" if d is None else f"{d.get('config_resolved', -1)}: {d['tflops']:.1f}, {d['tflops'] / peer:.3f}"
        lines.append(f"| {dtype} | {'×'.join(map(str, shape))} | {peer:.1f} | {top['config']} ({top['tflops']:.1f}, "
                     f"{top['tflops'] / peer:.3f}) | {d_cell} |")
        if shape in ISSUE6_GEOMEAN:
            oracle.setdefault(dtype, []).append(top["tflops"] / peer)
            if d is not None:
                chosen.setdefault(dtype, []).append(d["tflops"] / peer)
    for dtype in sorted(oracle):
        def geo(xs):
            return math.exp(sum(math.log(x) for x in xs) / len(xs)) if len(xs) == len(ISSUE6_GEOMEAN) else None
        o, c = geo(oracle[dtype]), geo(chosen.get(dtype, []))
        lines.append(f"| {dtype} | geomean of 6 | | oracle {'-' if o is None else f'{o:.3f}'} | "
                     f"default {'-' if c is None else f'{c:.3f}'} |")
    return "\n".join(lines)


def issue6_summary(records) -> str:
    """The issue's targets, per dtype and variant: ratio to cuBLAS (aiter_lite TFLOP/s / cuBLAS TFLOP/s)."""
    ratios = {}
    for r in records:
        if r["impl"] == "aiter_lite" and r["config"] == -1:
            ratios[(r["dtype"], r.get("variant", "auto"), (r["M"], r["N"], r["K"]))] = r["tflops"] / _peer(records, r)["tflops"]
    lines = ["| dtype | variant | target | measured | met |", "| --- | --- | --- | --- | --- |"]

    def row(dtype, variant, target, value, bound):
        ok = "yes" if value is not None and value >= bound else "no" if value is not None else "-"
        lines.append(f"| {dtype} | {variant} | {target} | {'-' if value is None else f'{value:.3f}'} | {ok} |")

    for dtype, variant in sorted({(d, v) for d, v, _ in ratios}):
        if dtype == "tf32":
            for s in ISSUE6_TF32:
                row(dtype, variant, f"{'x'.join(map(str, s))} >= 0.90", ratios.get((dtype, variant, s)), 0.90)
            continue
        for s in ISSUE6_AT_LEAST_1:
            row(dtype, variant, f"{'x'.join(map(str, s))} >= 1.00", ratios.get((dtype, variant, s)), 1.00)
        got = [ratios.get((dtype, variant, s)) for s in ISSUE6_GEOMEAN]
        geo = math.exp(sum(math.log(x) for x in got) / len(got)) if all(x is not None for x in got) else None
        row(dtype, variant, "geomean of 6 shapes >= 0.95", geo, 0.95)
    return "\n".join(lines)




# ---- issue 21: epilogues, backward, odd shapes, host time ----------------------------------------

LLM_SHAPES = [(4096, 11008, 4096), (4096, 4096, 4096), (4096, 4096, 11008), (1024, 14336, 4096),
              (8192, 4096, 4096), (2048, 32000, 4096)]
ODD_M = [1, 7, 16, 128, 1000, 4097, 8191]
ODD_NK = [(4095, 1025), (50257, 4096), (32001, 4096), (4096, 4095), (11008, 4096)]


def _geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def issue21(args) -> int:
    import torch.nn.functional as F

    import aiter_lite
    from aiter_lite.ops.matmul import matmul_plan

    quick = args.quick
    dev = torch.cuda.get_device_name()
    print(f"# {dev}, torch {torch.__version__}, {datetime.date.today()}")
    dtype = torch.bfloat16

    def randn(*shape, dt=dtype):
        return torch.randn(*shape, device="cuda", dtype=torch.float32).to(dt)

    if args.host:
        import time

        a, b, bias = randn(16, 16), randn(16, 16), randn(16)
        cases = [("torch.matmul", lambda: torch.matmul(a, b)), ("aiter_lite.matmul", lambda: aiter_lite.matmul(a, b)),
                 ("torch addmm+gelu", lambda: F.gelu(torch.addmm(bias, a, b), approximate="tanh")),
                 ("aiter_lite bias+gelu_tanh", lambda: aiter_lite.matmul(a, b, bias=bias, activation="gelu_tanh"))]
        rows = []
        for name, fn in cases:
            for _ in range(2000):
                fn()
            torch.cuda.synchronize()
            best = float("inf")
            for _ in range(7):
                t0 = time.perf_counter()
                for _ in range(2000):
                    fn()
                best = min(best, (time.perf_counter() - t0) / 2000 * 1e6)
                torch.cuda.synchronize()
            rows.append((name, best))
        print("\n| call (16x16x16 bf16, no sync) | host us per call (best of 7 x 2000) |\n|---|---|")
        for name, us in rows:
            print(f"| {name} | {us:.1f} |")

    if args.epilogue:
        shapes = LLM_SHAPES[:2] if quick else LLM_SHAPES
        print("\n| M x N x K (bf16) | plain us | ours bias+gelu_tanh us | addmm+F.gelu us | _addmm_activation(gelu) us "
              "| ours bias+relu+res us | vs addmm+gelu | vs _addmm_act | epilogue cost vs plain | kernel |\n"
              "|---|---|---|---|---|---|---|---|---|---|")
        for m, n, k in shapes:
            a, b, bias, res = randn(m, k), randn(k, n), randn(n), randn(m, n)
            out = torch.empty(m, n, device="cuda", dtype=dtype)
            plain = bench_ms(lambda: aiter_lite.matmul(a, b, out), quick)
            ours = bench_ms(lambda: aiter_lite.matmul(a, b, out, bias=bias, activation="gelu_tanh"), quick)
            ours_res = bench_ms(lambda: aiter_lite.matmul(a, b, out, bias=bias, activation="relu", residual=res),
                                quick)
            ref = bench_ms(lambda: F.gelu(torch.addmm(bias, a, b), approximate="tanh"), quick)
            ref_act = bench_ms(lambda: torch._addmm_activation(bias, a, b, use_gelu=True), quick)
            print(f"| {m}x{n}x{k} | {plain * 1e3:.1f} | {ours * 1e3:.1f} | {ref * 1e3:.1f} | {ref_act * 1e3:.1f} "
                  f"| {ours_res * 1e3:.1f} | {ref / ours:.2f}x | {ref_act / ours:.2f}x | {ours / plain - 1:+.1%} "
                  f"| {matmul_plan(a, b)} |")

    if args.backward:
        shapes = [(4096, 4096, 4096), (8192, 11008, 4096)][: 1 if quick else 2]
        print("\n| tokens x out x in (bf16) | ours fwd+bwd us | torch fwd+bwd us | ratio |\n|---|---|---|---|")
        for m, n, k in shapes:
            x, w, bias = randn(m, k), randn(n, k), randn(n)
            xs, ws, bs = (t.clone().requires_grad_(True) for t in (x, w, bias))
            g = randn(m, n)

            def ours_step():
                aiter_lite.matmul(xs, ws.t(), bias=bs, activation="gelu_tanh").backward(g)

            def torch_step():
                F.gelu(F.linear(xs, ws, bs), approximate="tanh").backward(g)

            t_ours, t_torch = bench_ms(ours_step, quick), bench_ms(torch_step, quick)
            print(f"| {m}x{n}x{k} | {t_ours * 1e3:.0f} | {t_torch * 1e3:.0f} | {t_torch / t_ours:.2f}x |")

    if args.odd:
        ratios = {"fp16": [], "bf16": []}
        print("\n| M x N x K | dtype | ours us | cuBLAS us | ratio | kernel |\n|---|---|---|---|---|---|")
        ms_list = ODD_M if not quick else [1, 16, 4097]
        for mode, dt in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
            for n, k in ODD_NK:
                for m in ms_list:
                    a, b = randn(m, k, dt=dt), randn(k, n, dt=dt)
                    out = torch.empty(m, n, device="cuda", dtype=dt)
                    ours = bench_ms(lambda: aiter_lite.matmul(a, b, out), True)
                    ref = bench_ms(lambda: torch.matmul(a, b, out=out), True)
                    ratios[mode].append(ref / ours)
                    print(f"| {m}x{n}x{k} | {mode} | {ours * 1e3:.1f} | {ref * 1e3:.1f} | {ref / ours:.2f} "
                          f"| {matmul_plan(a, b)} |")
        for mode, r in ratios.items():
            print(f"{mode}: geomean {_geomean(r):.3f}x cuBLAS, min {min(r):.2f}x, "
                  f"{sum(x >= 0.95 for x in r)}/{len(r)} at >= 0.95x")
        # Skinny rows: the bytes read (B dominates) over a device copy's bandwidth.
        big = torch.empty(1 << 28, device="cuda", dtype=torch.uint8)
        dst = torch.empty_like(big)
        copy_ms = bench_ms(lambda: dst.copy_(big), quick)
        copy_gbs = 2 * big.numel() / (copy_ms * 1e-3) / 1e9
        print(f"\ncopy bandwidth (read + write, 256 MiB): {copy_gbs:.0f} GB/s\n")
        print("| M x N x K | dtype | B | ours us | GB/s read | x copy bw | cuBLAS us | cuBLAS x copy bw | kernel |\n"
              "|---|---|---|---|---|---|---|---|---|")
        set_torch_tf32(True)
        skinny = [(1, 4096, 4096, "n"), (7, 4096, 4096, "n"), (16, 4096, 4096, "n"), (64, 8192, 8192, "n"),
                  (1, 4096, 4096, "t"), (16, 4096, 4096, "t"), (16, 8192, 8192, "n")]
        for mode, dt, tf32 in (("bf16", torch.bfloat16, False), ("fp16", torch.float16, False),
                               ("fp32", torch.float32, False), ("tf32", torch.float32, True)):
            for m, n, k, bl in skinny:  # B "n": b is [K, N]; "t": w.t() of an nn.Linear weight [N, K]
                a, b = randn(m, k, dt=dt), (randn(k, n, dt=dt) if bl == "n" else randn(n, k, dt=dt).t())
                out = torch.empty(m, n, device="cuda", dtype=dt)
                ours = bench_ms(lambda: aiter_lite.matmul(a, b, out, allow_tf32=tf32), quick)
                ref = bench_ms(lambda: torch.matmul(a, b, out=out), quick)
                nbytes = (a.numel() + b.numel() + out.numel()) * a.element_size()
                gbs = nbytes / (ours * 1e-3) / 1e9
                ref_gbs = nbytes / (ref * 1e-3) / 1e9
                print(f"| {m}x{n}x{k} | {mode} | {bl} | {ours * 1e3:.1f} | {gbs:.0f} | {gbs / copy_gbs:.2f} "
                      f"| {ref * 1e3:.1f} | {ref_gbs / copy_gbs:.2f} | {matmul_plan(a, b, allow_tf32=tf32)} |")
        set_torch_tf32(False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
