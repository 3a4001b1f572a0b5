"""Every config of the matmul table against cuBLAS (which one is fastest per shape, against the default's
pick), and the Hopper matmul issue's targets (issue 6, closed; docs/matmul.md, the issue-6 sections).

    bench/gpu.sh lab/matmul_configs.py --issue6 [--variants auto,wgmma,tensor_core] [--rounds 3]
    bench/gpu.sh lab/matmul_configs.py --issue6 --configs --sweep-path wgmma_16 --sweep-shapes issue6 \\
        --sweep-dtypes bf16,fp16 --sweep-rep-ms 30
    bench/gpu.sh lab/matmul_configs.py --configs --shapes 4096x4096x4096 --dtypes fp16 --sweep-path tensor_core_16

First bench_matmul.run's table (its options; --issue6: fp16 and bf16 on the issue's eight shapes, tf32 at
4096^3), then with --configs every config of the table (narrowed by the --sweep-* options) on --shapes, or
CONFIG_SHAPES, or the issue's shapes with --sweep-shapes issue6, in its path's dtype. Printed last: the
config grid, the fastest config per shape (with --issue6 or --shapes) and the issue's targets (--issue6):
>= 1.00x cuBLAS at 4096^3 and 8192^3, a geomean >= 0.95x over the other six, tf32 >= 0.90x at 4096^3.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import bench_matmul as bm  # noqa: E402
from records import geomean, md_table, write_run  # noqa: E402

torch = bm.torch
CONFIG_SHAPES = [(4096, 4096, 4096), (2048, 2048, 2048), (8192, 1024, 8192), (128, 8192, 8192)]
PATH_MODE = {"simt": "fp32", "tensor_core_16": "fp16", "tensor_core_tf32": "tf32", "wgmma_16": "bf16",
             "wgmma_tf32": "tf32"}
PATH_VARIANT = {"simt": "tiled", "tensor_core_16": "tensor_core", "tensor_core_tf32": "tensor_core",
                "wgmma_16": "wgmma", "wgmma_tf32": "wgmma"}
ISSUE6_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 2048), (3000, 3000, 3000),
                 (4096, 11008, 4096), (8192, 1024, 8192), (128, 8192, 8192), (16, 4096, 4096)]
ISSUE6_AT_LEAST_1 = ISSUE6_SHAPES[:2]  # bf16, fp16 >= 1.00x
ISSUE6_GEOMEAN = ISSUE6_SHAPES[2:]     # geomean >= 0.95x
ISSUE6_TF32 = [(4096, 4096, 4096)]     # tf32 >= 0.9x


def main(argv=None) -> int:
    p = bm.parser()
    p.description = __doc__
    p.add_argument("--issue6", action="store_true", help="the Hopper matmul issue's shapes and targets")
    p.add_argument("--configs", action="store_true", help="time every config of the table too")
    p.add_argument("--sweep-path", choices=sorted(PATH_MODE), help="per-config sweep: only this path's configs")
    p.add_argument("--sweep-shapes", choices=("default", "issue6"), default="default", help="per-config sweep shapes")
    p.add_argument("--sweep-dtypes", help="per-config sweep of the 16-bit paths: fp16,bf16 (default: the path's)")
    p.add_argument("--sweep-rep-ms", type=float, help="per-config sweep: do_bench rep (ms)")
    args = bm.parse_args(argv, p)
    if args.issue6 and not args.dtypes:
        args.modes = ["fp16", "bf16", "tf32"]
    from aiter_lite.testing import dtype_names

    sweep_dtypes = dtype_names(args.sweep_dtypes, allowed=("fp16", "bf16")) if args.sweep_dtypes else None
    bm.need_cuda("matmul_configs")
    shapes = args.shape_list or (ISSUE6_SHAPES if args.issue6 else bm.QUICK_SHAPES if args.quick else bm.SHAPES)
    records = bm.run(args, lambda mode: ISSUE6_TF32 if args.issue6 and mode == "tf32" else shapes)
    if args.configs:
        sweep(args, args.shape_list or (ISSUE6_SHAPES if args.sweep_shapes == "issue6" else CONFIG_SHAPES),
              sweep_dtypes, records)
    write_run(args.out, torch.cuda.get_device_name(), torch.__version__, records)
    print("\n" + bm.markdown_tables(records) + "\n\n" + config_grid(records))
    best = best_config_summary(records) if args.issue6 or args.shape_list else ""
    print("\n" + best if best else "")
    if args.issue6:
        print("\n" + issue6_summary(records))
    return 0


def sweep(args, shapes, sweep_dtypes, records) -> None:
    """Every config of the table (of --sweep-path) on shapes, in its path's dtype or sweep_dtypes."""
    import aiter_lite
    from aiter_lite.ops.matmul import matmul_plan
    from aiter_lite.tuning.matmul_configs import MATMUL_CONFIGS

    sm90 = torch.cuda.get_device_capability() == (9, 0)
    gen = torch.Generator(device="cuda").manual_seed(1)
    print("per-config sweep", flush=True)
    cfgs = [c for c in MATMUL_CONFIGS if args.sweep_path in (None, c.path)
            and not (PATH_VARIANT[c.path] == "wgmma" and not sm90)]
    for m, n, k in shapes:
        jobs = {}  # mode -> configs; a mode's inputs are made once per shape
        for cfg in cfgs:
            wide = sweep_dtypes and cfg.path in ("wgmma_16", "tensor_core_16")
            for mode in sweep_dtypes if wide else [PATH_MODE[cfg.path]]:
                jobs.setdefault(mode, []).append(cfg)
        for mode, mode_cfgs in jobs.items():
            a, b, c = bm.make_inputs(gen, m, n, k, bm.MODES[mode])
            for cfg in mode_cfgs:
                kw = dict(allow_tf32=mode == "tf32", variant=PATH_VARIANT[cfg.path], config=cfg.index)
                kernel = matmul_plan(a, b, c, **kw)
                aiter_lite.matmul(a, b, c, **kw)  # the kernel's lazy load stays out of do_bench's estimate
                torch.cuda.synchronize()
                ms = bm.bench_ms(lambda: aiter_lite.matmul(a, b, c, **kw), args.quick, args.sweep_rep_ms)
                bm.add_record(records, m, n, k, mode, "aiter_lite", cfg.index, ms, kw["variant"], kernel)
            del a, b, c


