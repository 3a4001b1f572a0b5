"""aiter_lite.matmul side by side with torch.matmul (cuBLAS) on the same random normal data, one run.

Medians of do_bench (CUDA events, L2 flushed), both writing into a preallocated out. fp32 runs strict
(TF32 off on both sides: the SIMT kernel), tf32 with TF32 allowed on both.

    python bench/bench_matmul.py [--quick] [--dtypes ...] [--shapes MxNxK,...] [--variants ...] [--rounds N] [--out F]
    python bench/bench_matmul.py --epilogue --backward --odd --host --out-fp32    # issue 21: tables only, no JSON

--variants: the kernel variants timed for fp16/bf16 (fp32 and tf32 run auto). --rounds: cuBLAS and each
variant in interleaved rounds, medians (slow clock and power drifts hit both alike). Every config of the
table timed, and the Hopper issue's targets: bench/lab/matmul_configs.py. Issue 21:
--epilogue (bias+gelu_tanh, bias+relu+residual vs torch.addmm + F.gelu and torch._addmm_activation),
--backward (a Linear-like layer's forward+backward vs torch), --odd (odd and skinny shapes vs cuBLAS and
copy bandwidth), --host (host time per tiny call), --out-fp32 (fp32 outputs of fp16/bf16 inputs vs cuBLAS's).
JSON records: M, N, K, dtype, impl ("cublas" or "aiter_lite"), config (-1: the default), us, tflops;
aiter_lite's also variant, kernel (what the dispatch ran, e.g. "wgmma 13") and config_resolved.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import copy_tbps, host_us, need_cuda, set_torch_tf32  # noqa: E402
from records import geomean, md_table, parse_shapes, write_run  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

SHAPES = [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (3000, 3000, 3000),
          (4096, 11008, 4096), (8192, 1024, 8192), (128, 8192, 8192), (16, 4096, 4096)]
QUICK_SHAPES = [(1024, 1024, 1024), (4096, 4096, 4096), (128, 8192, 8192)]
MODES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "tf32": torch.float32}
# Issue 21's shapes.
LLM_SHAPES = [(4096, 11008, 4096), (4096, 4096, 4096), (4096, 4096, 11008), (1024, 14336, 4096),
              (8192, 4096, 4096), (2048, 32000, 4096)]
ODD_M = [1, 7, 16, 128, 1000, 4097, 8191]
ODD_NK = [(4095, 1025), (50257, 4096), (32001, 4096), (4096, 4095), (11008, 4096)]


def bench_ms(fn, quick: bool, rep_ms: float = None) -> float:
    from triton.testing import do_bench

    if rep_ms is not None:
        return do_bench(fn, warmup=max(5.0, rep_ms / 4), rep=rep_ms, return_mode="median")
    return do_bench(fn, warmup=10 if quick else 25, rep=40 if quick else 100, return_mode="median")


def tflops(m: int, n: int, k: int, ms: float) -> float:
    return 2.0 * m * n * k / (ms * 1e-3) / 1e12


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="fewer shapes and shorter timing")
    p.add_argument("--out", type=Path, help="the run's JSON")
    p.add_argument("--variants", default="auto", help="aiter_lite variants timed for fp16/bf16 (default auto)")
    p.add_argument("--dtypes", help="subset of fp16,bf16,fp32,tf32")
    p.add_argument("--shapes", help="MxNxK,...: replaces the shapes of the table")
    p.add_argument("--rounds", type=int, default=1, help="interleaved rounds of cuBLAS and each variant")
    for flag, what in (("epilogue", "fused epilogues vs cuBLAS + torch ops"), ("backward", "forward + backward vs "
                       "torch"), ("odd", "odd and skinny shapes"), ("host", "host time per tiny call"),
                       ("out-fp32", "fp32 output of 16-bit inputs vs torch.mm(out_dtype=float32)")):
        p.add_argument(f"--{flag}", action="store_true", help=f"issue 21: {what}")
    return p


def parse_args(argv=None, p=None):
    p = p or parser()
    args = p.parse_args(argv)
    from aiter_lite.ops.matmul import VARIANTS
    from aiter_lite.testing import dtype_names

    try:
        args.shape_list = parse_shapes(args.shapes) if args.shapes else None
        args.modes = dtype_names(args.dtypes, allowed=MODES) if args.dtypes else list(MODES)
    except (ValueError, argparse.ArgumentTypeError) as e:
        p.error(str(e))
    if args.rounds < 1:
        p.error(f"--rounds must be >= 1, got {args.rounds}")
    args.variant_list = args.variants.split(",")
    for v in args.variant_list:
        if v not in VARIANTS:
            p.error(f"unknown variant {v!r}; one of {sorted(VARIANTS)}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    need_cuda("bench_matmul")
    if args.epilogue or args.backward or args.odd or args.host or args.out_fp32:
        return issue21(args)
    shapes = args.shape_list or (QUICK_SHAPES if args.quick else SHAPES)
    records = run(args, lambda mode: shapes)
    write_run(args.out, torch.cuda.get_device_name(), torch.__version__, records)
    print("\n" + markdown_tables(records))
    return 0


def make_inputs(gen, m: int, n: int, k: int, dtype):
    a = torch.randn(m, k, device="cuda", generator=gen, dtype=torch.float32).to(dtype)
    b = torch.randn(k, n, device="cuda", generator=gen, dtype=torch.float32).to(dtype)
    return a, b, torch.empty(m, n, device="cuda", dtype=dtype)


def add_record(records, m, n, k, mode, impl, config, ms, variant=None, kernel=None) -> None:
    rec = {"M": m, "N": n, "K": k, "dtype": mode, "impl": impl, "config": config, "us": round(ms * 1e3, 2),
           "tflops": round(tflops(m, n, k, ms), 2)}
    if variant is not None:
        rec["variant"] = variant
    if kernel is not None:
        rec.update(kernel=kernel, config_resolved=int(kernel.split()[1]))
    records.append(rec)
    print(f"  {m}x{n}x{k} {mode:4s} {impl if kernel is None else f'{variant}: {kernel}':24s} cfg {config:2d}: "
          f"{rec['us']:10.1f} us {rec['tflops']:7.1f} TFLOP/s", flush=True)


def run(args, shapes_of_mode) -> list:
    """cuBLAS and each variant's default on shapes_of_mode(mode) for every mode; the records."""
    import aiter_lite
    from aiter_lite.ops.matmul import matmul_plan

    sm90 = torch.cuda.get_device_capability() == (9, 0)
    dev = torch.cuda.get_device_name()
    records = []
    gen = torch.Generator(device="cuda").manual_seed(0)
    print(f"device: {dev} ({torch.cuda.get_device_properties(0).multi_processor_count} SMs), torch "
          f"{torch.__version__}", flush=True)
    for mode in args.modes:
        tf32 = mode == "tf32"
        set_torch_tf32(tf32)
        for m, n, k in shapes_of_mode(mode):
            a, b, c = make_inputs(gen, m, n, k, MODES[mode])
            torch.matmul(a, b, out=c)  # cuBLAS's first call (handle, heuristics) stays out of the timing
            timed = [("cublas", None, None, lambda: torch.matmul(a, b, out=c))]
            for variant in args.variant_list if MODES[mode] != torch.float32 else ["auto"]:
                if variant == "wgmma" and not sm90:
                    print(f"  {m}x{n}x{k} {mode:4s} wgmma: skipped (needs a compute capability 9.0 GPU)")
                    continue
                kernel = matmul_plan(a, b, c, allow_tf32=tf32, variant=variant)
                aiter_lite.matmul(a, b, c, allow_tf32=tf32, variant=variant)  # builds the module on the first call
                timed.append(("aiter_lite", variant, kernel,
                              lambda v=variant: aiter_lite.matmul(a, b, c, allow_tf32=tf32, variant=v)))
            torch.cuda.synchronize()
            per_round = [[] for _ in timed]
            for _ in range(args.rounds):
                for i, (*_, fn) in enumerate(timed):
                    per_round[i].append(bench_ms(fn, args.quick))
            for (impl, variant, kernel, _), times in zip(timed, per_round):
                add_record(records, m, n, k, mode, impl, -1, statistics.median(times), variant, kernel)
                if args.rounds > 1:
                    records[-1]["round_us"] = [round(t * 1e3, 2) for t in times]
                    ratios = sorted(bt / t for bt, t in zip(per_round[0], times))
                    if impl != "cublas":
                        print(f"  {m}x{n}x{k} {mode:4s} {variant}: ratio to cuBLAS per round "
                              f"{', '.join(f'{r:.3f}' for r in ratios)} (median {statistics.median(ratios):.3f})")
            del a, b, c
    set_torch_tf32(False)

    return records