def config_grid(records) -> str:
    """TFLOP/s of every config timed (rows) on every shape (columns)."""
    swept = [r for r in records if r["config"] >= 0]
    if not swept:
        return ""
    shapes = sorted({bm.shape_of(r) for r in swept}, key=lambda s: -s[0] * s[1] * s[2])
    cells = {(r["config"], r["dtype"], bm.shape_of(r)): f"{r['tflops']:.1f}" for r in swept}
    rows = [[i, dt, *(cells.get((i, dt, s), "-") for s in shapes)]
            for i, dt in sorted({(r["config"], r["dtype"]) for r in swept})]
    return md_table(["config", "dtype", *("×".join(map(str, s)) for s in shapes)], rows)


def best_config_summary(records) -> str:
    """Per (dtype, shape) of the issue's shapes in the sweep: the fastest config and the default's pick
    (variant auto), as ratios to cuBLAS; then per dtype the geomean target if every shape had run its
    fastest config ("oracle") beside the default's."""
    sweep = [r for r in records if r["impl"] == "aiter_lite" and r["config"] >= 0]
    auto = {(r["dtype"], bm.shape_of(r)): r for r in records
            if r["impl"] == "aiter_lite" and r["config"] == -1 and r.get("variant", "auto") == "auto"}
    keys = sorted({(r["dtype"], bm.shape_of(r)) for r in sweep if bm.shape_of(r) in ISSUE6_SHAPES},
                  key=lambda x: (x[0], ISSUE6_SHAPES.index(x[1])))
    rows, oracle, chosen = [], {}, {}
    for dtype, shape in keys:
        top = max((r for r in sweep if (r["dtype"], bm.shape_of(r)) == (dtype, shape)), key=lambda r: r["tflops"])
        try:
            peer = bm.cublas_of(records, top)["tflops"]
        except StopIteration:
            continue
        d = auto.get((dtype, shape))
        rows.append([dtype, "×".join(map(str, shape)), f"{peer:.1f}", f"{top['config']} ({top['tflops']:.1f}, "
                     f"{top['tflops'] / peer:.3f})", "-" if d is None else
                     f"{d.get('config_resolved', -1)}: {d['tflops']:.1f}, {d['tflops'] / peer:.3f}"])
        if shape in ISSUE6_GEOMEAN:
            oracle.setdefault(dtype, []).append(top["tflops"] / peer)
            chosen.setdefault(dtype, []).extend([] if d is None else [d["tflops"] / peer])
    for dtype in sorted(oracle):
        o, c = (f"{geomean(xs):.3f}" if len(xs) == len(ISSUE6_GEOMEAN) else "-" for xs in (oracle[dtype],
                                                                                           chosen[dtype]))
        rows.append([dtype, "geomean of 6", "", f"oracle {o}", f"default {c}"])
    return md_table(["dtype", "M×N×K", "cuBLAS", "fastest config (TFLOP/s, ratio)", "default (cfg: TFLOP/s, ratio)"],
                    rows) if rows else ""


def issue6_summary(records) -> str:
    """The issue's targets, per dtype and variant: ratio to cuBLAS (aiter_lite TFLOP/s / cuBLAS TFLOP/s)."""
    ratios = {(r["dtype"], r.get("variant", "auto"), bm.shape_of(r)): r["tflops"] / bm.cublas_of(records, r)["tflops"]
              for r in records if r["impl"] == "aiter_lite" and r["config"] == -1}
    rows = []

    def row(dtype, variant, target, value, bound):
        met = "-" if value is None else "yes" if value >= bound else "no"
        rows.append([dtype, variant, target, "-" if value is None else f"{value:.3f}", met])

    for dtype, variant in sorted({(d, v) for d, v, _ in ratios}):
        if dtype == "tf32":
            for s in ISSUE6_TF32:
                row(dtype, variant, f"{'x'.join(map(str, s))} >= 0.90", ratios.get((dtype, variant, s)), 0.90)
            continue
        for s in ISSUE6_AT_LEAST_1:
            row(dtype, variant, f"{'x'.join(map(str, s))} >= 1.00", ratios.get((dtype, variant, s)), 1.00)
        got = [ratios.get((dtype, variant, s)) for s in ISSUE6_GEOMEAN]
        row(dtype, variant, "geomean of 6 shapes >= 0.95", geomean(got) if None not in got else None, 0.95)
    return md_table(["dtype", "variant", "target", "measured", "met"], rows)


if __name__ == "__main__":
    sys.exit(main())