def shape_of(r) -> tuple:
    return r["M"], r["N"], r["K"]


def cublas_of(records, r) -> dict:
    return next(x for x in records if x["impl"] == "cublas" and x["config"] == -1 and x["dtype"] == r["dtype"]
                and shape_of(x) == shape_of(r))


def markdown_tables(records) -> str:
    rows = []
    for r in records:
        if r["impl"] == "aiter_lite" and r["config"] == -1:
            peer = cublas_of(records, r)["tflops"]
            rows.append(["×".join(map(str, shape_of(r))), r["dtype"], r.get("variant", "auto"), f"{peer:.1f}",
                         f"{r['tflops']:.1f} ({r.get('kernel', r.get('config_resolved', -1))})",
                         f"{r['tflops'] / peer:.2f}"])
    return md_table(["M×N×K", "dtype", "variant", "cuBLAS TFLOP/s", "aiter_lite TFLOP/s (kernel cfg)", "ratio"], rows)


def issue21(args) -> int:
    """Issue 21's tables (bf16 unless said): epilogues, backward, odd and skinny shapes, host time."""
    import datetime

    import aiter_lite
    from aiter_lite.ops.matmul import matmul_plan

    quick, dtype = args.quick, torch.bfloat16
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, {datetime.date.today()}")

    def randn(*shape, dt=dtype):
        return torch.randn(*shape, device="cuda", dtype=torch.float32).to(dt)

    if args.host:
        a, b, bias = randn(16, 16), randn(16, 16), randn(16)
        cases = [("torch.matmul", lambda: torch.matmul(a, b)), ("aiter_lite.matmul", lambda: aiter_lite.matmul(a, b)),
                 ("torch addmm+gelu", lambda: F.gelu(torch.addmm(bias, a, b), approximate="tanh")),
                 ("aiter_lite bias+gelu_tanh", lambda: aiter_lite.matmul(a, b, bias=bias, activation="gelu_tanh"))]
        print("\n" + md_table(["call (16x16x16 bf16, no sync)", "host us per call (best of 7 x 2000)"],
                              [[name, f"{host_us(fn, 2000, 7, sync=False):.1f}"] for name, fn in cases]))
    if args.epilogue:
        rows = []
        for m, n, k in LLM_SHAPES[:2] if quick else LLM_SHAPES:
            a, b, bias, res = randn(m, k), randn(k, n), randn(n), randn(m, n)
            out = torch.empty(m, n, device="cuda", dtype=dtype)
            plain, ours, ours_res, ref, ref_act = (bench_ms(fn, quick) for fn in (
                lambda: aiter_lite.matmul(a, b, out),
                lambda: aiter_lite.matmul(a, b, out, bias=bias, activation="gelu_tanh"),
                lambda: aiter_lite.matmul(a, b, out, bias=bias, activation="relu", residual=res),
                lambda: F.gelu(torch.addmm(bias, a, b), approximate="tanh"),
                lambda: torch._addmm_activation(bias, a, b, use_gelu=True)))
            rows.append([f"{m}x{n}x{k}", *(f"{t * 1e3:.1f}" for t in (plain, ours, ref, ref_act, ours_res)),
                         f"{ref / ours:.2f}x", f"{ref_act / ours:.2f}x", f"{ours / plain - 1:+.1%}",
                         f"{ours_res / plain - 1:+.1%}", matmul_plan(a, b),
                         matmul_plan(a, b, bias=bias, activation="gelu_tanh")])
        print("\n" + md_table(["M x N x K (bf16)", "plain us", "ours bias+gelu_tanh us", "addmm+F.gelu us",
                               "_addmm_activation(gelu) us", "ours bias+relu+res us", "vs addmm+gelu", "vs _addmm_act",
                               "gelu epilogue cost vs plain", "relu+res cost vs plain", "kernel plain",
                               "kernel epilogue"], rows))
    if args.out_fp32:
        rows = []
        shapes = LLM_SHAPES[:2] if quick else LLM_SHAPES
        for mode in ("bf16", "fp16"):
            for m, n, k in shapes + [(16, 4096, 4096), (16, 11008, 4096)]:
                a, b, bias = randn(m, k, dt=MODES[mode]), randn(k, n, dt=MODES[mode]), randn(n)
                out16 = torch.empty(m, n, device="cuda", dtype=MODES[mode])
                out32 = torch.empty(m, n, device="cuda", dtype=torch.float32)
                try:  # cuBLAS with an fp32 output (aten::mm.dtype), else the product rounded then widened
                    torch.mm(a, b, out_dtype=torch.float32)
                    ref_name, ref_fn = "torch.mm(out_dtype=fp32)", lambda: torch.mm(a, b, out_dtype=torch.float32)
                except (RuntimeError, TypeError):
                    ref_name, ref_fn = "torch.mm().float()", lambda: torch.mm(a, b).float()
                plain, f32, f32_epi, ref = (bench_ms(fn, quick) for fn in (
                    lambda: aiter_lite.matmul(a, b, out16),
                    lambda: aiter_lite.matmul(a, b, out32, out_dtype=torch.float32),
                    lambda: aiter_lite.matmul(a, b, out32, out_dtype=torch.float32, bias=bias, activation="gelu_tanh"),
                    ref_fn))
                rows.append([f"{m}x{n}x{k}", mode, *(f"{t * 1e3:.1f}" for t in (plain, f32, f32_epi, ref)), ref_name,
                             f"{ref / f32:.2f}x", f"{f32 / plain - 1:+.1%}",
                             matmul_plan(a, b, out32, out_dtype=torch.float32)])
        print("\n" + md_table(["M x N x K", "inputs", "ours 16-bit out us", "ours fp32 out us",
                               "ours fp32 out + bias+gelu_tanh us", "cuBLAS fp32 out us", "cuBLAS call",
                               "cuBLAS / ours fp32", "fp32 out vs 16-bit out", "kernel fp32 out"], rows))
    if args.backward:
        rows = []
        for m, n, k in [(4096, 4096, 4096), (8192, 11008, 4096)][: 1 if quick else 2]:
            xs, ws, bs = (randn(*s).requires_grad_(True) for s in ((m, k), (n, k), (n,)))
            g = randn(m, n)
            t_ours = bench_ms(lambda: aiter_lite.matmul(xs, ws.t(), bias=bs, activation="gelu_tanh").backward(g), quick)
            t_torch = bench_ms(lambda: F.gelu(F.linear(xs, ws, bs), approximate="tanh").backward(g), quick)
            rows.append([f"{m}x{n}x{k}", f"{t_ours * 1e3:.0f}", f"{t_torch * 1e3:.0f}", f"{t_torch / t_ours:.2f}x"])
        print("\n" + md_table(["tokens x out x in (bf16)", "ours fwd+bwd us", "torch fwd+bwd us", "ratio"], rows))
    if args.odd:
        rows, ratios = [], {"fp16": [], "bf16": []}
        for mode in ratios:
            for (n, k), m in ((nk, m) for nk in ODD_NK for m in ([1, 16, 4097] if quick else ODD_M)):
                a, b = randn(m, k, dt=MODES[mode]), randn(k, n, dt=MODES[mode])
                out = torch.empty(m, n, device="cuda", dtype=MODES[mode])
                ours = bench_ms(lambda: aiter_lite.matmul(a, b, out), True)
                ref = bench_ms(lambda: torch.matmul(a, b, out=out), True)
                ratios[mode].append(ref / ours)
                rows.append([f"{m}x{n}x{k}", mode, f"{ours * 1e3:.1f}", f"{ref * 1e3:.1f}", f"{ref / ours:.2f}",
                             matmul_plan(a, b)])
        print("\n" + md_table(["M x N x K", "dtype", "ours us", "cuBLAS us", "ratio", "kernel"], rows))
        for mode, r in ratios.items():
            print(f"{mode}: geomean {geomean(r):.3f}x cuBLAS, min {min(r):.2f}x, {sum(x >= 0.95 for x in r)}/{len(r)} "
                  f"at >= 0.95x")
        # Skinny rows: the bytes read (B dominates) over a device copy's bandwidth.
        copy_gbs = copy_tbps(lambda fn: bench_ms(fn, quick) * 1e3, 1 << 28) * 1e3
        print(f"\ncopy bandwidth (read + write, 256 MiB): {copy_gbs:.0f} GB/s")
        rows = []
        set_torch_tf32(True)
        skinny = [(1, 4096, 4096, "n"), (7, 4096, 4096, "n"), (16, 4096, 4096, "n"), (64, 8192, 8192, "n"),
                  (1, 4096, 4096, "t"), (16, 4096, 4096, "t"), (16, 8192, 8192, "n")]
        for mode, tf32 in (("bf16", False), ("fp16", False), ("fp32", False), ("tf32", True)):
            for m, n, k, bl in skinny:  # B "n": b is [K, N]; "t": w.t() of an nn.Linear weight [N, K]
                dt = MODES[mode]
                a, b = randn(m, k, dt=dt), (randn(k, n, dt=dt) if bl == "n" else randn(n, k, dt=dt).t())
                out = torch.empty(m, n, device="cuda", dtype=dt)
                ours = bench_ms(lambda: aiter_lite.matmul(a, b, out, allow_tf32=tf32), quick)
                ref = bench_ms(lambda: torch.matmul(a, b, out=out), quick)
                gbs, ref_gbs = ((a.numel() + b.numel() + out.numel()) * a.element_size() / (t * 1e-3) / 1e9
                                for t in (ours, ref))
                rows.append([f"{m}x{n}x{k}", mode, bl, f"{ours * 1e3:.1f}", f"{gbs:.0f}", f"{gbs / copy_gbs:.2f}",
                             f"{ref * 1e3:.1f}", f"{ref_gbs / copy_gbs:.2f}", matmul_plan(a, b, allow_tf32=tf32)])
        set_torch_tf32(False)
        print(md_table(["M x N x K", "dtype", "B", "ours us", "GB/s read", "x copy bw", "cuBLAS us",
                        "cuBLAS x copy bw", "kernel"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
